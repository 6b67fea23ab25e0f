// The access log: door activity from gateways, kept once per (gateway, event id), in order of receipt,
// readable through GET /events and sent to webhooks.
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, PreparedSql, Queryable } from '../../platform/db/index.ts';
import { EMIT_OUTGOING_CTES } from '../../platform/domain-events.ts';
import { errors } from '../../platform/errors.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import { parseClientTimestamp } from '../../platform/time.ts';

export const DOOR_EVENT_TYPES = ['access.granted', 'access.denied', 'door.closed', 'door.left_open'] as const;
export type DoorEventType = (typeof DOOR_EVENT_TYPES)[number];

/** The Event object of GET /events and of the access.* / door.* webhooks. */
export interface AccessEvent {
  id: number;
  type: string;
  occurred_at: string;
  result: 'success' | 'denied';
  reason: string | null;
  source: string;
  api_key: { id: number; name: string; prefix: string } | null;
  lock: { id: number; name: string; place: string };
  location: { id: number; name: string };
  person: { id: string; name: string; email: string | null } | null;
  key: { id: number; name: string } | null;
}

/** What a gateway sends on `{p}/gateways/{g}/events` (docs/spec/gateway-mqtt.md). */
export interface GatewayEvent {
  id: string;
  lock_id: number;
  type: DoorEventType;
  occurred_at: string;
  key_id: number | null;
  reason: string | null;
}

/** A row id as the database holds it (int8) and JavaScript can carry exactly. */
const isRowId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
/** Text PostgreSQL can store: NUL is the one character it refuses, and would fail the whole batch. */
const isStorableText = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value !== '' && value.length <= max && !value.includes('\u0000');

/** A gateway event as the contract describes it, or null: what cannot be stored is refused here, alone. */
export function parseGatewayEvent(payload: unknown): GatewayEvent | null {
  const p = payload as Record<string, unknown>;
  if (!p || typeof p !== 'object') return null;
  if (!isStorableText(p.id, 200)) return null;
  if (!isRowId(p.lock_id)) return null;
  if (!(DOOR_EVENT_TYPES as readonly unknown[]).includes(p.type)) return null;
  if (!isStorableText(p.occurred_at, 64) || !parseClientTimestamp(p.occurred_at)) return null;
  if (p.key_id !== null && p.key_id !== undefined && !isRowId(p.key_id)) return null;
  if (p.reason !== null && p.reason !== undefined && !isStorableText(p.reason, 200)) return null;
  return {
    id: p.id,
    lock_id: p.lock_id,
    type: p.type as DoorEventType,
    occurred_at: p.occurred_at,
    key_id: (p.key_id as number | null | undefined) ?? null,
    reason: (p.reason as string | null | undefined) ?? null,
  };
}

export interface LockRow {
  id: number;
  name: string;
  place: string;
  location_id: number;
  location_name: string;
  account_id: number;
}

/** One access-log entry to write (record / recordBatch). */
export interface AccessEntry {
  gatewayId: number | null;
  gatewayEventId: string | null;
  type: string;
  occurredAt: Date;
  result: 'success' | 'denied';
  reason: string | null;
  source: string;
  apiKey: AccessEvent['api_key'];
  person: AccessEvent['person'];
  key: AccessEvent['key'];
}

/**
 * Everything a batch of a gateway's events needs to know, in one round trip: the gateway's locks among
 * those named, which event ids are already stored, the holders of the keys named, and the last opening
 * of each of the gateway's locks that has a door.* event in the batch.
 */
const BATCH_CONTEXT = {
  name: 'accessLog.batchContext',
  text: `SELECT
    (SELECT coalesce(json_agg(x), '[]') FROM (
       SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id
         FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = ANY($1::bigint[]) AND k.gateway_id = $2) AS x) AS locks,
    (SELECT coalesce(json_agg(gateway_event_id), '[]') FROM access_events
      WHERE gateway_id = $2 AND gateway_event_id = ANY($3::text[])) AS seen,
    (SELECT coalesce(json_agg(x), '[]') FROM (
       SELECT k.id AS key_id, k.name AS key_name, k.account_id, p.id AS person_id, p.name AS person_name, p.email AS person_email
         FROM keys k JOIN people p ON p.id = k.person_id WHERE k.id = ANY($4::bigint[])) AS x) AS holders,
    (SELECT coalesce(json_agg(json_build_object('lock_id', k.id, 'data', o.data)), '[]')
       FROM locks k CROSS JOIN LATERAL (SELECT data FROM access_events
                                         WHERE lock_id = k.id AND type = 'access.granted' ORDER BY id DESC LIMIT 1) AS o
      WHERE k.id = ANY($5::bigint[]) AND k.gateway_id = $2) AS openings`,
};

interface BatchContext {
  locks: LockRow[];
  seen: string[];
  holders: Array<{ key_id: number; key_name: string; account_id: number; person_id: string; person_name: string; person_email: string | null }>;
  openings: Array<{ lock_id: number; data: AccessEvent }>;
}

/**
 * A condition on recordBatch's write, part of the same statement: a data-modifying statement (ending a
 * lock command, say) whose parameters are numbered from $12. The entries are written only if it affects
 * a row, so the change and its log entries happen together or not at all, in one round trip.
 */
export interface WriteGuard {
  /** Names the prepared statement (one per kind of guard). */
  name: string;
  sql: string;
  params: readonly unknown[];
}

function recordEntriesStatement(guard?: WriteGuard): PreparedSql {
  return {
    name: guard ? `accessLog.record.${guard.name}` : 'accessLog.record',
    text: `WITH ${guard ? `guard AS (${guard.sql}),` : ''}
  drawn AS MATERIALIZED (
    SELECT n, nextval(pg_get_serial_sequence('access_events', 'id')) AS id
      FROM generate_series(1, ${guard ? '(SELECT CASE WHEN count(*) > 0 THEN cardinality($1::bigint[]) ELSE 0 END FROM guard)' : 'cardinality($1::bigint[])'}) AS n
  ),
  stored AS (
    INSERT INTO access_events (id, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, data)
    SELECT drawn.id, e.account_id, e.location_id, e.lock_id, e.gateway_id, e.gateway_event_id, e.type, e.occurred_at, e.person_id, e.key_id,
           jsonb_set(e.data, '{id}', to_jsonb(drawn.id))
      FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::timestamptz[], $8::uuid[], $9::bigint[], $10::jsonb[])
           WITH ORDINALITY AS e (account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, data, n)
      JOIN drawn ON drawn.n = e.n
    ON CONFLICT (gateway_id, gateway_event_id) DO NOTHING
    RETURNING id, account_id, location_id, person_id, type, data
  ),
  outgoing AS (
    SELECT type, account_id, location_id, person_id, data, $11::timestamptz AS occurred_at, id AS n FROM stored
  ), ${EMIT_OUTGOING_CTES}
  SELECT stored.id, drawn.n, (SELECT count(*) FROM woken) AS woken FROM stored JOIN drawn ON drawn.id = stored.id`,
  };
}

export class AccessLog {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Stores a gateway's event once; a repeat of (gateway, id) is dropped. Returns the stored event, if new. */
  async ingest(gatewayId: number, event: GatewayEvent): Promise<AccessEvent | null> {
    return (await this.ingestBatch(gatewayId, [event]))[0] ?? null;
  }

  /**
   * Stores a gateway's events in order of receipt, in two statements however many there are (under load,
   * the events that arrived while the previous batch was being written). Repeats and events
   * for locks that are not on the gateway are dropped (null in their place).
   */
  async ingestBatch(gatewayId: number, events: readonly GatewayEvent[]): Promise<Array<AccessEvent | null>> {
    // Two statements and no transaction: the reads, then one atomic write. A concurrent instance storing
    // the same event in between is caught by the write's ON CONFLICT.
    const unique = <T>(values: T[]) => [...new Set(values)];
    const [context] = await this.db.query<BatchContext>(BATCH_CONTEXT, [
      unique(events.map((e) => e.lock_id)),
      gatewayId,
      events.map((e) => e.id),
      unique(events.flatMap((e) => (e.key_id === null ? [] : [e.key_id]))),
      unique(events.filter((e) => e.type.startsWith('door.')).map((e) => e.lock_id)),
    ]);
    const { locks, seen, holders, openings } = context as BatchContext;
    const lockById = new Map(locks.map((lock) => [lock.id, lock]));
    const stored = new Set(seen);
    const holderOf = new Map(holders.map((h) => [h.key_id, h]));
    // door.closed and door.left_open take person and key from the access that opened the door: the
    // lock's last stored opening, or an opening earlier in this batch.
    const openedBy = new Map<number, Pick<AccessEvent, 'person' | 'key'>>(openings.map((o) => [o.lock_id, { person: o.data.person, key: o.data.key }]));

    const fresh: Array<{ index: number; lock: LockRow; event: GatewayEvent }> = [];
    events.forEach((event, index) => {
      const lock = lockById.get(event.lock_id);
      if (!lock) return this.log.warn({ gatewayId, lockId: event.lock_id }, 'event for a lock that is not on this gateway; dropped');
      if (stored.has(event.id)) return; // a repeat (QoS 1 redelivery or the gateway retrying)
      stored.add(event.id);
      fresh.push({ index, lock, event });
    });

    const entries = fresh.map(({ lock, event }): { lock: LockRow; entry: AccessEntry } => {
      let person: AccessEvent['person'] = null;
      let key: AccessEvent['key'] = null;
      let reason = event.reason;
      if (event.type === 'access.granted' || event.type === 'access.denied') {
        const holder = event.key_id === null ? undefined : holderOf.get(event.key_id);
        if (holder && holder.account_id === lock.account_id) {
          person = { id: holder.person_id, name: holder.person_name, email: holder.person_email };
          key = { id: holder.key_id, name: holder.key_name };
        } else {
          reason = 'unknown_key';
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
        reason,
        source: 'gateway',
        apiKey: null,
        person,
        key,
      };
      return { lock, entry };
    });
    const recorded = await this.recordBatch(this.db, entries);
    const result: Array<AccessEvent | null> = events.map(() => null);
    fresh.forEach((f, i) => (result[f.index] = recorded[i] ?? null));
    return result;
  }

  /** Writes one access-log entry and its webhook event (recordBatch for one). */
  async record(tx: Queryable, lock: LockRow, entry: AccessEntry): Promise<AccessEvent | null> {
    return (await this.recordBatch(tx, [{ lock, entry }]))[0] ?? null;
  }

  /**
   * Writes access-log entries (ids ascending in the order given) and their webhook events in one statement
   * (on `tx`, a transaction or the database), only if `guard` changes a row when one is given. An entry
   * whose (gateway, event id) is already stored, by another instance meanwhile, is skipped: null in its
   * place, as are all entries when the guard changed nothing.
   */
  async recordBatch(
    tx: Queryable,
    entries: ReadonlyArray<{ lock: LockRow; entry: AccessEntry }>,
    guard?: WriteGuard,
  ): Promise<Array<AccessEvent | null>> {
    if (entries.length === 0) return [];
    const events = entries.map(({ lock, entry }): AccessEvent => ({
      id: 0, // the row's id, drawn below
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
    }));
    // One statement: ids drawn in the order given (a materialized CTE over generate_series) and written
    // into each stored Event; what is stored goes out as domain events with their webhook deliveries.
    const inserted = await tx.query<{ id: number; n: number }>(
      recordEntriesStatement(guard),
      [
        entries.map((e) => e.lock.account_id),
        entries.map((e) => e.lock.location_id),
        entries.map((e) => e.lock.id),
        entries.map((e) => e.entry.gatewayId),
        entries.map((e) => e.entry.gatewayEventId),
        entries.map((e) => e.entry.type),
        entries.map((e) => e.entry.occurredAt),
        entries.map((e) => e.entry.person?.id ?? null),
        entries.map((e) => e.entry.key?.id ?? null),
        events.map((e) => JSON.stringify(e)),
        this.clock.now(),
        ...(guard?.params ?? []),
      ],
    );
    const stored: Array<AccessEvent | null> = events.map(() => null);
    for (const row of inserted) {
      const event = events[Number(row.n) - 1] as AccessEvent;
      event.id = row.id;
      stored[Number(row.n) - 1] = event;
    }
    return stored;
  }

  /** GET /events: locks in the caller's scope, oldest first, the four door types only (unlock.failed is webhook-only). */
  async list(
    caller: Caller,
    query: { limit?: number; cursor?: string; since?: string; lock_id?: number; person_id?: string; type?: string },
  ): Promise<PageOf<AccessEvent>> {
    const limit = clampLimit(query.limit);
    const afterId = decodeCursor(query.cursor, 'number');
    let since: Date | null = null;
    if (query.since !== undefined) {
      since = parseClientTimestamp(query.since);
      if (!since) throw errors.invalidRequest('The query parameter since is not an ISO 8601 date-time.');
    }
    let types: string[] | null = null;
    if (query.type !== undefined) {
      types = query.type.split(',').map((t) => t.trim()).filter((t) => (DOOR_EVENT_TYPES as readonly string[]).includes(t));
      if (types.length === 0) return { data: [], next_cursor: null }; // an unrecognised list matches nothing
    }
    const rows = await this.db.query<{ data: AccessEvent }>(
      `SELECT e.data FROM access_events e
        WHERE e.location_id IN (SELECT id FROM locations WHERE path @> ARRAY[$1]::bigint[])
          AND e.id > $2
          AND ($3::timestamptz IS NULL OR e.occurred_at >= $3)
          AND ($4::bigint IS NULL OR e.lock_id = $4)
          AND ($5::uuid IS NULL OR e.person_id = $5)
          AND e.type = ANY($6::text[])
        ORDER BY e.id LIMIT $7`,
      [caller.locationId, afterId ?? 0, since, query.lock_id ?? null, query.person_id ?? null, types ?? [...DOOR_EVENT_TYPES], limit + 1],
    );
    return toPage(
      rows.map((r) => r.data),
      limit,
      (e) => e.id,
    );
  }
}
