// The one way a domain event is emitted: written to the outbox (domain_events) inside the caller's
// transaction, so an event exists exactly when the change that caused it committed. Webhook deliveries
// are made from this table.
import type { Queryable } from './db/index.ts';

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
  return (row as { id: number }).id;
}
