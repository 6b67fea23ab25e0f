// The SQL of webhook subscriptions and of their delivery records as the API shows them (the dispatcher's
// own queries are elsewhere). Subscriptions are read inside the caller's location.
import type { Queryable } from '../../platform/db/index.ts';
import type { Delivery, Subscription } from './schemas.ts';

type Timestamps<T, K extends keyof T> = Omit<T, K> & { [P in K]: null extends T[P] ? Date | null : Date };

/** A subscription as stored: the answer's fields with its times as dates, its owner and its sealed secret. */
export type SubscriptionRow = Timestamps<Subscription, 'failing_since' | 'last_delivery_at' | 'created_at'> & {
  account_id: number;
  location_id: number;
  secret_ciphertext: string;
};

/** A delivery as stored: the answer's fields with its times as dates, and the person its payload names. */
export type DeliveryRow = Timestamps<Delivery, 'next_attempt_at' | 'delivered_at' | 'created_at'> & { person_id: string | null };

const DELIVERY_COLUMNS = `id, subscription_id, event_type, event_id, person_id, status, attempt, response_status, last_error,
  next_attempt_at, delivered_at, created_at, payload`;

// ---- subscriptions ------------------------------------------------------------------------------

/** A location's subscriptions after `afterId` in id order. */
export async function listSubscriptions(db: Queryable, locationId: number, afterId: string | null, limit: number): Promise<SubscriptionRow[]> {
  return db.query<SubscriptionRow>(
    'SELECT * FROM webhook_subscriptions WHERE location_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3',
    [locationId, afterId, limit],
  );
}

/** A subscription of this location, or null. */
export async function findSubscription(db: Queryable, locationId: number, id: string): Promise<SubscriptionRow | null> {
  const [row] = await db.query<SubscriptionRow>('SELECT * FROM webhook_subscriptions WHERE id = $1 AND location_id = $2', [id, locationId]);
  return row ?? null;
}

/** Serialises, until the end of the transaction, the changes that count a location's active subscriptions. */
export async function lockLocationSubscriptions(tx: Queryable, locationId: number): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`webhooks:${locationId}`]);
}

export async function countActiveSubscriptions(tx: Queryable, locationId: number): Promise<number> {
  const [row] = await tx.query<{ active: number }>(
    `SELECT count(*)::int AS active FROM webhook_subscriptions WHERE location_id = $1 AND status = 'active'`,
    [locationId],
  );
  return row?.active ?? 0;
}

export async function insertSubscription(
  tx: Queryable,
  subscription: Pick<SubscriptionRow, 'id' | 'account_id' | 'location_id' | 'url' | 'events' | 'description' | 'secret_ciphertext' | 'created_at'> & {
    createdByKeyId: number;
  },
): Promise<SubscriptionRow> {
  const s = subscription;
  const [row] = await tx.query<SubscriptionRow>(
    `INSERT INTO webhook_subscriptions (id, account_id, location_id, url, events, description, status, secret_ciphertext, created_by_key_id, created_at)
     VALUES ($1, $2, $3, $4, $5::text[], $6, 'active', $7, $8, $9) RETURNING *`,
    [s.id, s.account_id, s.location_id, s.url, s.events, s.description, s.secret_ciphertext, s.createdByKeyId, s.created_at],
  );
  return row as SubscriptionRow;
}

/** Changes the fields given (null: unchanged); `resuming` clears the failure streak. */
export async function updateSubscription(
  tx: Queryable,
  id: string,
  changes: { url: string | null; events: string[] | null; description: string | null; status: Subscription['status'] | null; resuming: boolean },
): Promise<SubscriptionRow> {
  const [row] = await tx.query<SubscriptionRow>(
    `UPDATE webhook_subscriptions
        SET url = COALESCE($2, url), events = COALESCE($3::text[], events), description = COALESCE($4, description),
            status = COALESCE($5, status), failing_since = CASE WHEN $6 THEN NULL ELSE failing_since END
      WHERE id = $1 RETURNING *`,
    [id, changes.url, changes.events, changes.description, changes.status, changes.resuming],
  );
  return row as SubscriptionRow;
}

// ---- delivery records ---------------------------------------------------------------------------

/** A subscription's deliveries, newest first: ids are time-ordered (UUIDv7), so keyset on id descending. */
export async function listDeliveries(
  db: Queryable,
  subscriptionId: string,
  filter: { beforeId: string | null; status: string | null; eventType: string | null; since: Date | null },
  limit: number,
): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
      WHERE subscription_id = $1 AND ($2::uuid IS NULL OR id < $2::uuid)
        AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR event_type = $4) AND ($5::timestamptz IS NULL OR created_at >= $5)
      ORDER BY id DESC LIMIT $6`,
    [subscriptionId, filter.beforeId, filter.status, filter.eventType, filter.since, limit],
  );
}

export async function findDelivery(db: Queryable, subscriptionId: string, id: string): Promise<DeliveryRow | null> {
  const [row] = await db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1 AND subscription_id = $2`, [
    id,
    subscriptionId,
  ]);
  return row ?? null;
}

/** A pending delivery of `original`'s type, person and payload, due at once; its `event_id` is the original's id. */
export async function insertRedelivery(db: Queryable, id: string, original: DeliveryRow, now: Date): Promise<DeliveryRow> {
  const [row] = await db.query<DeliveryRow>(
    `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, next_attempt_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'pending', $7, $7) RETURNING ${DELIVERY_COLUMNS}`,
    [id, original.subscription_id, original.event_type, original.id, original.person_id, JSON.stringify(original.payload), now],
  );
  return row as DeliveryRow;
}

/** The record of a ping already attempted once: delivered or failed, never retried. */
export async function insertPing(
  db: Queryable,
  ping: Pick<DeliveryRow, 'id' | 'subscription_id' | 'payload' | 'response_status' | 'last_error' | 'delivered_at' | 'created_at'> & { ok: boolean },
): Promise<DeliveryRow> {
  const [row] = await db.query<DeliveryRow>(
    `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, attempt, response_status, last_error, delivered_at, created_at)
     VALUES ($1, $2, 'ping', $3, $4::jsonb, $5, 1, $6, $7, $8, $9) RETURNING ${DELIVERY_COLUMNS}`,
    [ping.id, ping.subscription_id, ping.id, JSON.stringify(ping.payload), ping.ok ? 'delivered' : 'failed', ping.response_status, ping.last_error, ping.delivered_at, ping.created_at],
  );
  return row as DeliveryRow;
}

// Listen streams (listen.ts): the domain events they are fed from and the keys they belong to.

/** A domain event as a listen stream reads it; ids as text (bigint). */
export interface ListenedEventRow {
  id: string;
  type: string;
  account_id: string;
  /** Its location's path, root first, as text. */
  path: string[];
  data: unknown;
  occurred_at: Date;
}

/** The highest domain event id handed out so far (0 without any). */
export async function newestDomainEventId(db: Queryable): Promise<bigint> {
  const [row] = await db.query<{ id: string | null }>('SELECT max(id)::text AS id FROM domain_events');
  return BigInt(row?.id ?? 0);
}

/**
 * The domain events of these accounts with an id above `after`, in id order, at most `limit`; not those whose
 * data was purged (JSON null: their person was deleted), which are never streamed.
 */
export async function domainEventsAfter(db: Queryable, after: bigint, accountIds: readonly number[], limit: number): Promise<ListenedEventRow[]> {
  return db.query<ListenedEventRow>(
    `SELECT e.id::text AS id, e.type, e.account_id::text AS account_id, l.path::text[] AS path, e.data, e.occurred_at
       FROM domain_events e JOIN locations l ON l.id = e.location_id
      WHERE e.id > $1 AND e.account_id = ANY($2::bigint[]) AND e.data <> 'null'::jsonb
      ORDER BY e.id LIMIT $3`,
    [after.toString(), accountIds, limit],
  );
}

/**
 * Which of these API keys are still live (not revoked, not expired), hold `webhooks:manage` and belong to an
 * account that is not a reseller (every request of a reseller's key answers 403 not_available).
 */
export async function keysThatMayListen(db: Queryable, apiKeyIds: readonly number[], now: Date): Promise<Set<number>> {
  const rows = await db.query<{ id: string }>(
    `SELECT k.id::text AS id FROM api_keys k
       JOIN locations l ON l.id = k.location_id
       JOIN accounts a ON a.id = l.account_id
      WHERE k.id = ANY($1::bigint[]) AND k.revoked_at IS NULL AND k.expires_at > $2 AND 'webhooks:manage' = ANY(k.scopes)
        AND NOT a.reseller`,
    [apiKeyIds, now],
  );
  return new Set(rows.map((row) => Number(row.id)));
}
