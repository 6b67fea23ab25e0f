// The access log: door activity from gateways, kept once per (gateway, event id), in order of receipt,
// readable through GET /events and sent to webhooks.
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { emitDomainEvent } from '../../platform/domain-events.ts';
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

/** What a gateway sends on `{p}/gateways/{g}/events` (contracts/gateway-mqtt.md). */
export interface GatewayEvent {
  id: string;
  lock_id: number;
  type: DoorEventType;
  occurred_at: string;
  key_id: number | null;
  reason: string | null;
}

export function parseGatewayEvent(payload: unknown): GatewayEvent | null {
  const p = payload as Record<string, unknown>;
  if (!p || typeof p !== 'object') return null;
  if (typeof p.id !== 'string' || p.id === '' || p.id.length > 200) return null;
  if (!Number.isInteger(p.lock_id)) return null;
  if (!(DOOR_EVENT_TYPES as readonly unknown[]).includes(p.type)) return null;
  if (typeof p.occurred_at !== 'string' || !parseClientTimestamp(p.occurred_at)) return null;
  if (p.key_id !== null && p.key_id !== undefined && !Number.isInteger(p.key_id)) return null;
  if (p.reason !== null && p.reason !== undefined && typeof p.reason !== 'string') return null;
  return {
    id: p.id,
    lock_id: p.lock_id as number,
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
   * Stores a gateway's events in order of receipt, in one transaction (under load, the events that
   * arrived while the previous batch was being written). Repeats and events for locks that are not on
   * the gateway are dropped.
   */
  async ingestBatch(gatewayId: number, events: GatewayEvent[]): Promise<Array<AccessEvent | null>> {
    return this.db.transaction(async (tx) => {
      const locks = new Map<number, LockRow | null>();
      const stored: Array<AccessEvent | null> = [];
      for (const event of events) {
        if (!locks.has(event.lock_id)) {
          const [row] = await tx.query<LockRow>(
            `SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id
               FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1 AND k.gateway_id = $2`,
            [event.lock_id, gatewayId],
          );
          locks.set(event.lock_id, row ?? null);
        }
        const lock = locks.get(event.lock_id);
        if (!lock) {
          this.log.warn({ gatewayId, lockId: event.lock_id }, 'event for a lock that is not on this gateway; dropped');
          stored.push(null);
          continue;
        }
        stored.push(await this.ingestOne(tx, gatewayId, lock, event));
      }
      return stored;
    });
  }

  private async ingestOne(tx: Queryable, gatewayId: number, lock: LockRow, event: GatewayEvent): Promise<AccessEvent | null> {
    let person: AccessEvent['person'] = null;
    let key: AccessEvent['key'] = null;
    let reason = event.reason;
    if (event.type === 'access.granted' || event.type === 'access.denied') {
      const [holder] =
        event.key_id === null
          ? []
          : await tx.query<{ key_id: number; key_name: string; person_id: string; person_name: string; person_email: string | null }>(
              `SELECT k.id AS key_id, k.name AS key_name, p.id AS person_id, p.name AS person_name, p.email AS person_email
                 FROM keys k JOIN people p ON p.id = k.person_id WHERE k.id = $1 AND k.account_id = $2`,
              [event.key_id, lock.account_id],
            );
      if (holder) {
        person = { id: holder.person_id, name: holder.person_name, email: holder.person_email };
        key = { id: holder.key_id, name: holder.key_name };
      } else {
        reason = 'unknown_key';
      }
    } else {
      // door.closed and door.left_open take person and key from the access that opened the door.
      const [opening] = await tx.query<{ data: AccessEvent }>(
        `SELECT data FROM access_events WHERE lock_id = $1 AND type = 'access.granted' ORDER BY id DESC LIMIT 1`,
        [lock.id],
      );
      person = opening?.data.person ?? null;
      key = opening?.data.key ?? null;
    }
    return this.record(tx, lock, {
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
    });
  }

  /**
   * Writes one access-log entry and its webhook event in the caller's transaction (null when the
   * gateway already sent this event).
   */
  async record(
    tx: Queryable,
    lock: LockRow,
    entry: {
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
    },
  ): Promise<AccessEvent | null> {
    const event: AccessEvent = {
      id: 0, // the row's id, set below
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
    };
    // The id is drawn first so that the stored Event carries it: one statement per entry.
    const [row] = await tx.query<{ id: number }>(
      `WITH next AS (SELECT nextval(pg_get_serial_sequence('access_events', 'id')) AS id)
       INSERT INTO access_events (id, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, data)
       SELECT next.id, $1, $2, $3, $4, $5, $6, $7, $8, $9, jsonb_set($10::jsonb, '{id}', to_jsonb(next.id)) FROM next
       ON CONFLICT (gateway_id, gateway_event_id) DO NOTHING RETURNING id`,
      [
        lock.account_id,
        lock.location_id,
        lock.id,
        entry.gatewayId,
        entry.gatewayEventId,
        entry.type,
        entry.occurredAt,
        entry.person?.id ?? null,
        entry.key?.id ?? null,
        JSON.stringify(event),
      ],
    );
    if (!row) return null;
    event.id = row.id;
    await emitDomainEvent(tx, {
      type: entry.type as DoorEventType,
      accountId: lock.account_id,
      locationId: lock.location_id,
      personId: entry.person?.id ?? null,
      data: event as unknown as Record<string, unknown>,
      occurredAt: this.clock.now(),
    });
    return event;
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
