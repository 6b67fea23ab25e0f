// `GET /v1/webhooks/listen` (README: Webhooks, "Local development"): a developer's machine receives the events
// of the API key's location as they are emitted, over server-sent events, each as the exact body a
// subscription would get with the signature headers, signed with a signing secret of the listen session.
// `latchkey webhooks listen --forward-to …` forwards them to a local URL, which the service itself may not
// call (https to a public host only). Nothing is written for a listener: no subscription, no delivery row.
//
// Where events come from: the domain_events rows, read by id. Every insert into domain_events raises a NOTIFY
// on the console's live channel with the account (migration 012's trigger), on whichever instance or job
// emitted it, when its transaction commits: that wakes a read on every instance that holds a listener of the
// account. Ids are handed out before commit, so a row may commit after a higher id was read: the rows of the
// last SETTLE_MS are read again at each read and what was already streamed is skipped, so a transaction that
// commits within SETTLE_MS of taking its id is never missed. A poll every POLL_MS is the net for a lost NOTIFY.
//
// The stream ends when the key is revoked, expires or loses `webhooks:manage`, or its account becomes a
// reseller (checked on the auth channel's NOTIFY and at every heartbeat; the end's reason is `key_revoked`),
// when the client goes, or when it cannot keep up.
import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import { AUTH_CHANNEL, CONSOLE_LIVE_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { EventType } from '../../platform/event-types.ts';
import { takeOverForStream } from '../../platform/http.ts';
import { uuidv7 } from '../../platform/ids.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { signatureHeader } from './sender.ts';
import { domainEventsAfter, keysThatMayListen, newestDomainEventId, type ListenedEventRow } from './store.ts';

/**
 * The channel migration 012's trigger on domain_events notifies (`{"topic":"events","account_id":…}` per
 * statement and account, whoever inserted); the console's live updates hear the same.
 */
const EVENTS_CHANNEL = CONSOLE_LIVE_CHANNEL;

/** Streams at once per API key, on this instance (a 429 beyond). */
export const MAX_LISTENERS_PER_KEY = 3;
/** Streams at once on this instance, every key together. */
export const MAX_LISTENERS = 200;
export const HEARTBEAT_MS = 15_000;
const POLL_MS = 5000;
/** Rows this recent are read again: a transaction that took its id earlier may commit after a later one. */
const SETTLE_MS = 10_000;
const READ_BATCH = 500;
/** A client that lets this much pile up unread is cut off (it reconnects and goes on from new events). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export type ListenEnd = 'key_revoked' | 'too_slow' | 'shutdown';

interface Listener {
  caller: Caller;
  /** null: every event. */
  events: ReadonlySet<string> | null;
  secret: string;
  /** Events with a lower id were emitted before the stream opened. */
  after: bigint;
  response: ServerResponse;
}

type EventRow = ListenedEventRow & { type: EventType };

/** Opens and feeds the listen streams of this instance. */
export class WebhookListeners {
  private readonly listeners = new Set<Listener>();
  private started: Promise<void> | null = null;
  private closed = false;
  /** Ids at or below it are settled; rows above it are read at each read. */
  private floor: bigint | null = null;
  /** The highest id read, with when it was read: `floor` follows it SETTLE_MS late. */
  private marks: Array<{ at: number; id: bigint }> = [];
  /** Ids above `floor` already streamed. */
  private seen = new Set<string>();
  private reading: Promise<void> | null = null;
  private readAgain = false;
  private timer: NodeJS.Timeout | null = null;
  private beats = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * The signing secret of a key's listen sessions: derived from the server key and the API key, so it stays
   * the same across reconnects and restarts of the CLI (the local app keeps its configuration), belongs to
   * no subscription, and is known only to holders of the key (it is handed out on the authenticated stream).
   */
  secretFor(caller: Caller): string {
    return `whsec_${this.secrets.derive(`webhooks-listen:${caller.apiKeyId}`)}`;
  }

  /** Whether another stream may open for this key. */
  canOpen(caller: Caller): boolean {
    if (this.closed || this.listeners.size >= MAX_LISTENERS) return false;
    let mine = 0;
    for (const listener of this.listeners) if (listener.caller.apiKeyId === caller.apiKeyId) mine++;
    return mine < MAX_LISTENERS_PER_KEY;
  }

  /** Listens for NOTIFYs once, at the first stream. */
  async prepare(): Promise<void> {
    this.started ??= (async () => {
      await this.db.listen(EVENTS_CHANNEL, (payload) => this.heard(payload));
      await this.db.listen(AUTH_CHANNEL, () => void this.checkKeys());
    })();
    await this.started.catch((error: unknown) => {
      this.started = null;
      throw error;
    });
  }

  /** The highest event id now: a new stream gets the events after it. */
  newestId(): Promise<bigint> {
    return newestDomainEventId(this.db);
  }

  /** Takes the reply over: the head (with the headers every answer carries), the `ready` message, then events and heartbeats. */
  open(caller: Caller, events: readonly string[], after: bigint, reply: FastifyReply): void {
    const response = takeOverForStream(reply, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, private',
      'x-accel-buffering': 'no', // a proxy in front must not hold the stream back
      connection: 'keep-alive',
    });
    const listener: Listener = { caller, events: events.includes('*') ? null : new Set(events), secret: this.secretFor(caller), after, response };
    response.socket?.setNoDelay(true);
    const ready = { secret: listener.secret, events: listener.events ? [...listener.events] : ['*'], location_id: caller.locationId, heartbeat_seconds: HEARTBEAT_MS / 1000 };
    response.write(`retry: 3000\nevent: ready\ndata: ${JSON.stringify(ready)}\n\n`);
    if (response.destroyed) return; // the client left while the stream was being prepared: its close came and went
    this.listeners.add(listener);
    response.on('close', () => this.listeners.delete(listener));
    if (this.floor === null || this.floor > after) this.floor = after;
    this.timer ??= setInterval(() => this.tick(), POLL_MS);
    this.timer.unref();
  }

  get size(): number {
    return this.listeners.size;
  }

  /** Ends every stream (shutdown). */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const listener of [...this.listeners]) this.end(listener, 'shutdown');
  }

  private end(listener: Listener, reason: ListenEnd): void {
    if (!this.listeners.delete(listener)) return;
    if (!listener.response.destroyed) listener.response.end(`event: end\ndata: ${JSON.stringify({ reason })}\n\n`);
    if (this.listeners.size === 0) this.idle();
  }

  /** No stream left: nothing is read until the next one opens (it starts from the newest id then). */
  private idle(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.floor = null;
    this.marks = [];
    this.seen = new Set();
  }

  /** A console-live NOTIFY: domain events (or access-log rows) of an account were inserted; '' after a lost connection. */
  private heard(payload: string): void {
    if (this.listeners.size === 0) return;
    if (payload !== '') {
      let note: { topic?: unknown; account_id?: unknown };
      try {
        note = JSON.parse(payload) as typeof note;
      } catch {
        return;
      }
      if (note.topic !== 'events' && note.topic !== '*') return;
      if (note.account_id !== null && note.account_id !== undefined && ![...this.listeners].some((l) => l.caller.accountId === Number(note.account_id))) return;
    }
    this.read();
  }

  /** Every POLL_MS: a read (the net for a lost NOTIFY); every HEARTBEAT_MS: a comment line and the keys checked. */
  private tick(): void {
    if (this.listeners.size === 0) return this.idle();
    this.read();
    this.beats += POLL_MS;
    if (this.beats >= HEARTBEAT_MS) {
      this.beats = 0;
      for (const listener of [...this.listeners]) this.write(listener, ': ping\n\n');
      void this.checkKeys();
    }
  }

  /** One read at a time; a wake-up during a read makes one more. */
  private read(): void {
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = (async () => {
      do {
        this.readAgain = false;
        try {
          await this.readOnce();
        } catch (error) {
          this.log.warn({ err: error }, 'webhook listen: events not read; the next NOTIFY or poll tries again');
        }
      } while (this.readAgain && this.listeners.size > 0);
    })().finally(() => {
      this.reading = null;
    });
  }

  private async readOnce(): Promise<void> {
    const accounts = [...new Set([...this.listeners].map((l) => l.caller.accountId))];
    if (accounts.length === 0 || this.floor === null) return;
    // The highest id handed out so far, read first: once SETTLE_MS have passed, every id up to it is settled
    // (whatever account it is of, so that the rows read again stay those of the last seconds).
    let newest = await this.newestId();
    let from = this.floor;
    for (;;) {
      const rows = (await domainEventsAfter(this.db, from, accounts, READ_BATCH)) as EventRow[];
      for (const row of rows) {
        const id = BigInt(row.id);
        if (id > newest) newest = id;
        if (this.seen.has(row.id)) continue;
        this.seen.add(row.id);
        this.stream(row, id);
      }
      const last = rows.at(-1);
      if (rows.length < READ_BATCH || !last) break;
      from = BigInt(last.id);
    }
    this.settle(newest);
  }

  /** Moves `floor` to the highest id read SETTLE_MS ago and forgets the ids at or below it. */
  private settle(newest: bigint): void {
    const now = Date.now();
    this.marks.push({ at: now, id: newest });
    let settled: bigint | null = null;
    while (this.marks.length > 1 && (this.marks[0] as { at: number }).at <= now - SETTLE_MS) settled = (this.marks.shift() as { id: bigint }).id;
    if (settled === null || this.floor === null || settled <= this.floor) return;
    const floor = settled;
    this.floor = floor;
    for (const id of this.seen) if (BigInt(id) <= floor) this.seen.delete(id);
  }

  /** Sends one event to every stream that may see it: its account, its location or one above, its type. */
  private stream(row: EventRow, id: bigint): void {
    if (row.data === null) return; // purged (domainEventsAfter leaves these out): never data null
    let body: string | null = null;
    let deliveryId = '';
    for (const listener of this.listeners) {
      const { caller } = listener;
      if (id <= listener.after || String(caller.accountId) !== row.account_id) continue;
      if (!row.path.includes(String(caller.locationId))) continue;
      if (listener.events && !listener.events.has(row.type)) continue;
      if (body === null) {
        // The envelope a subscription gets (sender.ts), the delivery id a uuid of the event's time as theirs.
        deliveryId = uuidv7(row.occurred_at);
        body = JSON.stringify({ id: deliveryId, type: row.type, created_at: row.occurred_at.toISOString(), data: row.data });
      }
      const t = Math.floor(this.clock.now().getTime() / 1000);
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1.0',
        'x-service-event': row.type,
        'x-service-delivery': deliveryId,
        'x-service-timestamp': String(t),
        'x-service-signature': signatureHeader(listener.secret, t, body),
      };
      this.write(listener, `event: delivery\nid: ${deliveryId}\ndata: ${JSON.stringify({ headers, body })}\n\n`);
    }
  }

  private write(listener: Listener, text: string): void {
    const { response } = listener;
    if (response.destroyed || response.writableEnded) {
      // Gone, perhaps before open() could hear it close (the client left while the stream was being prepared):
      // it holds a place of the key's and the instance's limits no longer.
      this.listeners.delete(listener);
      return;
    }
    if (response.writableLength > MAX_BUFFERED_BYTES) {
      this.end(listener, 'too_slow');
      response.destroy();
      return;
    }
    response.write(text);
  }

  /** Ends the streams of keys that were revoked, expired, lost `webhooks:manage` or whose account became a reseller (on every instance: a NOTIFY, and each heartbeat). */
  private async checkKeys(): Promise<void> {
    if (this.listeners.size === 0) return;
    const ids = [...new Set([...this.listeners].map((l) => l.caller.apiKeyId))];
    let valid: Set<number>;
    try {
      valid = await keysThatMayListen(this.db, ids, this.clock.now());
    } catch (error) {
      this.log.warn({ err: error }, 'webhook listen: keys not checked; the next heartbeat checks again'); // a database blip ends nobody's stream
      return;
    }
    for (const listener of [...this.listeners]) if (!valid.has(listener.caller.apiKeyId)) this.end(listener, 'key_revoked');
  }
}
