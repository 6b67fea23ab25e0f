// Writing the access log: door activity from gateways, kept once per (gateway, event id) in order of
// receipt, and the entries other modules record (the outcomes of remote unlocks). Every entry goes to
// webhooks as a domain event in the same statement.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import type { GatewayEvent } from './gateway-event.ts';
import type { AccessEntry, AccessEvent, AccessLogLock, WriteGuard } from './schemas.ts';
import { eventBody, insertEntries, readBatchContext, type EntryToInsert } from './store.ts';
import type { AppendedEntry } from './tail-pages.ts';

type Holder = Pick<AccessEvent, 'person' | 'key'>;

/** What hears of this instance's appends (AccessLogReader.appending). */
export interface AppendListener {
  appending(accounts: readonly number[]): (entries: readonly AppendedEntry[] | null) => void;
}

const unique = <T>(values: T[]): T[] => [...new Set(values)];

/** The reasons an Event of type access.denied may carry (spec: Reason values); other types carry none. */
const DENIAL_REASONS: ReadonlySet<string | null> = new Set(['no_access', 'outside_time_window', 'unknown_key']);

/**
 * The reason stored for a gateway's event: a refusal of a key the account does not hold is `unknown_key`; another
 * refusal keeps the gateway's reason when it is one of the spec's, else none; other types have none (an opening by
 * an exit button or a key unknown here is a success without a reason).
 */
function storedReason(event: GatewayEvent, keyKnown: boolean): string | null {
  if (event.type !== 'access.denied') return null;
  if (!keyKnown) return 'unknown_key';
  return DENIAL_REASONS.has(event.reason) ? event.reason : null;
}

export class AccessLogWriter {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    /** Told before this instance appends to accounts' logs, and of the entries once committed (the reader's pages). */
    private readonly appends: AppendListener = { appending: () => () => undefined },
  ) {}

  /** Stores a gateway's event once; a repeat of (gateway, id) is dropped. Returns the stored event, if new. */
  async ingest(gatewayId: number, event: GatewayEvent): Promise<AccessEvent | null> {
    return (await this.ingestBatch(gatewayId, [event]))[0] ?? null;
  }

  /** Stores a gateway's events in order of receipt (see ingestAcross). */
  ingestBatch(gatewayId: number, events: readonly GatewayEvent[]): Promise<Array<AccessEvent | null>> {
    return this.ingestAcross(events.map((event) => ({ gatewayId, event })));
  }

  /**
   * Stores door events of one gateway or several in the order given, in two statements however many there
   * are (under load, the events that arrived while the previous write was running). Repeats and events for
   * locks that are not on their gateway are dropped (null in their place).
   */
  async ingestAcross(items: ReadonlyArray<{ gatewayId: number; event: GatewayEvent }>): Promise<Array<AccessEvent | null>> {
    // Two statements and no transaction: the reads, then one atomic write. A concurrent instance storing
    // the same event in between is caught by the write's ON CONFLICT.
    const { locks, seen, holders, openings } = await readBatchContext(this.db, {
      lockIds: unique(items.map((i) => i.event.lock_id)),
      events: items.map((i) => ({ gatewayId: i.gatewayId, eventId: i.event.id })),
      keyIds: unique(items.flatMap((i) => (i.event.key_id === null ? [] : [i.event.key_id]))),
      closedLockIds: unique(items.filter((i) => i.event.type.startsWith('door.')).map((i) => i.event.lock_id)),
    });
    const lockById = new Map(locks.map(({ gateway_id: gatewayId, ...lock }) => [lock.id, { gatewayId: Number(gatewayId), lock }]));
    const seenKey = (gatewayId: number, eventId: string) => `${gatewayId}\u0000${eventId}`;
    const stored = new Set(seen.map(([gatewayId, eventId]) => seenKey(Number(gatewayId), eventId)));
    const holderOf = new Map(holders.map((h) => [h.key_id, h]));
    // door.closed and door.left_open take person and key from the access that opened the door: the
    // lock's last stored opening, or an opening earlier in this batch.
    const openedBy = new Map<number, Holder>(openings.map((o) => [o.lock_id, { person: o.data.person, key: o.data.key }]));

    const fresh: Array<{ index: number; lock: AccessLogLock; gatewayId: number; event: GatewayEvent }> = [];
    items.forEach(({ gatewayId, event }, index) => {
      const found = lockById.get(event.lock_id);
      if (!found || found.gatewayId !== gatewayId) return this.log.warn({ gatewayId, lockId: event.lock_id }, 'event for a lock that is not on this gateway; dropped');
      const key = seenKey(gatewayId, event.id);
      if (stored.has(key)) return; // a repeat (QoS 1 redelivery or the gateway retrying)
      stored.add(key);
      fresh.push({ index, lock: found.lock, gatewayId, event });
    });

    const entries = fresh.map(({ lock, gatewayId, event }): { lock: AccessLogLock; entry: AccessEntry } => {
      let person: AccessEvent['person'] = null;
      let key: AccessEvent['key'] = null;
      let keyKnown = false;
      if (event.type === 'access.granted' || event.type === 'access.denied') {
        const holder = event.key_id === null ? undefined : holderOf.get(event.key_id);
        if (holder && holder.account_id === lock.account_id) {
          person = { id: holder.person_id, name: holder.person_name, email: holder.person_email };
          key = { id: holder.key_id, name: holder.key_name };
          keyKnown = true;
        }
        if (event.type === 'access.granted') openedBy.set(lock.id, { person, key });
      } else {
        ({ person, key } = openedBy.get(lock.id) ?? { person: null, key: null });
      }
      const entry: AccessEntry = {
        gatewayId,
        gatewayEventId: event.id,
        type: event.type,
        occurredAt: parseClientTimestamp(event.occurred_at) as Date,
        result: event.type === 'access.denied' ? 'denied' : 'success',
        reason: storedReason(event, keyKnown),
        source: 'gateway',
        apiKey: null,
        person,
        key,
      };
      return { lock, entry };
    });
    const recorded = await this.recordBatch(this.db, entries);
    const result: Array<AccessEvent | null> = items.map(() => null);
    fresh.forEach((f, i) => (result[f.index] = recorded[i] ?? null));
    return result;
  }

  /**
   * Writes access-log entries (ids ascending in the order given) and their webhook events in one statement
   * (on `tx`, a transaction or the database), only if `guard` changes a row when one is given. An entry
   * whose (gateway, event id) is already stored, by another instance meanwhile, is skipped: null in its
   * place, as are all entries when the guard changed nothing.
   */
  async recordBatch(
    tx: Queryable,
    entries: ReadonlyArray<{ lock: AccessLogLock; entry: AccessEntry }>,
    guard?: WriteGuard,
  ): Promise<Array<AccessEvent | null>> {
    if (entries.length === 0) return [];
    const rows = entries.map(({ lock, entry }): EntryToInsert => {
      const { id, ...rest } = {
        id: 0, // the row's id, drawn by the statement
        type: entry.type,
        occurred_at: entry.occurredAt.toISOString(),
        result: entry.result,
        reason: entry.reason,
        source: entry.source,
        api_key: entry.apiKey,
        lock: { id: lock.id, name: lock.name, place: lock.place },
        location: { id: lock.location_id, name: lock.location_name },
        person: entry.person,
        key: entry.key,
      } satisfies AccessEvent;
      return { lock, entry, event: { id, ...rest }, rest: JSON.stringify(rest) };
    });
    // Written on the database itself, the statement is committed when it returns: this instance's next read
    // must see it without waiting for the notification (in a caller's transaction, the notification is what tells).
    const appended = tx === this.db ? this.appends.appending(rows.map((r) => r.lock.account_id)) : undefined;
    let inserted: Array<{ id: number; n: number }>;
    try {
      inserted = await insertEntries(tx, rows, this.clock.now(), guard);
    } catch (error) {
      appended?.(null);
      throw error;
    }
    const stored: Array<AccessEvent | null> = rows.map(() => null);
    for (const { id, n } of inserted) {
      const { event } = rows[Number(n) - 1] as EntryToInsert;
      event.id = id;
      stored[Number(n) - 1] = event;
    }
    appended?.(
      inserted.map(({ id, n }): AppendedEntry => {
        const { lock, entry, rest } = rows[Number(n) - 1] as EntryToInsert;
        return {
          id: Number(id),
          accountId: lock.account_id,
          locationPath: lock.location_path?.map(Number) ?? null,
          lockId: lock.id,
          personId: entry.person?.id ?? null,
          type: entry.type,
          occurredAt: entry.occurredAt.getTime(),
          json: eventBody(Number(id), rest),
        };
      }),
    );
    return stored;
  }
}
