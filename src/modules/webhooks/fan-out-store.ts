// The SQL of the webhook fan-out: domain events written to the outbox (domain_events) and one webhook
// delivery per matching active subscription, in the statement that caused them, so an event and its
// deliveries exist exactly when that change commits.
//
// Which subscriptions see an event: the active ones of the event's location and of every location above
// it, whose `events` hold the event's type or `*`.
import { WEBHOOK_DUE_CHANNEL } from '../../platform/channels.ts';
import type { PreparedSql, Queryable } from '../../platform/db/index.ts';
import { PURGE_BATCH } from '../../platform/jobs.ts';

/**
 * Emits the rows of a CTE named `outgoing` (type, account_id, location_id, person_id, data jsonb, occurred_at,
 * n for the order), queues their deliveries, and in `woken` NOTIFYs the dispatchers of every instance when
 * (and only if) the transaction commits with a delivery queued. `woken` is a plain SELECT: PostgreSQL runs
 * it only if the statement reads it, which fanOutSql's answer does; never spliced by hand for that reason.
 */
const FAN_OUT_CTES = `
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

/** A statement of another store that emits domain events as part of its own write (see fanOutSql). */
export interface FanOutParts {
  /** The prepared statement's name (unique per text). */
  name: string;
  /** The caller's CTEs, without WITH, one of them named `outgoing` with the columns FAN_OUT_CTES reads. */
  ctes: string;
  /** The statement's answer: a SELECT over the caller's own CTEs (never over the fan-out's). */
  answer: string;
}

/**
 * The whole statement around a caller's `outgoing`: its CTEs, the fan-out's, then its answer, gated on
 * reading `woken` so that no caller can leave the NOTIFY out. The gate is an uncorrelated subquery, which
 * the planner makes a one-time filter, evaluated once before any row even when the answer has none. The
 * answer is MATERIALIZED so that its own conditions stay inside it: pulled up, a `WHERE false` of the
 * answer would be tested first and the gate never run (test/webhooks/fan-out.test.ts).
 */
export function fanOutSql(parts: FanOutParts): PreparedSql {
  if (!/(^|[\s,])outgoing AS \(/.test(parts.ctes)) throw new Error(`${parts.name}: the fan-out needs a CTE named outgoing`);
  return {
    name: parts.name,
    text: `WITH ${parts.ctes},${FAN_OUT_CTES},
  answer AS MATERIALIZED (${parts.answer})
  SELECT answer.* FROM answer WHERE (SELECT count(*) FROM woken) >= 0`,
  };
}

/** Domain events as the columns of `outgoing`, one array each, in the order given. */
export interface OutgoingColumns {
  types: string[];
  accountIds: number[];
  locationIds: number[];
  personIds: Array<string | null>;
  /** Each event's data as JSON text. */
  data: string[];
  occurredAt: Date[];
}

const EMIT_EVENTS = fanOutSql({
  name: 'domainEvents.emit',
  ctes: `outgoing AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::jsonb[], $6::timestamptz[])
             WITH ORDINALITY AS o (type, account_id, location_id, person_id, data, occurred_at, n)
  )`,
  answer: 'SELECT count(*) AS emitted FROM outgoing',
});

/** One statement, so an event costs the same round trips alone or in a batch of hundreds. */
export async function insertOutgoing(tx: Queryable, rows: OutgoingColumns): Promise<void> {
  await tx.query(EMIT_EVENTS, [rows.types, rows.accountIds, rows.locationIds, rows.personIds, rows.data, rows.occurredAt]);
}

// ---- the outbox's personal data and retention -----------------------------------------------------
//
// The outbox has no reader once an event is fanned out, apart from the listen streams (listen.ts), which read
// each row within seconds of its commit. An event is fanned out in the very statement that writes it, so no
// committed row waits for its deliveries: a purge never loses one, and a purged row is never streamed.

/**
 * A deleted person's events keep their type, ids and time, and lose their data: `data` becomes JSON null
 * (the column is NOT NULL), which the listen streams skip. In the person's deletion transaction, before its
 * own events are emitted; and again by the sweep (person-data.ts), sparing `keepTypes`. Returns how many.
 */
export async function purgePersonEventData(tx: Queryable, personIds: string[], keepTypes: readonly string[] = []): Promise<number> {
  const rows = await tx.query(
    `UPDATE domain_events SET data = 'null'::jsonb WHERE person_id = ANY($1::uuid[]) AND data <> 'null'::jsonb AND type <> ALL($2::text[]) RETURNING id`,
    [personIds, keepTypes],
  );
  return rows.length;
}

/**
 * Deletes the oldest events, those of the first PURGE_BATCH ids whose time is before `cutoff`; returns
 * how many. The table has no index on time, so it walks the primary key from its start (the oldest rows
 * written) rather than scanning the whole outbox. An event whose time lies after it was written (a door whose
 * clock runs ahead) is kept until its own time is past the cutoff: a full batch of them at the start would
 * hold the purge back until then.
 */
export async function deleteDomainEventsBefore(db: Queryable, cutoff: Date): Promise<number> {
  const rows = await db.query(
    `DELETE FROM domain_events
      WHERE id IN (SELECT id FROM (SELECT id, occurred_at FROM domain_events ORDER BY id LIMIT ${PURGE_BATCH}) AS head WHERE occurred_at < $1)
      RETURNING id`,
    [cutoff],
  );
  return rows.length;
}
