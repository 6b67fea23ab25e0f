// The one way a domain event is emitted: written to the outbox (domain_events) and fanned out to one
// webhook delivery per matching active subscription, inside the caller's transaction, so an event and
// its deliveries exist exactly when the change that caused it committed.
//
// Which subscriptions see an event: the active ones of the event's location and of every location
// above it, whose `events` hold the event's type or `*`.
import type { Queryable } from './db/index.ts';
import type { EventType } from './event-types.ts';

export { EVENT_TYPES, type EventType } from './event-types.ts';

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

export async function emitDomainEvent(tx: Queryable, event: DomainEvent): Promise<void> {
  await emitDomainEvents(tx, [event]);
}

/**
 * Common table expressions that emit the rows of a CTE named `outgoing` (type, account_id, location_id,
 * person_id, data jsonb, occurred_at, n for the order) as domain events, one webhook delivery per matching
 * subscription, and a NOTIFY that wakes the dispatchers of every instance when (and only if) the
 * transaction commits. The statement must read `woken` (e.g. `SELECT count(*) FROM woken`), or the NOTIFY
 * is not sent. One statement, so an event costs the same round trips alone or in a batch of hundreds.
 */
export const EMIT_OUTGOING_CTES = `
  emitted AS (
    INSERT INTO domain_events (type, account_id, location_id, person_id, data, occurred_at)
    SELECT type, account_id, location_id, person_id, data, occurred_at FROM outgoing ORDER BY n
    RETURNING id, type, location_id, person_id, data, occurred_at
  ),
  queued AS (
    INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, next_attempt_at, created_at)
    SELECT uuid_v7_at(e.occurred_at), s.id, e.type, e.id::text, e.person_id, e.data, 'pending', e.occurred_at, e.occurred_at
      FROM emitted e
      JOIN locations l ON l.id = e.location_id
      JOIN webhook_subscriptions s ON s.location_id = ANY(l.path)
                                  AND s.status = 'active'
                                  AND (s.events @> ARRAY['*'] OR s.events @> ARRAY[e.type])
    RETURNING 1
  ),
  woken AS (
    SELECT pg_notify('latchkey_' || current_schema() || '_${WEBHOOK_DUE_CHANNEL}', '') FROM (SELECT 1 FROM queued LIMIT 1) AS any_queued
  )`;

const EMIT_EVENTS = {
  name: 'domainEvents.emit',
  text: `WITH outgoing AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::jsonb[], $6::timestamptz[])
             WITH ORDINALITY AS o (type, account_id, location_id, person_id, data, occurred_at, n)
  ), ${EMIT_OUTGOING_CTES}
  SELECT count(*) FROM woken`,
};

/** Emits several events in one statement, in the order given. */
export async function emitDomainEvents(tx: Queryable, events: readonly DomainEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.query(EMIT_EVENTS, [
    events.map((e) => e.type),
    events.map((e) => e.accountId),
    events.map((e) => e.locationId),
    events.map((e) => e.personId ?? null),
    events.map((e) => JSON.stringify(e.data)),
    events.map((e) => e.occurredAt),
  ]);
}
