// The embedded database has no autovacuum: the statistics job runs ANALYZE after start and again when the
// access log has grown by a tenth, so the planner sees the log as it is (platform/db/statistics.ts, measured
// by the events module: events/statistics.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount, createLock } from '../helpers/fixtures.ts';
import { AccessLogWriter, accessLogStatisticsJob, type AccessLogLock } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { sqlText, type Row, type Sql } from '../../src/platform/db/database.ts';
import { backend, overriding } from '../helpers/database.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** What the planner believes the access log holds (-1 or 0: never analyzed). */
async function plannedRows(): Promise<number> {
  const [row] = await ctx.database.db.query<{ rows: number }>("SELECT reltuples::int AS rows FROM pg_class WHERE relname = 'access_events' AND relnamespace = current_schema()::regnamespace");
  return row?.rows ?? -1;
}

async function writeEvents(lockId: number, n: number): Promise<void> {
  const [lock] = await ctx.database.db.query<AccessLogLock>(
    'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1',
    [lockId],
  );
  const entry = { gatewayId: null, gatewayEventId: null, type: 'door.closed', occurredAt: new Date(), result: 'success' as const, reason: null, source: 'api', apiKey: null, person: null, key: null };
  await new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log).recordBatch(ctx.database.db, Array.from({ length: n }, () => ({ lock: lock as AccessLogLock, entry })));
}

const embeddedOnly = { skip: backend === 'postgres' ? 'the job is for the embedded database; server PostgreSQL analyzes by itself (autovacuum), which would race these counts' : false };

test('analyzes once after start, then only when the access log has grown by a tenth (at least 500 rows)', embeddedOnly, async () => {
  const account = await createAccount(ctx.service);
  const lock = await createLock(ctx.service, account.rootLocationId);
  await writeEvents(lock, 1_000);
  const job = accessLogStatisticsJob(ctx.database.db);
  assert.equal(await job.run(), 1, 'the first run analyzes');
  assert.equal(await plannedRows(), 1_000, 'the planner knows the rows');
  await writeEvents(lock, 400);
  assert.equal(await job.run(), 0, 'grown by less than the threshold: nothing');
  assert.equal(await plannedRows(), 1_000);
  await writeEvents(lock, 200);
  assert.equal(await job.run(), 1, 'grown by 600 rows: analyzed again');
  assert.equal(await plannedRows(), 1_600);
});

test('analyzes table by table, and a statement asked for meanwhile runs before the next table (PGlite holds the thread)', embeddedOnly, async () => {
  const ran: string[] = [];
  let meanwhile: Promise<unknown> | null = null;
  const db = overriding(ctx.database.db, {
    query: async <T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> => {
      const rows = await ctx.database.db.query<T>(sql, params);
      ran.push(sqlText(sql));
      // A request arriving while the first table is analyzed: its statement is asked for from the event loop's next
      // turn, as a socket's data would be.
      if (meanwhile === null && sqlText(sql).startsWith('ANALYZE')) {
        meanwhile = new Promise((resolve) => setImmediate(resolve)).then(() => ctx.database.db.query('SELECT 1')).then(() => ran.push('a request meanwhile'));
      }
      return rows;
    },
  });
  assert.equal(await accessLogStatisticsJob(db).run(), 1);
  await meanwhile;
  const analyzed = ran.filter((text) => text.startsWith('ANALYZE'));
  assert.ok(analyzed.includes('ANALYZE access_events') && analyzed.includes('ANALYZE keys'), analyzed.join(', '));
  assert.ok(ran.indexOf('a request meanwhile') < ran.lastIndexOf(analyzed.at(-1) as string), `the request waited for every table: ${ran.join(' | ')}`);
});

test('the Event payloads of the log and the outbox get no statistics (never filtered on; migration 021), their other columns do', async () => {
  const account = await createAccount(ctx.service);
  await writeEvents(await createLock(ctx.service, account.rootLocationId), 20);
  await ctx.database.db.query('ANALYZE access_events');
  await ctx.database.db.query('ANALYZE domain_events');
  const stats = await ctx.database.db.query<{ table: string; column: string }>(
    `SELECT tablename AS table, attname AS column FROM pg_stats
      WHERE schemaname = current_schema() AND tablename IN ('access_events', 'domain_events') AND attname IN ('data', 'type') ORDER BY 1, 2`,
  );
  assert.deepEqual(stats.map((s) => `${s.table}.${s.column}`), ['access_events.type', 'domain_events.type']);
});

test('after the first, a run analyzes only the tables whose size moved by more than a tenth', embeddedOnly, async () => {
  const ran: string[] = [];
  const db = overriding(ctx.database.db, {
    query: <T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> => {
      ran.push(sqlText(sql));
      return ctx.database.db.query<T>(sql, params);
    },
  });
  const analyzed = () => ran.splice(0).filter((text) => text.startsWith('ANALYZE'));
  const account = await createAccount(ctx.service);
  const lock = await createLock(ctx.service, account.rootLocationId);
  await writeEvents(lock, 500);
  const job = accessLogStatisticsJob(db);
  assert.equal(await job.run(), 1);
  const first = analyzed();
  assert.ok(first.includes('ANALYZE locks') && first.includes('ANALYZE access_events'), `every table at first: ${first.join(', ')}`);
  const [logged] = await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM access_events');
  await writeEvents(lock, Math.max(600, Math.ceil((logged?.n ?? 0) * 0.3)));
  assert.equal(await job.run(), 1);
  const later = analyzed();
  assert.ok(later.includes('ANALYZE access_events') && later.includes('ANALYZE domain_events'), `the log and the outbox grew: ${later.join(', ')}`);
  assert.ok(!later.includes('ANALYZE locks') && !later.includes('ANALYZE locations'), `unchanged tables are left alone: ${later.join(', ')}`);
});

test('the embedded database samples for statistics as PostgreSQL did until 8.4 (default_statistics_target 10): a histogram of 10 buckets', embeddedOnly, async () => {
  const account = await createAccount(ctx.service);
  await writeEvents(await createLock(ctx.service, account.rootLocationId), 300);
  await ctx.database.db.query('ANALYZE access_events');
  const [row] = await ctx.database.db.query<{ bounds: number }>(
    `SELECT array_length(histogram_bounds::text::text[], 1) AS bounds FROM pg_stats
      WHERE schemaname = current_schema() AND tablename = 'access_events' AND attname = 'id'`,
  );
  assert.equal(row?.bounds, 11, 'ten buckets (a hundred at the default of 100)');
});
