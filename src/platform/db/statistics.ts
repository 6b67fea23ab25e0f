// Planner statistics for the embedded database. Server PostgreSQL keeps them by itself (autovacuum's
// ANALYZE); PGlite has no autovacuum and does not count changes per table (pg_stat_user_tables stays at
// zero), so without this job its planner never learns that the access log grew from a few rows to
// millions and keeps plans made for an empty table: on a log of 7,000 events, a page of GET /v1/events
// read every event of the location and sorted them (9 ms) instead of walking the id order (0.3 ms).
import type { Job } from '../jobs.ts';
import type { Database } from './database.ts';

/** A table is analyzed again when its size moved by this share since its last ANALYZE (autovacuum's default). */
const MOVED_SHARE = 0.1;

/**
 * The schema's append-only logs, analyzed again only when their size doubled, and from a sample of 900 rows
 * (LOG_STATISTICS_TARGET). The door events of a busy site grow them by a tenth every few seconds, and ANALYZE reads
 * a page for each row it samples: 30–90 ms for the access log's 3,000 pages at the embedded default of 3,000 rows,
 * 10–13 ms at 900 (bench/RESULTS.md, 2026-11-28), during which PGlite answers no other statement. What the planner
 * needs of a log hardly changes: its newest ids and times beyond the last histogram are read from their index
 * (PostgreSQL's get_actual_variable_range), and the share of each location or lock in it moves slowly. Doubling
 * gives a log a few dozen ANALYZEs in its life.
 */
const APPEND_ONLY_LOGS: readonly string[] = ['access_events', 'domain_events', 'webhook_deliveries', 'request_log'];
/** default_statistics_target while a log is analyzed: 300 rows sampled per unit, three MCVs and histogram buckets. */
const LOG_STATISTICS_TARGET = 3;

/**
 * The service's tables (the schema's, not the catalogs) whose size in pages moved from what their last ANALYZE
 * recorded (relpages, kept across restarts) by more than a tenth, or a log ($1) by more than its size: a table
 * never analyzed has relpages 0 and is analyzed once it holds a page. The sizes are read from the files, a
 * system call a table: PGlite counts no changes per table.
 */
const MOVED_TABLES = `SELECT quote_ident(relname) AS name, relname = ANY($1::text[]) AS log FROM pg_class,
                             LATERAL (SELECT pg_relation_size(oid) / current_setting('block_size')::int AS pages) size
                       WHERE relkind IN ('r', 'p') AND relnamespace = current_schema()::regnamespace
                         AND abs(size.pages - relpages) > relpages * CASE WHEN relname = ANY($1::text[]) THEN 1 ELSE ${MOVED_SHARE} END
                       ORDER BY relname`;

/**
 * ANALYZE of the embedded database's tables whose size moved (MOVED_TABLES), checked every 15 s. PGlite answers
 * nothing else meanwhile, so it is rare and made table by table with a turn of the event loop between them: one
 * ANALYZE of the whole database held PGlite (then on the service's thread) for about a second on a site of 100,000
 * keys, and every access decision waited behind it (a p99 of 986 ms, bench/RESULTS.md, 2026-11-28); a table's
 * takes tens of milliseconds (a sample of 3,000 rows: EMBEDDED_SETTINGS in pglite.ts). Returns how many tables it
 * analyzed.
 */
export function embeddedStatisticsJob(db: Database): Job {
  return {
    name: 'embedded-statistics',
    everySeconds: 15,
    async run() {
      const moved = await db.query<{ name: string; log: boolean }>(MOVED_TABLES, [APPEND_ONLY_LOGS]);
      for (const { name, log } of moved) {
        if (!log) await db.query(`ANALYZE ${name}`);
        else {
          await db.transaction(async (tx) => {
            await tx.query(`SET LOCAL default_statistics_target = ${LOG_STATISTICS_TARGET}`);
            await tx.query(`ANALYZE ${name}`);
          });
        }
        await new Promise((resolve) => setImmediate(resolve)); // what waited for PGlite goes first
      }
      return moved.length;
    },
  };
}
