// The access side of the gateway protocol (docs/spec/gateway-mqtt.md, "Access"): a gateway asks about a
// credential it does not know and gets the decision at once; it says which version of its list it holds and
// gets what it lacks (the changes since, or the whole list in parts that fit the broker's packet limit); it
// says what it applied, which ends the wait of key changes; and changes committed by this instance are pushed
// to the gateways they concern as they commit.
import type { FastifyBaseLogger } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import { REQUEST_ID_PREFIX, type GatewayEvent } from '../events/index.ts';
import { CredentialCache } from './credential-cache.ts';
import { parseCredential } from './credentials.ts';
import { decide } from './decision.ts';
import { ACCESS_LISTS_CHANNEL, CATALOG_CHANNEL } from '../../platform/channels.ts';
import { listMessages } from './list-messages.ts';
import type { AccessLists } from './lists.ts';
import { RequestLimit } from './request-limit.ts';
import { keyGroupIds, lockAccess, opensOnGateway, type AccountFacts } from './resolve.ts';
import {
  claimSync,
  entriesSince,
  fullList,
  gatewayAccount,
  laggingGateways,
  listState,
  loadAccountFacts,
  recordApplied,
  recordListExpired,
} from './store.ts';
import type { Decision, DenialReason } from './types.ts';

/** What `access/answer` carries besides the request's id. */
interface Answer {
  granted: boolean;
  reason: DenialReason | null;
  key_id: number | null;
}

/** What the gateway side needs of the device link: publishing to a gateway, and the access log's pipeline. */
export interface GatewayIo {
  /** `payload` is a JSON value, or JSON text (`text: true`) sent as it is. */
  publish(gatewayId: number, topic: 'access/list' | 'access/answer', payload: unknown, text?: boolean): Promise<void>;
  /** Stores a door event as the gateway's events are stored (once per id); resolves once committed. */
  record(gatewayId: number, event: GatewayEvent): Promise<void>;
}

/** How often lists that gateways have not applied are pushed again (a push lost with the broker, a gateway back). */
const PUSH_AGAIN_SECONDS = 5;
/**
 * How long a claimed sync is not answered again: the other instances' copies of the message, and repeats. Claimed per
 * answer (store.ts claimSync): a version's changes, or the whole list whatever version asked for it.
 */
const SYNC_CLAIM_MS = 2000;
/** Account facts kept for online answers; dropped on every catalog change. */
const FACTS_TTL_MS = 30_000;
/**
 * How long a repeated request id gets the answer given to it (by the service's clock): a redelivery, or a gateway asking
 * again when the answer was late, comes within seconds. Later, the id is taken as reused (a counter restarted).
 */
const REPEAT_MS = 10_000;

/** An answer given, with what it was decided on: a repeat gets it only while none of that changed. */
interface GivenAnswer {
  answer: Promise<Answer>;
  /** The account's facts (a catalog change replaces them) and keys' version (CredentialCache.version) it was decided on. */
  facts: AccountFacts;
  keys: string;
  /** When it was decided, by the service's clock. */
  at: number;
}

/**
 * The answer to a gateway. A key of the account that opens no lock of this gateway is answered as a credential
 * nobody holds: telling them apart let a gateway try card numbers and find the cards of other gateways' doors
 * (the whole Wiegand-26 space in hours). A key whose groups open one of its locks may be on its list already (the
 * test is on the groups, whatever the key's state), so naming it tells the gateway little.
 */
function answerFor(decision: Decision, opensOnThisGateway: () => boolean): Answer {
  if (decision.granted) return { granted: true, reason: null, key_id: decision.keyId };
  // Asked only for a refusal naming a key: it walks the account's locks.
  if (decision.keyId !== null && !opensOnThisGateway()) return { granted: false, reason: 'unknown_key', key_id: null };
  return { granted: false, reason: decision.reason, key_id: decision.keyId };
}

const isRowId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
const isVersion = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/**
 * The access log's id for an online decision (its gateway's events keep one entry per id). Its parts make one
 * decision one entry, whichever instances made it (with an external broker every instance decides every request),
 * and keep every decision a door acted on: the request's id, lock and card (an id reused for another card or lock,
 * by a gateway whose counter restarted), the outcome and key (a repeat decided again after a change, which may have
 * been answered otherwise), and the REPEAT_MS window it was decided in (an id reused later for the same card: a
 * repeat is decided again only REPEAT_MS or more after the answer given, so in a later window). Two instances
 * deciding one request on either side of a window's edge log it twice: a duplicate, never a loss.
 */
function requestLogId(id: string, lockId: number, card: string, decision: Decision, at: Date): string {
  const outcome = decision.granted ? 'granted' : decision.reason;
  return `${REQUEST_ID_PREFIX}${id}:${lockId}:${card}:${outcome}:${decision.keyId ?? '-'}:${Math.floor(at.getTime() / REPEAT_MS)}`;
}

export class GatewaySync {
  private io: GatewayIo | null = null;
  private readonly facts = new Map<number, { facts: Promise<AccountFacts>; at: number }>();
  private readonly accounts = new Map<number, Promise<number | null>>();
  /** Changes this instance pushed already, by the id of their notification. */
  private readonly pushed = new LRUCache<string, true>({ max: 10_000 });
  /** Each gateway's list messages go out one batch after another, never interleaved. */
  private readonly sending = new Map<number, Promise<void>>();
  /**
   * A gateway's syncs not answered yet, as one: the lowest version they asked for (its changes hold what every higher
   * version lacks, and the contract has a gateway apply changes whose `from` is at or below the version it holds),
   * and the highest (one ahead of the service's list gets the whole list).
   */
  private readonly syncsWaiting = new Map<number, { version: number; highest: number; answered: Promise<void> }>();
  private readonly keys: CredentialCache;
  private readonly limit: RequestLimit;
  /** The answers this instance gave lately, by gateway, lock, credential and request id (a QoS 1 redelivery gets the same). */
  private readonly answered = new LRUCache<string, GivenAnswer>({ max: 10_000, ttl: REPEAT_MS }); // ttl: real time, so old facts are let go

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly lists: AccessLists,
    private readonly log: FastifyBaseLogger,
    private readonly maxPacketBytes: number,
    requestsPerSecond: number,
  ) {
    this.keys = new CredentialCache(db);
    this.limit = new RequestLimit(requestsPerSecond);
  }

  attach(io: GatewayIo): void {
    this.io = io;
  }

  async start(): Promise<void> {
    await this.keys.start();
    await this.db.listen(CATALOG_CHANNEL, () => this.facts.clear());
    await this.db.listen(ACCESS_LISTS_CHANNEL, (payload) => {
      const [instance, change, ids] = payload.split('|');
      // Only the instance that committed the change pushes it, once (PostgreSQL delivers it here twice: at
      // commit and over the LISTEN connection); the job catches what it could not.
      if (instance !== this.lists.instance || !change || !ids || this.pushed.has(change)) return;
      this.pushed.set(change, true);
      for (const id of ids.split(',')) void this.push(Number(id));
    });
  }

  /** Pushes again, every few seconds, what online gateways have not applied. */
  pushJob(): Job {
    return {
      name: 'access-lists-push',
      everySeconds: PUSH_AGAIN_SECONDS,
      run: async () => {
        const lagging = await laggingGateways(this.db);
        for (const id of lagging) await this.push(id);
        return lagging.length;
      },
    };
  }

  /**
   * `{id, lock_id, credential}`: the decision goes back on `access/answer` at once; it is recorded in the
   * access log once per (gateway, id), and the request acknowledged when it is. A repeated id is answered with
   * this instance's answer to it, not decided again (see answer).
   */
  request(gatewayId: number, payload: Record<string, unknown>): Promise<void> | undefined {
    // Real time, not the service clock: a clock stepped back must not stop the bucket refilling.
    const now = performance.now();
    if (!this.limit.take(gatewayId, now)) {
      // Over the limit: no answer and nothing logged, as when the link is down; the gateway decides from its copy
      // (an answer `granted: false` would refuse a card its copy opens, and name no true reason).
      const refused = this.limit.refused(gatewayId, now);
      if (refused !== null) {
        this.log.warn({ gatewayId, refused, perSecond: this.limit.perSecond, burst: this.limit.burst }, 'access requests over the limit; not answered');
      }
      return undefined;
    }
    const { id, lock_id: lockId, credential } = payload;
    if (typeof id !== 'string' || id === '' || id.length > 200 || id.includes('\u0000')) {
      this.log.warn({ gatewayId, problem: 'id: must be text of 1 to 200 characters, without NUL' }, 'malformed access request; dropped');
      return undefined;
    }
    // The field and the rule, and the request's id: never the credential, which opens the door.
    if (!isRowId(lockId) || typeof credential !== 'string') {
      const problem = isRowId(lockId) ? 'credential: must be text' : 'lock_id: must be a positive integer';
      this.log.warn({ gatewayId, requestId: id, problem }, 'malformed access request; dropped');
      return undefined;
    }
    // Never rejects: the broker's callbacks would end the process. A request the database could not answer is
    // acknowledged without an answer (nothing was decided, nothing is logged): the gateway decides from its copy.
    return this.answer(gatewayId, id, lockId, credential).catch((error: unknown) => this.log.error({ err: error, gatewayId }, 'access request not answered'));
  }

  private async answer(gatewayId: number, id: string, lockId: number, presented: string): Promise<void> {
    const io = this.requireIo();
    const accountId = await this.accountOf(gatewayId);
    const facts = accountId === null ? null : await this.factsOf(accountId);
    const lock = facts?.locks.get(lockId);
    if (!facts || !lock || lock.gatewayId !== gatewayId) {
      // Not this gateway's lock: refused, and not logged (the access log keeps a lock's events with its gateway).
      this.log.warn({ gatewayId, lockId }, 'access request for a lock that is not on this gateway; refused');
      await io.publish(gatewayId, 'access/answer', { id, granted: false, reason: 'no_access', key_id: null });
      return;
    }
    // A request id this instance answered lately gets that answer again, not a second decision (a QoS 1 redelivery, or
    // the gateway asking again): only while nothing the answer was decided on changed, and for REPEAT_MS. Before, a
    // repeat got the first answer however late, so a gateway reusing ids (a counter restarted) opened the door to a
    // card revoked or expired since, with nothing in the log. It is not looked up in the log, so that a swipe costs no
    // database read: an instance that did not answer it (a restart, another instance) decides again.
    const now = this.clock.now();
    const keys = this.keys.version(facts.accountId);
    const name = `${gatewayId}:${lockId}:${presented}:${id}`;
    const earlier = this.answered.get(name);
    if (earlier && earlier.facts === facts && earlier.keys === keys && Math.abs(now.getTime() - earlier.at) <= REPEAT_MS) {
      const answer = await earlier.answer;
      await io.publish(gatewayId, 'access/answer', { id, ...answer }).catch((error: unknown) => this.log.warn({ err: error, gatewayId }, 'access answer not published'));
      return;
    }
    const hash = this.presentedHash(presented);
    const decided = this.decideOnline(facts, gatewayId, lock.id, hash, now);
    const given: GivenAnswer = { answer: decided.then((d) => d.answer), facts, keys, at: now.getTime() };
    this.answered.set(name, given);
    given.answer.catch(() => this.answered.get(name) === given && this.answered.delete(name));
    const { decision, answer } = await decided;
    // The door waits for the answer, not for the log: a publish that fails is the gateway's to ask again.
    await io.publish(gatewayId, 'access/answer', { id, ...answer }).catch((error: unknown) => this.log.warn({ err: error, gatewayId }, 'access answer not published'));
    // The log keeps the truth (which key was tried at which door), for the account to see; the gateway got less.
    await io.record(gatewayId, {
      // The card by its keyed digest, never in clear; all text that is no credential is one.
      id: requestLogId(id, lockId, hash?.slice(0, 16) ?? 'invalid', decision, now),
      lock_id: lock.id,
      type: decision.granted ? 'access.granted' : 'access.denied',
      occurred_at: now.toISOString(),
      key_id: decision.keyId,
      reason: decision.granted ? null : decision.reason,
    });
  }

  /** The lookup hash of what a reader presented, or null for text that is no credential (it opens nothing). */
  private presentedHash(presented: string): string | null {
    const parsed = parseCredential(presented);
    return 'credential' in parsed ? this.lists.lookupHash(parsed.credential) : null;
  }

  /** The one decision, on what the service holds now, and the answer the gateway may be told of it. */
  private async decideOnline(facts: AccountFacts, gatewayId: number, lockId: number, hash: string | null, at: Date): Promise<{ decision: Decision; answer: Answer }> {
    const row = hash === null ? null : await this.keys.find(facts.accountId, hash);
    const lock = facts.locks.get(lockId);
    if (!row || !lock) {
      const decision = decide(null, null, 'UTC', at);
      return { decision, answer: answerFor(decision, () => false) };
    }
    const groups = keyGroupIds(facts, row.security_groups, row.person_path.map(Number));
    const decision = decide({ id: Number(row.id), state: row.state, startsAt: row.starts_at, expiresAt: row.expires_at }, lockAccess(groups, lock), lock.timeZone, at);
    return { decision, answer: answerFor(decision, () => opensOnGateway(facts, groups, gatewayId)) };
  }

  /**
   * `{version}`: the version the gateway holds (0: none); it gets what it lacks. With an external broker every
   * instance receives it: the one that claims it answers, so the gateway is not sent the list once per instance;
   * and a gateway asking again with other versions within SYNC_CLAIM_MS is sent no second whole list. Syncs that
   * arrive while the gateway's last answer is still going out wait as one (syncsWaiting): a gateway flooding syncs
   * of every version gets one answer at a time, not one each.
   */
  sync(gatewayId: number, payload: Record<string, unknown>): Promise<void> | undefined {
    const version = payload.version;
    if (!isVersion(version)) {
      this.log.warn({ gatewayId, problem: 'version: must be an integer of 0 or more' }, 'malformed access sync; dropped');
      return undefined;
    }
    const waiting = this.syncsWaiting.get(gatewayId);
    if (waiting) {
      waiting.version = Math.min(waiting.version, version);
      waiting.highest = Math.max(waiting.highest, version);
      return waiting.answered;
    }
    const sync = { version, highest: version, answered: Promise.resolve() };
    this.syncsWaiting.set(gatewayId, sync);
    // Never rejects (as request): a sync the database could not claim is the gateway's to send again.
    sync.answered = this.inTurn(gatewayId, 'access sync not answered', async () => {
      this.syncsWaiting.delete(gatewayId);
      // A version ahead of the service's (a gateway holding replaced data) needs the whole list, which no changes
      // from a lower version make up for.
      const ahead = sync.highest !== sync.version && sync.highest > ((await listState(this.db, gatewayId))?.listVersion ?? 0);
      const version = ahead ? sync.highest : sync.version;
      const now = this.clock.now();
      if (await claimSync(this.db, gatewayId, version, now, new Date(now.getTime() - SYNC_CLAIM_MS))) await this.sendNow(gatewayId, version);
    });
    return sync.answered;
  }

  /** `{version}`: the gateway applied it; key changes that waited for it may end. */
  applied(gatewayId: number, payload: Record<string, unknown>): Promise<void> | undefined {
    const version = payload.version;
    if (!isVersion(version)) return undefined;
    // Never rejects (as request); an applied version not recorded is pushed again and applied again.
    return this.db
      .transaction(async (tx) => {
        const confirmed = await recordApplied(tx, gatewayId, version);
        if (confirmed.length > 0) await this.lists.confirm(tx, confirmed);
      })
      .catch((error: unknown) => this.log.error({ err: error, gatewayId }, 'applied version not recorded'));
  }

  /** A presence may say what the gateway holds: `access_list: {version, expired}`. Rejects when not written (retried by the caller). */
  async presence(gatewayId: number, payload: Record<string, unknown>): Promise<void> {
    const list = payload.access_list as { expired?: unknown } | undefined;
    if (!list || typeof list !== 'object' || typeof list.expired !== 'boolean') return;
    await recordListExpired(this.db, gatewayId, list.expired);
  }

  /** What the gateway has not applied yet, from the version it last said it applied. */
  private async push(gatewayId: number): Promise<void> {
    await this.send(gatewayId, null);
  }

  /** Sends the gateway what it lacks after `version` (null: after what it last applied), one batch at a time. */
  private send(gatewayId: number, version: number | null): Promise<void> {
    return this.inTurn(gatewayId, 'access list not sent', () => this.sendNow(gatewayId, version));
  }

  /** Runs `work` after the gateway's earlier list work (never two at once for one gateway); never rejects. */
  private inTurn(gatewayId: number, failure: string, work: () => Promise<void>): Promise<void> {
    const previous = this.sending.get(gatewayId) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => this.log.warn({ err: error, gatewayId }, failure));
    this.sending.set(gatewayId, next);
    void next.then(() => {
      if (this.sending.get(gatewayId) === next) this.sending.delete(gatewayId);
    });
    return next;
  }

  /** `followUp`: a whole list is followed by what changed while it was read (once: not the follow-up's own). */
  private async sendNow(gatewayId: number, version: number | null, followUp = true): Promise<void> {
    const io = this.requireIo();
    const state = await listState(this.db, gatewayId);
    if (!state || !state.hasSecret) return; // no list without a secret: rotate the password (README)
    // A push goes only to a gateway that has applied a list: one that never asked (it does not keep lists,
    // or has not connected yet) is not sent whole lists on every change; it gets one when it asks.
    if (version === null && state.appliedVersion === 0) return;
    const from = version ?? state.appliedVersion;
    const validUntil = new Date(this.clock.now().getTime() + state.offlineAccessSeconds * 1000).toISOString();
    // A gateway with nothing, older than the removals kept, or ahead of the service (its data was replaced): all of it.
    if (from === 0 || from < state.prunedVersion || from > state.listVersion) {
      const entries = await fullList(this.db, gatewayId);
      const messages = listMessages({ type: 'full', version: state.listVersion, valid_until: validUntil }, entries, [], this.maxPacketBytes);
      for (const message of messages) await io.publish(gatewayId, 'access/list', message, true);
      // A change committed meanwhile is pushed by the instance that made it, and with an external broker its
      // message may reach the gateway before this list, which replaces the copy: a revoked card would be back
      // in it. The changes since follow this list from here, so the gateway's last word is never the older list.
      // (Changes, or the whole list again when the gateways' acknowledgements have pruned them meanwhile.)
      const after = followUp ? await listState(this.db, gatewayId) : null;
      if (after && after.listVersion > state.listVersion) await this.sendNow(gatewayId, state.listVersion, false);
      return;
    }
    for (const message of await this.changes(gatewayId, from, state.listVersion, validUntil)) await io.publish(gatewayId, 'access/list', message, true);
  }

  /** The list messages of the changes after version `from`, up to `version` (nothing since: the same version, valid for longer). */
  private async changes(gatewayId: number, from: number, version: number, validUntil: string): Promise<string[]> {
    const since = await entriesSince(this.db, gatewayId, from);
    const entries = since.flatMap((row) => (row.entry === null ? [] : [row.entry]));
    const removed = since.flatMap((row) => (row.entry === null ? [Number(row.key_id)] : []));
    return listMessages({ type: 'changes', from, version, valid_until: validUntil }, entries, removed, this.maxPacketBytes);
  }

  private requireIo(): GatewayIo {
    if (!this.io) throw new Error('the gateway link is not attached');
    return this.io;
  }

  /** A gateway's account, read once (a gateway never changes account); the first swipes share the read. */
  private accountOf(gatewayId: number): Promise<number | null> {
    const known = this.accounts.get(gatewayId);
    if (known) return known;
    const account = gatewayAccount(this.db, gatewayId).then((row) => row?.accountId ?? null);
    this.accounts.set(gatewayId, account);
    // Not remembered when unknown (a gateway created since) or unread (the database was away).
    account.then((id) => id === null && this.accounts.delete(gatewayId)).catch(() => this.accounts.delete(gatewayId));
    return account;
  }

  private factsOf(accountId: number): Promise<AccountFacts> {
    const cached = this.facts.get(accountId);
    const now = Date.now();
    if (cached && now - cached.at < FACTS_TTL_MS) return cached.facts;
    const facts = loadAccountFacts(this.db, accountId);
    this.facts.set(accountId, { facts, at: now });
    facts.catch(() => this.facts.delete(accountId));
    return facts;
  }
}
