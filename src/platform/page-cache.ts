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

export interface PageCacheOptions<Q extends TObject = TObject> {
  /** The querystring schema of the route whose pages these are (the one its `schema.querystring` declares). */
  query: Q;
  /** The most bytes of pages kept. */
  maxBytes: number;
  ttlMs: number;
  /** False: every page is produced afresh (PAGE_CACHE_ENABLED=false). */
  enabled?: boolean;
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
export interface ProducedPage {
  json: string;
  lastId?: number;
}

interface Kept {
  body: Buffer;
  account: number;
  /** Appends of ids above this cannot change the page (Infinity: any append does). */
  lastId: number;
}

interface Fill {
  account: number;
  body: Promise<Buffer>;
}

/** Appends remembered per account, for fills that span them (a fill takes milliseconds; this is plenty). */
const APPENDS_REMEMBERED = 64;

export class PageCache<Q extends TObject = TObject> {
  // Bytes, not strings: a string would be encoded to UTF-8 again on every send.
  private readonly pages: LRUCache<string, Kept>;
  /** The keys kept per account, so that an append finds the pages it may change without a scan. */
  private readonly keysOf = new Map<number, Set<string>>();
  /** Bumped per account by its changes: a page stored under an older generation is never read again. */
  private readonly generations = new Map<number, number>();
  /** Bumped by a change of every account. */
  private epoch = 0;
  /** Per account: how many appends were heard, and the least new id of the last ones (newest last). */
  private readonly appends = new Map<number, { count: number; recent: Array<{ n: number; fromId: number }> }>();
  /**
   * Pages being read, by key: a request for the same page meanwhile waits for that read instead of making
   * its own (50 clients polling one list cost one query after a change, not 50). A change of the account
   * removes its fills from here, so a request after a change never joins a read that may predate it.
   */
  private readonly filling = new Map<string, Fill>();
  private readonly enabled: boolean;
  private readonly query: Q;

  constructor(options: PageCacheOptions<Q>) {
    this.enabled = options.enabled ?? true;
    this.query = options.query;
    this.pages = new LRUCache<string, Kept>({
      maxSize: options.maxBytes,
      sizeCalculation: (kept, key) => kept.body.length + key.length,
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
    const heard = this.appends.get(accountId) ?? { count: 0, recent: [] };
    heard.count++;
    heard.recent.push({ n: heard.count, fromId });
    if (heard.recent.length > APPENDS_REMEMBERED) heard.recent.shift();
    this.appends.set(accountId, heard);
    for (const key of [...(this.keysOf.get(accountId) ?? [])]) {
      const kept = this.pages.peek(key);
      if (kept && kept.lastId >= fromId) this.pages.delete(key);
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
  async page(scope: PageScope, query: Static<Q>, produce: () => Promise<string | ProducedPage>): Promise<Buffer> {
    if (!this.enabled) return Buffer.from(jsonOf(await produce()));
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
      const page = typeof produced === 'string' ? { json: produced } : produced;
      const bytes = Buffer.from(page.json);
      const lastId = page.lastId ?? Infinity;
      const appendedFrom = this.appendedSince(account, appendsBefore);
      const unchanged = `${this.epoch}.${this.generations.get(account) ?? 0}` === version && appendedFrom !== null && (appendedFrom === Infinity || appendedFrom > lastId);
      if (unchanged) {
        this.pages.set(key, { body: bytes, account, lastId });
        const keys = this.keysOf.get(account) ?? new Set<string>();
        keys.add(key);
        this.keysOf.set(account, keys);
      }
      return bytes;
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

const jsonOf = (produced: string | ProducedPage): string => (typeof produced === 'string' ? produced : produced.json);

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
 * committed is read again. A request refused before authentication drops nothing.
 */
export class PageCaches {
  private readonly caches: Array<Pick<PageCache, 'changed'>> = [];

  constructor(private readonly enabled = true) {}

  create<Q extends TObject>(options: PageCacheOptions<Q>): PageCache<Q> {
    const cache = new PageCache<Q>({ ...options, enabled: this.enabled });
    this.caches.push(cache);
    return cache;
  }

  changed(what: Changed): void {
    for (const cache of this.caches) cache.changed(what);
  }

  install(app: FastifyInstance): void {
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!READS.has(request.method)) {
        const access = request.routeOptions.config.access;
        if (request.caller) this.changed({ accounts: [request.caller.accountId] });
        else if (access?.kind === 'admin' && reply.statusCode !== 401) this.changed('all');
        else if (access?.kind === 'open' && reply.statusCode < 400) this.changed('all');
      }
      done(null, payload);
    });
  }
}
