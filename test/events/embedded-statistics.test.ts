// The embedded database has no autovacuum: the statistics job runs ANALYZE of a table whose size moved by a
// tenth, or of an append-only log that doubled, so the planner sees the tables as they are
// (platform/db/statistics.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount, createLock } from '../helpers/fixtures.ts';
import { AccessLogWriter, type AccessLogLock } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { sqlText, type Row, type Sql } from '../../src/platform/db/database.ts';
import { embeddedStatisticsJob } from '../../src/platform/db/statistics.ts';
import { backend, overriding, withFaults } from '../helpers/database.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

async function writeEvents(lockId: number, n: number): Promise<void> {
  const [lock] = await ctx.database.db.query<AccessLogLock>(
    'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1',
    [lockId],
  );
  const entry = { gatewayId: null, gatewayEventId: null, type: 'door.closed', occurredAt: new Date(), result: 'success' as const, reason: null, source: 'api', apiKey: null, person: null, key: null };
  await new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log).recordBatch(ctx.database.db, Array.from({ length: n }, () => ({ lock: lock as AccessLogLock, entry })));
}

const embeddedOnly = { skip: backend === 'postgres' ? 'the job is for the embedded database; server PostgreSQL analyzes by itself (autovacuum), which would race these counts' : false };

/** The tables one run of the job analyzed, in order (on the database or in a transaction of its own). */
async function analyzedByOneRun(): Promise<string[]> {
  const ran: string[] = [];
  const handled = await embeddedStatisticsJob(withFaults(ctx.database.db, ({ text }) => void ran.push(text))).run();
  const analyzed = ran.filter((text) => text.startsWith('ANALYZE ')).map((text) => text.slice('ANALYZE '.length));
  assert.equal(handled, analyzed.length, 'the run counts the tables it analyzed');
  return analyzed;
}

/** Buckets of a column's histogram (its bounds less one). */
async function histogramBuckets(table: string, column: string): Promise<number> {
  const [row] = await ctx.database.db.query<{ bounds: number }>(
    `SELECT array_length(histogram_bounds::text::text[], 1) AS bounds FROM pg_stats
      WHERE schemaname = current_schema() AND tablename = $1 AND attname = $2`,
    [table, column],
  );
  return (row?.bounds ?? 1) - 1;
}

/** Pages of a table's file, and what its last ANALYZE recorded. */
async function pages(table: string): Promise<{ now: number; analyzed: number; rows: number }> {
  const [row] = await ctx.database.db.query<{ now: number; analyzed: number; rows: number }>(
    `SELECT (pg_relation_size(oid) / 8192)::int AS now, relpages AS analyzed, reltuples::int AS rows FROM pg_class
      WHERE relname = $1 AND relnamespace = current_schema()::regnamespace`,
    [table],
  );
  return row as { now: number; analyzed: number; rows: number };
}

test('a table is analyzed when its size moved by more than a tenth since its last ANALYZE, and left alone until then', embeddedOnly, async () => {
  await ctx.database.db.query('CREATE TABLE statistics_probe (n int, label text)');
  const insert = (from: number, to: number) => ctx.database.db.query("INSERT INTO statistics_probe SELECT n, 'row ' || n FROM generate_series($1::int, $2::int) n", [from, to]);
  try {
    await insert(1, 10_000);
    assert.ok((await analyzedByOneRun()).includes('statistics_probe'), 'a table never analyzed, once it holds rows');
    assert.equal((await pages('statistics_probe')).rows, 10_000, 'the planner knows its rows');
    assert.deepEqual(await analyzedByOneRun(), [], 'nothing moved: nothing analyzed');
    await insert(10_001, 10_500);
    const small = await pages('statistics_probe');
    assert.ok(small.now > small.analyzed && small.now - small.analyzed <= small.analyzed * 0.1, `grown by a page or two: ${JSON.stringify(small)}`);
    assert.ok(!(await analyzedByOneRun()).includes('statistics_probe'), 'grown by less than a tenth: left alone');
    await insert(10_501, 11_500);
    assert.ok((await analyzedByOneRun()).includes('statistics_probe'), 'grown by more than a tenth: analyzed');
    assert.equal((await pages('statistics_probe')).rows, 11_500);
  } finally {
    await ctx.database.db.query('DROP TABLE statistics_probe');
  }
});

test('an append-only log (the access log) is analyzed again only when its size doubled', embeddedOnly, async () => {
  const account = await createAccount(ctx.service);
  const lock = await createLock(ctx.service, account.rootLocationId);
  await writeEvents(lock, 1_000);
  await analyzedByOneRun(); // whatever moved until now
  const start = await pages('access_events');
  assert.equal(start.now, start.analyzed);
  await writeEvents(lock, Math.ceil(start.rows * 0.5));
  const half = await pages('access_events');
  assert.ok(half.now - half.analyzed > half.analyzed * 0.1, `grown by far more than a tenth: ${JSON.stringify(half)}`);
  const atHalf = await analyzedByOneRun();
  assert.ok(!atHalf.includes('access_events'), `a log grown by half is left alone: ${atHalf.join(', ')}`);
  await writeEvents(lock, Math.ceil(start.rows * 0.7));
  const doubled = await pages('access_events');
  assert.ok(doubled.now > doubled.analyzed * 2, JSON.stringify(doubled));
  assert.ok((await analyzedByOneRun()).includes('access_events'), 'doubled: analyzed');
  assert.equal((await pages('access_events')).rows, start.rows + Math.ceil(start.rows * 0.5) + Math.ceil(start.rows * 0.7));
  assert.equal(await histogramBuckets('access_events', 'id'), 3, 'from a small sample: three buckets, not ten');
});

test('a table that is not a log keeps the embedded sample (ten buckets)', embeddedOnly, async () => {
  await ctx.database.db.query('CREATE TABLE statistics_probe (n int)');
  try {
    await ctx.database.db.query('INSERT INTO statistics_probe SELECT generate_series(1, 5000)');
    assert.ok((await analyzedByOneRun()).includes('statistics_probe'));
    assert.equal(await histogramBuckets('statistics_probe', 'n'), 10);
  } finally {
    await ctx.database.db.query('DROP TABLE statistics_probe');
  }
});

test('analyzes table by table, and a statement asked for meanwhile runs before the next table (PGlite holds the thread)', embeddedOnly, async () => {
  const probes = ['statistics_probe_a', 'statistics_probe_b'];
  for (const probe of probes) await ctx.database.db.query(`CREATE TABLE ${probe} AS SELECT generate_series(1, 2000) AS n`);
  try {
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
    assert.ok((await embeddedStatisticsJob(db).run()) >= 2);
    await meanwhile;
    const analyzed = ran.filter((text) => text.startsWith('ANALYZE'));
    assert.ok(probes.every((probe) => analyzed.includes(`ANALYZE ${probe}`)), analyzed.join(', '));
    assert.ok(ran.indexOf('a request meanwhile') < ran.lastIndexOf(analyzed.at(-1) as string), `the request waited for every table: ${ran.join(' | ')}`);
  } finally {
    for (const probe of probes) await ctx.database.db.query(`DROP TABLE ${probe}`);
  }
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

test('the embedded database samples for statistics as PostgreSQL did until 8.4 (default_statistics_target 10): a histogram of 10 buckets', embeddedOnly, async () => {
  const account = await createAccount(ctx.service);
  await writeEvents(await createLock(ctx.service, account.rootLocationId), 300);
  await ctx.database.db.query('ANALYZE access_events');
  assert.equal(await histogramBuckets('access_events', 'id'), 10, 'ten buckets (a hundred at the default of 100)');
});
