// The one way a domain event is emitted: written to the outbox (domain_events) and fanned out to one
// webhook delivery per matching active subscription, inside the caller's transaction, so an event and
// its deliveries exist exactly when the change that caused it committed.
//
// Which subscriptions see an event: the active ones of the event's location and of every location
// above it, whose `events` hold the event's type or `*`.
import type { Queryable } from './db/index.ts';
import { uuidv7 } from './ids.ts';

export const EVENT_TYPES = [
  'access.granted',
  'access.denied',
  'door.closed',
  'door.left_open',
  'key.activated',
  'key.revoked',
  'key.issued',
  'unlock.failed',
  'lock.online',
  'lock.offline',
  'person.created',
  'person.updated',
  'person.deleted',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** NOTIFY channel (see Database.channel) raised when deliveries become due. */
export const WEBHOOK_DUE_CHANNEL = 'webhook_due';

export interface DomainEvent {
  type: EventType;
  accountId: number;
  /** The location the event belongs to (the person's, the lock's, …): it decides who may see it. */
  locationId: number;
  /** Set when the event carries a person's data, so that deleting the person can purge it. */
  personId?: string | null;
  data: Record<string, unknown>;
  occurredAt: Date;
}

export async function emitDomainEvent(tx: Queryable, event: DomainEvent): Promise<number> {
  const [row] = await tx.query<{ id: number }>(
    `INSERT INTO domain_events (type, account_id, location_id, person_id, data, occurred_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6) RETURNING id`,
    [event.type, event.accountId, event.locationId, event.personId ?? null, JSON.stringify(event.data), event.occurredAt],
  );
  const eventId = (row as { id: number }).id;
  const subscriptions = await tx.query<{ id: string }>(
    `SELECT s.id FROM webhook_subscriptions s
      WHERE s.status = 'active'
        AND s.location_id = ANY((SELECT path FROM locations WHERE id = $1)::bigint[])
        AND (s.events @> ARRAY['*'] OR s.events @> ARRAY[$2::text])`,
    [event.locationId, event.type],
  );
  if (subscriptions.length > 0) {
    await tx.query(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, next_attempt_at, created_at)
       SELECT d.id, d.subscription_id, $3, $4, $5, $6::jsonb, 'pending', $7, $7
         FROM unnest($1::uuid[], $2::uuid[]) AS d (id, subscription_id)`,
      [
        subscriptions.map(() => uuidv7(event.occurredAt)),
        subscriptions.map((s) => s.id),
        event.type,
        String(eventId),
        event.personId ?? null,
        JSON.stringify(event.data),
        event.occurredAt,
      ],
    );
    // Wakes the dispatchers of every instance when (and only if) this transaction commits.
    await tx.query(`SELECT pg_notify('latchkey_' || current_schema() || '_' || $1, '')`, [WEBHOOK_DUE_CHANNEL]);
  }
  return eventId;
}
