// A per-instance cache of list pages as the JSON bytes they were sent as (GET /v1/events, /v1/keys, /v1/locks,
// /v1/people):
// clients poll these lists far more often than their rows change, and a page served from memory costs no
// query, no row parsing and no serialization. A page is kept per account and dropped when a NOTIFY says
// rows of that account changed (from any instance, job or script: the notifications come from triggers or
// from the writers' transactions), when the LISTEN connection was lost and is back, and after a short TTL
// (the net for a notification missed any other way). Memory is bounded by bytes, not entries.
//
// A page is found by a key derived from the route's query schema (pageKey): every property the route
// declares is in the key by construction, so a filter added to a list later cannot be left out of it and
// serve another query's page; the caller's scope (account and location) is in it too.
import type { Static, TObject } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { LRUCache } from 'lru-cache';
import { ACCESS_LOG_CHANGED_CHANNEL, KEYS_CHANGED_CHANNEL, PEOPLE_CHANGED_CHANNEL, type Channel } from './channels.ts';
import type { Database } from './db/index.ts';
import { ReadsAfterRequest } from './reads-after-request.ts';

export interface PageCacheOptions<Q extends TObject = TObject> {
  /** The querystring schema of the route whose pages these are (the one its `schema.querystring` declares). */
  query: Q;
  /** The most bytes of pages kept. */
  maxBytes: number;
  ttlMs: number;
  /** False (PAGE_CACHE_ENABLED=false): no page is kept, and a request shares only a read that begins after it (freshReads). */
  enabled?: boolean;
  /**
   * Whether any write request of an account may change its pages (PageCaches.install drops them before the answer
   * leaves; true by default). False for a list that only a writer telling the cache itself (appendingHere) changes,
   * and otherwise only notifications: the access log, which nothing but AccessLogWriter writes.
   */
  changedByWriteRequests?: boolean;
}

/** The channels migration 014's triggers notify with the accounts whose rows changed. */
export const ROWS_CHANGED = { accessLog: ACCESS_LOG_CHANGED_CHANNEL, people: PEOPLE_CHANGED_CHANNEL, keys: KEYS_CHANGED_CHANNEL } as const;

/**
 * What a NOTIFY of a followed channel says: the accounts changed, rows appended to an append-only list (the
 * access log) with the least id each account got, or `all` (an empty or unreadable payload).
 */
export type Changed = { accounts: number[] } | { appended: Appended[] } | 'all';

/** Rows appended to an account's append-only list, the least new id first among them. */
export interface Appended {
  accountId: number;
  fromId: number;
}

/**
 * A payload of comma-separated account ids, or of `account:least id` pairs (rows appended: migration 019);
 * anything else (empty: the LISTEN connection came back) means all.
 */
export function parseChanged(payload: string): Changed {
  if (/^\d+:\d+(,\d+:\d+)*$/.test(payload)) {
    return {
      appended: payload.split(',').map((pair) => {
        const [accountId, fromId] = pair.split(':').map(Number) as [number, number];
        return { accountId, fromId };
      }),
    };
  }
  if (!/^\d+(,\d+)*$/.test(payload)) return 'all';
  return { accounts: payload.split(',').map(Number) };
}

/** One follow of a PageCache: a channel, and how to read its payload (account ids by default). */
export interface Followed {
  channel: Channel;
  parse?: (payload: string) => Changed;
}

/** Whose page it is: the rows a list shows depend on the caller's account and location, nothing else of the key. */
export interface PageScope {
  accountId: number;
  locationId: number;
}

/**
 * The canonical key of a page: the scope, then every property of the route's query schema in sorted
 * order with the value the validated query gives it (those left out of the request are skipped). Derived
 * from the schema, not listed by hand: a filter the route declares is in the key the day it is added.
 * Anything in the query the schema does not declare is no filter (the handler cannot read it) and is left
 * out, so `?utm=x` shares the page of the same query without it.
 */
export function pageKey<Q extends TObject>(schema: Q, scope: PageScope, query: Static<Q>): string {
  const values = query as Record<string, unknown>;
  const fields = Object.keys(schema.properties)
    .sort()
    .filter((name) => values[name] !== undefined)
    .map((name) => [name, values[name]]);
  return JSON.stringify([scope.accountId, scope.locationId, fields]);
}

/**
 * A page as produced: its JSON and, for a list that only grows at its end (ordered by an id drawn at insert),
 * the highest id a new row could have and still belong on it: the page's last id when it is full (rows with
 * higher ids go on later pages), none (undefined) when it is the end of the list, which any new row may join.
 * A page of another list leaves `lastId` out: then every append drops it, like any change.
 */
export interface ProducedPage<T = unknown> {
  json: string;
  lastId?: number;
  /** For the end of a list: what `appendingHere`'s grow needs to add this instance's new rows to it. */
  tail?: T;
}

interface Kept<T> {
  body: Buffer;
  account: number;
  /** Appends of ids above this cannot change the page (Infinity: any append does). */
  lastId: number;
  tail?: T;
}

/** What an end-of-list page becomes with rows this instance appended: a page, itself as it was, or dropped. */
export type Grown<T> = ProducedPage<T> | 'unchanged' | 'drop';

interface Fill {
  account: number;
  body: Promise<Buffer>;
}

/** Appends remembered per account, for fills that span them (a fill takes milliseconds; this is plenty). */
const APPENDS_REMEMBERED = 64;
/** This instance's appends whose notification has not come back yet (it comes a moment after the commit). */
const OWN_APPENDS_REMEMBERED = 1024;

export class PageCache<Q extends TObject = TObject, T = unknown> {
  // Bytes, not strings: a string would be encoded to UTF-8 again on every send.
  private readonly pages: LRUCache<string, Kept<T>>;
  /** The keys kept per account, so that an append finds the pages it may change without a scan. */
  private readonly keysOf = new Map<number, Set<string>>();
  /** Bumped per account by its changes: a page stored under an older generation is never read again. */
  private readonly generations = new Map<number, number>();
  /** Bumped by a change of every account. */
  private epoch = 0;
  /** Per account: how many appends were heard, and the least new id of the last ones (newest last). */
  private readonly appends = new Map<number, { count: number; recent: Array<{ n: number; fromId: number }> }>();
  /** `account:least id` of appends this instance made and applied (appendingHere): their notification changes nothing more. */
  private readonly ownAppends = new Set<string>();
  /** Accounts this instance is appending to, and the appends notified for them meanwhile (least ids). */
  private readonly inFlight = new Map<number, { count: number; held: number[] }>();
  /**
   * Pages being read, by key: a request for the same page meanwhile waits for that read instead of making
   * its own (50 clients polling one list cost one query after a change, not 50). A change of the account
   * removes its fills from here, so a request after a change never joins a read that may predate it.
   */
  private readonly filling = new Map<string, Fill>();
  /**
   * Switched off (PAGE_CACHE_ENABLED=false), a page is never answered from a read begun before its request, and 50
   * clients polling one page cost at most one read at a time, not 50 (reads-after-request.ts). The requests sharing
   * a read ask for the same page: the first one's produce reads it.
   */
  private readonly freshReads = new ReadsAfterRequest<string, () => Promise<string | ProducedPage<T>>, Buffer>(async (_key, produces) =>
    Buffer.from(jsonOf(await (produces[0] as () => Promise<string | ProducedPage<T>>)())),
  );
  private readonly enabled: boolean;
  private readonly query: Q;
  /** See PageCacheOptions. */
  readonly changedByWriteRequests: boolean;

  constructor(options: PageCacheOptions<Q>) {
    this.enabled = options.enabled ?? true;
    this.query = options.query;
    this.changedByWriteRequests = options.changedByWriteRequests ?? true;
    this.pages = new LRUCache<string, Kept<T>>({
      maxSize: options.maxBytes,
      // A page that can grow holds its rows' text once more (about its body's size).
      sizeCalculation: (kept, key) => kept.body.length * (kept.tail === undefined ? 1 : 2) + key.length,
      ttl: options.ttlMs,
      ttlAutopurge: false,
      dispose: (kept, key) => this.keysOf.get(kept.account)?.delete(key),
    });
  }

  /** Drops an account's pages on every notification of the channels naming it (or naming none: all). */
  async follow(db: Database, channels: Followed[]): Promise<void> {
    for (const { channel, parse = parseChanged } of channels) await db.listen(channel, (payload) => this.changed(parse(payload)));
  }

  changed(what: Changed): void {
    if (what === 'all') {
      this.epoch++;
      this.pages.clear();
      this.filling.clear();
      return;
    }
    if ('appended' in what) {
      for (const append of what.appended) this.appended(append);
      return;
    }
    for (const account of what.accounts) {
      this.generations.set(account, (this.generations.get(account) ?? 0) + 1);
      this.stopJoining(account);
    }
  }

  /**
   * Rows appended to an account's list from `fromId` up: only its pages that such a row may join are
   * dropped, those ending at or after `fromId` and the end of the list. A full page below it is final (or
   * changes by a deletion, which comes as a change of the account).
   */
  private appended({ accountId, fromId }: Appended): void {
    if (this.ownAppends.delete(`${accountId}:${fromId}`)) return; // applied when this instance appended
    const flight = this.inFlight.get(accountId);
    if (flight) {
      // Perhaps this instance's own insert, whose answer has not come back yet (the notification can come first):
      // its full pages go now, its ends of the list once that insert is done (appendingHere).
      flight.held.push(fromId);
      this.applyAppend({ accountId, fromId }, () => 'unchanged');
      return;
    }
    this.applyAppend({ accountId, fromId }, () => 'drop');
  }

  /**
   * This instance is about to append rows to these accounts' lists. The returned function is called once the
   * insert is committed, with each account's append and how to grow a page at the end of the list with it
   * (or with null when the insert failed): a full page such rows may join is dropped, as for any append, and
   * a page at the end of the list is given to `grow`, which adds the rows that are its (or says it cannot).
   * A notification of the same insert, before or after, then changes nothing more. Notifications heard for
   * these accounts in between are held until then for the ends of their lists (the insert's time: milliseconds).
   */
  appendingHere(accounts: readonly number[]): (appended: ReadonlyArray<{ append: Appended; grow: (tail: T) => Grown<T> }> | null) => void {
    if (!this.enabled) return () => undefined;
    const involved = [...new Set(accounts)];
    for (const account of involved) {
      const flight = this.inFlight.get(account) ?? { count: 0, held: [] };
      flight.count++;
      this.inFlight.set(account, flight);
    }
    let finished = false;
    return (appended) => {
      if (finished) return;
      finished = true;
      for (const { append, grow } of appended ?? []) {
        const flight = this.inFlight.get(append.accountId);
        const held = flight?.held ?? [];
        const heard = held.indexOf(append.fromId);
        if (heard >= 0) held.splice(heard, 1);
        else this.rememberOwn(append);
        // Grown only when no row below these is known to be committed unseen: no other insert of this instance in
        // flight for the account (ids are drawn in one order, committed in another) and no other writer's held.
        // Another writer's whose notification is still on its way is missing from the grown page until it comes
        // (and drops it), as from a read that ran before its commit; grow never makes a page full for that reason.
        const alone = (flight?.count ?? 0) <= 1 && held.length === 0;
        this.applyAppend(append, alone ? grow : () => 'drop');
      }
      for (const account of involved) {
        const flight = this.inFlight.get(account);
        if (!flight || --flight.count > 0) continue;
        this.inFlight.delete(account);
        for (const fromId of flight.held) this.applyAppend({ accountId: account, fromId }, () => 'drop'); // another writer's
      }
    };
  }

  private rememberOwn({ accountId, fromId }: Appended): void {
    this.ownAppends.add(`${accountId}:${fromId}`);
    if (this.ownAppends.size > OWN_APPENDS_REMEMBERED) this.ownAppends.delete(this.ownAppends.values().next().value as string);
  }

  /** Counts an append (for fills that span it) and drops or grows the account's pages it may change. */
  private applyAppend({ accountId, fromId }: Appended, grow: (tail: T) => Grown<T>): void {
    const heard = this.appends.get(accountId) ?? { count: 0, recent: [] };
    heard.count++;
    heard.recent.push({ n: heard.count, fromId });
    if (heard.recent.length > APPENDS_REMEMBERED) heard.recent.shift();
    this.appends.set(accountId, heard);
    const current = `${this.epoch}.${this.generations.get(accountId) ?? 0}:`;
    for (const key of [...(this.keysOf.get(accountId) ?? [])]) {
      const kept = this.pages.peek(key);
      if (!kept || kept.lastId < fromId) continue;
      const grown = kept.tail !== undefined && kept.lastId === Infinity && key.startsWith(current) ? grow(kept.tail) : 'drop';
      if (grown === 'drop') this.pages.delete(key);
      // Replaced in place: the page keeps the age it was read at (the TTL is the net for a missed notification).
      else if (grown !== 'unchanged') this.pages.set(key, keptOf(grown, accountId), { noUpdateTTL: true, noDisposeOnSet: true });
    }
    this.stopJoining(accountId);
  }

  private stopJoining(account: number): void {
    for (const [key, fill] of this.filling) if (fill.account === account) this.filling.delete(key);
  }

  /** The least id appended to the account since `since` appends were heard; null when not remembered. */
  private appendedSince(account: number, since: number): number | null {
    const heard = this.appends.get(account);
    if (!heard || heard.count === since) return Infinity;
    const missed = heard.recent.filter((a) => a.n > since);
    if (missed.length !== heard.count - since) return null; // more appends than remembered
    return Math.min(...missed.map((a) => a.fromId));
  }

  /**
   * The page the validated `query` names in `scope`, from memory or from `produce`. A page produced while a
   * change of the account was notified is sent but not kept: it may have been read before the change (for
   * an append, only if the append may have joined it).
   */
  async page(scope: PageScope, query: Static<Q>, produce: () => Promise<string | ProducedPage<T>>): Promise<Buffer> {
    if (!this.enabled) return this.freshReads.get(pageKey(this.query, scope, query), produce);
    const account = scope.accountId;
    const version = `${this.epoch}.${this.generations.get(account) ?? 0}`;
    const key = `${version}:${pageKey(this.query, scope, query)}`;
    const hit = this.pages.get(key);
    if (hit !== undefined) return hit.body;
    const joined = this.filling.get(key);
    if (joined) return joined.body;
    const appendsBefore = this.appends.get(account)?.count ?? 0;
    const body = (async () => {
      const produced = await produce();
      const kept = keptOf(typeof produced === 'string' ? { json: produced } : produced, account);
      const appendedFrom = this.appendedSince(account, appendsBefore);
      const unchanged = `${this.epoch}.${this.generations.get(account) ?? 0}` === version && appendedFrom !== null && (appendedFrom === Infinity || appendedFrom > kept.lastId);
      if (unchanged) {
        this.pages.set(key, kept);
        const keys = this.keysOf.get(account) ?? new Set<string>();
        keys.add(key);
        this.keysOf.set(account, keys);
      }
      return kept.body;
    })();
    const fill = { account, body };
    this.filling.set(key, fill);
    const done = () => {
      if (this.filling.get(key) === fill) this.filling.delete(key);
    };
    body.then(done, done);
    return body;
  }

  get size(): number {
    return this.pages.size;
  }
}

const jsonOf = (produced: string | ProducedPage<unknown>): string => (typeof produced === 'string' ? produced : produced.json);

const keptOf = <T>(page: ProducedPage<T>, account: number): Kept<T> => ({
  body: Buffer.from(page.json),
  account,
  lastId: page.lastId ?? Infinity,
  ...(page.tail === undefined ? {} : { tail: page.tail }),
});

/** Sends a page's JSON (from the page cache, or as PostgreSQL wrote it: page-json.ts), with the header Fastify would give it. */
export function sendSerialized(reply: FastifyReply, body: Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}

/** A catalog NOTIFY names no account: it drops every page. */
export const everyAccount = (): Changed => 'all';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every page cache of the instance. Notifications reach each instance a moment after the commit; a
 * client that reads right after its own write must not get a page from before it. So every write request
 * this instance answers drops the pages of its account (a public API key's) before the answer leaves, or
 * every page (an operator's, or an open route's such as a setup link's): then whatever the request
 * committed is read again. A request refused before authentication drops nothing. A cache whose list no
 * request writes by itself (`changedByWriteRequests: false`) is left alone: on a busy site people and keys
 * change every few seconds, and each change dropped every door's end of the access log with them.
 */
export class PageCaches {
  private readonly caches: Array<Pick<PageCache, 'changed' | 'changedByWriteRequests'>> = [];

  constructor(private readonly enabled = true) {}

  create<Q extends TObject, T = unknown>(options: PageCacheOptions<Q>): PageCache<Q, T> {
    const cache = new PageCache<Q, T>({ ...options, enabled: this.enabled });
    this.caches.push(cache);
    return cache;
  }

  /** A write request answered: the pages it may have changed go (see the class comment). */
  private requestWrote(what: Changed): void {
    for (const cache of this.caches) if (cache.changedByWriteRequests) cache.changed(what);
  }

  install(app: FastifyInstance): void {
    app.addHook('onSend', (request, reply, payload, done) => {
      // A 405 ran no handler, so it changed nothing (it is authenticated now, so it has a caller or an operator).
      if (!READS.has(request.method) && reply.statusCode !== 405) {
        const access = request.routeOptions.config.access;
        if (request.caller) this.requestWrote({ accounts: [request.caller.accountId] });
        else if (access?.kind === 'admin' && reply.statusCode !== 401) this.requestWrote('all');
        else if (access?.kind === 'open' && reply.statusCode < 400) this.requestWrote('all');
      }
      done(null, payload);
    });
  }
}
