import type { Queryable } from '../../platform/db/index.ts';

/**
 * Deleting a person purges that person's delivery payloads at once (spec: General rules); a delivery
 * still waiting to be sent is not sent. Call it inside the deletion's transaction, before emitting the
 * deletion's own events, which must still be delivered.
 */
export async function purgePersonPayloads(tx: Queryable, personId: string): Promise<void> {
  await tx.query(
    `UPDATE webhook_deliveries SET payload = NULL,
            status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END,
            last_error = CASE WHEN status = 'pending' THEN 'payload purged: person deleted' ELSE last_error END,
            next_attempt_at = CASE WHEN status = 'pending' THEN NULL ELSE next_attempt_at END
      WHERE person_id = $1 AND payload IS NOT NULL`,
    [personId],
  );
}
