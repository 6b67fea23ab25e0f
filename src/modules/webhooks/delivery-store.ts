// The SQL of sending webhook deliveries: the work queue's claim, the outcome of attempts, the failure streak
// and auto-pause of subscriptions, payload retention. (Subscriptions' own CRUD is the service's.)
import type { Queryable } from '../../platform/db/index.ts';
import { PURGE_BATCH } from '../../platform/jobs.ts';
import { dueAndUnleased, type Lease } from '../../platform/work-queue.ts';
import type { DeliveryToSend } from './sender.ts';

/**
 * The work queue's claim (platform/work-queue.ts): due deliveries of active subscriptions whose failure
 * streak began after `streakLimit`, oldest due first, the attempt counted; with the URL and sealed secret
 * to send them. The streak test holds even if another instance's pause has not committed yet. A delivery
 * without a payload (purged) is never claimed: a body with `data: null` is never sent.
 * Subscriptions are excluded through NOT IN (a hashed filter, never turned into a join) so the plan always
 * walks the due index in order and stops at the limit; a join was planned as a scan and sort of every
 * pending row (4 ms a claim at 5,000 pending, 0.4 ms this way).
 */
export function claimDueDeliveries(db: Queryable, lease: Lease, streakLimit: Date): Promise<DeliveryToSend[]> {
  return db.query<DeliveryToSend>(CLAIM_DUE, [lease.now, lease.until, streakLimit, lease.batchSize]);
}

// Named, so prepared once per connection: they run for every few dozen deliveries (planning the claim each
// time cost more than running it).
const CLAIM_DUE = {
  name: 'webhookDeliveries.claimDue',
  text: `WITH claimed AS (
       UPDATE webhook_deliveries SET claimed_until = $2, attempt = attempt + 1
        WHERE id IN (SELECT d.id FROM webhook_deliveries d
                      WHERE ${dueAndUnleased('d')} AND d.payload IS NOT NULL
                        AND d.subscription_id NOT IN (SELECT s.id FROM webhook_subscriptions s WHERE s.status <> 'active' OR s.failing_since <= $3)
                      ORDER BY d.next_attempt_at LIMIT $4 FOR UPDATE OF d SKIP LOCKED)
        RETURNING id, subscription_id, event_type, payload, attempt, created_at)
     SELECT c.*, s.url, s.secret_ciphertext FROM claimed c JOIN webhook_subscriptions s ON s.id = c.subscription_id`,
};

/**
 * Extends the claims this instance still holds (attempts under way or not yet recorded). A recorded outcome
 * clears the claim, and a cleared one is not taken again.
 */
export async function renewDeliveryClaims(db: Queryable, ids: string[], until: Date): Promise<void> {
  await db.query(
    {
      name: 'webhookDeliveries.renewClaims',
      text: `UPDATE webhook_deliveries SET claimed_until = $2 WHERE id = ANY($1::uuid[]) AND status = 'pending' AND claimed_until IS NOT NULL`,
    },
    [ids, until],
  );
}

/** Deliveries waiting to be sent (or sent again), and when the oldest of them was made: read at scrape time. */
export async function pendingSummary(db: Queryable): Promise<{ count: number; oldest: Date | null }> {
  const [row] = await db.query<{ count: number; oldest: Date | null }>({
    name: 'webhookDeliveries.pendingSummary',
    text: `SELECT count(*)::int AS count, min(created_at) AS oldest FROM webhook_deliveries WHERE status = 'pending'`,
  });
  return { count: row?.count ?? 0, oldest: row?.oldest ?? null };
}

/**
 * Deliveries of a paused subscription stop: their pending retries fail. One whose attempt is under way (its claim
 * runs) is left to that attempt: a 2xx then reads `delivered`, as the receiver has it, and a failure sets it
 * pending again, for the next run of this (every second) to fail. A claim whose instance died runs out in 20 s.
 */
export async function failPendingOfPausedSubscriptions(db: Queryable, now: Date): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries d SET status = 'failed', last_error = 'subscription paused', next_attempt_at = NULL
       FROM webhook_subscriptions s
      WHERE d.subscription_id = s.id AND s.status = 'paused' AND d.status = 'pending'
        AND (d.claimed_until IS NULL OR d.claimed_until <= $1)`,
    [now],
  );
}

/**
 * An attempt's outcome is recorded only on the delivery as the attempt claimed it: still `pending`, at the
 * attempt's number. A delivery ended meanwhile (its person deleted and its payload purged, its subscription
 * paused) keeps its end; a delivery claimed again by another instance (this claim's lease ran out) is left to
 * that attempt. The outcome is then dropped, the subscription's streak included.
 */
const CLAIMED_BY_THE_ATTEMPT = `status = 'pending'`;

/** Successes of one batch, and the end of their subscriptions' failure streaks: one statement, so no transaction. */
export async function recordDelivered(db: Queryable, delivered: Array<{ id: string; attempt: number; status: number | null }>, now: Date): Promise<void> {
  await db.query(RECORD_DELIVERED, [delivered.map((d) => d.id), delivered.map((d) => d.attempt), delivered.map((d) => d.status), now]);
}

const RECORD_DELIVERED = {
  name: 'webhookDeliveries.recordDelivered',
  text: `WITH done AS (
       UPDATE webhook_deliveries w SET status = 'delivered', response_status = d.status, last_error = NULL, delivered_at = $4,
              next_attempt_at = NULL, claimed_until = NULL
         FROM unnest($1::uuid[], $2::int[], $3::int[]) AS d (id, attempt, status)
        WHERE w.id = d.id AND w.attempt = d.attempt AND w.${CLAIMED_BY_THE_ATTEMPT}
       RETURNING w.subscription_id)
     UPDATE webhook_subscriptions SET failing_since = NULL, last_delivery_at = $4 WHERE id IN (SELECT subscription_id FROM done)`,
};

export interface DeliveryFailure {
  id: string;
  /** The attempt's number, as its claim counted it. */
  attempt: number;
  subscriptionId: string;
  /** `pending` with the next attempt's time, or the end state with none. */
  status: string;
  nextAttemptAt: Date | null;
  responseStatus: number | null;
  error: string | null;
}

/**
 * A failed attempt; the first failure after a success starts the subscription's streak. Only on the delivery
 * as the attempt claimed it (CLAIMED_BY_THE_ATTEMPT): a delivery ended while the attempt was under way (its
 * payload purged) is never set back to pending, so never retried.
 */
export async function recordDeliveryFailure(tx: Queryable, failure: DeliveryFailure, now: Date): Promise<void> {
  const recorded = await tx.query(
    `UPDATE webhook_deliveries SET status = $2, response_status = $3, last_error = $4, next_attempt_at = $5, claimed_until = NULL
      WHERE id = $1 AND attempt = $6 AND ${CLAIMED_BY_THE_ATTEMPT} RETURNING id`,
    [failure.id, failure.status, failure.responseStatus, failure.error, failure.nextAttemptAt, failure.attempt],
  );
  if (recorded.length === 0) return;
  // last_delivery_at stays the last success: beside failing_since it says when the endpoint last worked.
  await tx.query(`UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, $2) WHERE id = $1`, [
    failure.subscriptionId,
    now,
  ]);
}

/** A cheap look (partial index) before the pause's transaction: is any active streak at least that old? */
export async function anyStreakSince(db: Queryable, streakLimit: Date): Promise<boolean> {
  const rows = await db.query(`SELECT 1 FROM webhook_subscriptions WHERE status = 'active' AND failing_since <= $1 LIMIT 1`, [streakLimit]);
  return rows.length > 0;
}

export interface PausedSubscription {
  id: string;
  account_id: number;
  url: string;
  /** The dashboard user who made the subscription's API key, when known. */
  email: string | null;
}

/**
 * Pauses every active subscription whose streak began at or before `streakLimit` (its pending deliveries are then
 * failed by failPendingOfPausedSubscriptions, which the dispatcher runs right after). The conditional UPDATE pauses
 * each once even when several instances run it together: the second waits for the first's row lock and then finds
 * it no longer active.
 */
export async function pauseStreaksSince(tx: Queryable, streakLimit: Date): Promise<PausedSubscription[]> {
  const rows = await tx.query<PausedSubscription>(
    `WITH paused AS (
       UPDATE webhook_subscriptions SET status = 'paused'
        WHERE status = 'active' AND failing_since <= $1
        RETURNING id, account_id, url, created_by_key_id)
     SELECT p.id, p.account_id, p.url, u.email
       FROM paused p
       LEFT JOIN api_keys k ON k.id = p.created_by_key_id
       LEFT JOIN dashboard_users u ON u.id = k.created_by_user_id`,
    [streakLimit],
  );
  return rows;
}

/** Nulls the payloads of ended deliveries made before `cutoff`, at most PURGE_BATCH a call; returns how many. */
export async function purgePayloadsBefore(db: Queryable, cutoff: Date): Promise<number> {
  const rows = await db.query(
    `UPDATE webhook_deliveries SET payload = NULL
      WHERE id IN (SELECT id FROM webhook_deliveries WHERE payload IS NOT NULL AND created_at < $1 AND status <> 'pending' LIMIT ${PURGE_BATCH})
      RETURNING id`,
    [cutoff],
  );
  return rows.length;
}

/**
 * Deleting a person purges that person's delivery payloads at once (spec: General rules); a delivery
 * still waiting to be sent is not sent. In the deletion's transaction, before emitting the deletion's own
 * events, which must still be delivered; and again by the sweep (person-data.ts), sparing `keepTypes`.
 * Returns how many it purged.
 */
export async function purgePersonPayloads(tx: Queryable, personIds: string[], keepTypes: readonly string[] = []): Promise<number> {
  const rows = await tx.query(
    `UPDATE webhook_deliveries SET payload = NULL,
            status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
            last_error = CASE WHEN status = 'pending' THEN 'payload purged: person deleted' ELSE last_error END,
            next_attempt_at = CASE WHEN status = 'pending' THEN NULL ELSE next_attempt_at END
      WHERE person_id = ANY($1::uuid[]) AND payload IS NOT NULL AND event_type <> ALL($2::text[])
      RETURNING id`,
    [personIds, keepTypes],
  );
  return rows.length;
}
