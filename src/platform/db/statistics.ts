// Planner statistics for the embedded database. Server PostgreSQL keeps them by itself (autovacuum's
// ANALYZE); PGlite has no autovacuum and does not count changes per table (pg_stat_user_tables stays at
// zero), so without this job its planner never learns that the access log grew from a few rows to
// millions and keeps plans made for an empty table: on a log of 7,000 events, a page of GET /v1/events
// read every event of the location and sorted them (9 ms) instead of walking the id order (0.3 ms).
// The growth is measured by the module that owns the table that grows (events/statistics.ts).
import type { Job } from '../jobs.ts';
import type { Database } from './database.ts';

/** The table growing by this share since the last ANALYZE (or by GROWTH_ROWS, whichever is more) asks for another. */
const GROWTH_SHARE = 0.1;
const GROWTH_ROWS = 500;

/**
 * The service's tables (the schema's, not the catalogs), each analyzed in a statement of its own: all of them ($1),
 * or those whose size moved by more than a tenth since their last ANALYZE (its page count, relpages, against the
 * file's), never analyzed ones included. PGlite counts no changes per table, and analyzing the 100,000 keys of a
 * site that added none took 210–270 ms each time the log grew (bench/RESULTS.md, 2026-11-28).
 */
const TABLES = `SELECT quote_ident(relname) AS name FROM pg_class
                 WHERE relkind IN ('r', 'p') AND relnamespace = current_schema()::regnamespace
                   AND ($1 OR relpages = 0 OR abs(pg_relation_size(oid) / current_setting('block_size')::int - relpages) > relpages * ${GROWTH_SHARE})
                 ORDER BY relname`;

/**
 * ANALYZE of the embedded database's tables once after start; then, whenever the table that grows has grown by a
 * tenth (`rows`: its size, or a measure of it such as its highest id; autovacuum's default threshold), of the
 * tables whose size moved (TABLES). PGlite answers nothing else meanwhile, so it is rare (never on a timer alone)
 * and made table by table with a turn of the event loop between them: one ANALYZE of the whole database held the
 * service's thread for about a second on a site of 100,000 keys, and every access decision waited behind it (a
 * p99 of 986 ms, bench/RESULTS.md, 2026-11-28); a table's takes tens of milliseconds (a sample of 3,000 rows:
 * EMBEDDED_SETTINGS in pglite.ts).
 */
export function embeddedStatisticsJob(db: Database, measure: () => Promise<number>): Job {
  let analyzedAt: number | null = null;
  return {
    name: 'embedded-statistics',
    everySeconds: 15, // a cheap check (the measure); the ANALYZE itself is rare
    async run() {
      const rows = await measure();
      if (analyzedAt !== null && rows - analyzedAt < Math.max(GROWTH_ROWS, analyzedAt * GROWTH_SHARE)) return 0;
      for (const { name } of await db.query<{ name: string }>(TABLES, [analyzedAt === null])) {
        await db.query(`ANALYZE ${name}`);
        await new Promise((resolve) => setImmediate(resolve)); // what waited for PGlite goes first
      }
      analyzedAt = rows;
      return 1;
    },
  };
}
