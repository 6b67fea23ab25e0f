// The one way a domain event is emitted: written to the outbox (domain_events) and fanned out to one webhook
// delivery per matching active subscription, inside the caller's transaction, so an event and its
// deliveries exist exactly when the change that caused it committed (fan-out-store.ts has the SQL).
import type { PreparedSql, Queryable } from '../../platform/db/index.ts';
import type { EventType } from '../../platform/event-types.ts';
import { fanOutSql, insertOutgoing, type FanOutParts } from './fan-out-store.ts';

export type { FanOutParts };

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

/** Emits several events in one statement, in the order given. */
export async function emitDomainEvents(tx: Queryable, events: readonly DomainEvent[]): Promise<void> {
  if (events.length === 0) return;
  await insertOutgoing(tx, {
    types: events.map((e) => e.type),
    accountIds: events.map((e) => e.accountId),
    locationIds: events.map((e) => e.locationId),
    personIds: events.map((e) => e.personId ?? null),
    data: events.map((e) => JSON.stringify(e.data)),
    occurredAt: events.map((e) => e.occurredAt),
  });
}

/**
 * For a store whose own write emits events in the same statement (the access log: one statement per batch
 * of door events): its CTEs end in `outgoing`, and the statement built here fans them out and reads `woken`
 * itself, so the dispatchers' NOTIFY cannot be forgotten.
 */
export function fanOutStatement(parts: FanOutParts): PreparedSql {
  return fanOutSql(parts);
}
