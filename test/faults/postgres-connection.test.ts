// The server-PostgreSQL port through outages (README: Faults), on a cluster of the test's own: a statement
// fails as `unavailable` within DATABASE_TIMEOUT_SECONDS whether the server is down, hung or slow, the pool
// recovers by itself, and the LISTEN connection comes back with every channel and tells its handlers what
// they may have missed. Wrong statements are not mistaken for an outage.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { DatabaseError, isDatabaseUnavailable } from '../../src/platform/db/errors.ts';
import { openDatabase } from '../../src/platform/db/index.ts';
import { openPostgres, type PostgresDatabase } from '../../src/platform/db/postgres.ts';
import { backend } from '../helpers/database.ts';
import { waitFor } from '../helpers/gateways.ts';
import { clusterUnavailable, startCluster, type TestCluster } from './postgres-cluster.ts';

const TIMEOUT_MS = 1000;

/** The error a promise rejects with, and how long it took. */
async function failure(attempt: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await attempt();
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
  assert.fail('expected a failure');
}

// Independent of the test backend (a cluster of its own): it runs once, in the embedded pass.
const skip = clusterUnavailable() || (backend === 'postgres' ? 'independent of the test backend (a cluster of its own): runs in the embedded pass' : false);

describe('server PostgreSQL through outages', { skip }, () => {
  let cluster: TestCluster;
  let db: PostgresDatabase;
  before(async () => {
    cluster = await startCluster();
    db = await openPostgres({ connectionString: cluster.url, timeoutMs: TIMEOUT_MS });
    await db.query('CREATE TABLE IF NOT EXISTS kept (id int PRIMARY KEY)');
  });
  after(async () => {
    await db?.close();
    await cluster?.destroy();
  });

  test('a stopped server: statements and transactions fail as unavailable at once; the pool serves again once it is back, committed rows kept', async () => {
    await db.query('INSERT INTO kept VALUES (1) ON CONFLICT DO NOTHING');
    await cluster.stop('immediate');
    try {
      for (const attempt of [() => db.query('SELECT 1'), () => db.transaction((tx) => tx.query('SELECT 1'))]) {
        const { error, ms } = await failure(attempt);
        assert.ok(error instanceof DatabaseError && isDatabaseUnavailable(error), String(error));
        assert.ok(ms < TIMEOUT_MS, `${ms} ms`);
      }
    } finally {
      await cluster.start();
    }
    // Every connection of the pool died with the server; none is handed out again.
    const answers = await Promise.all(Array.from({ length: 12 }, () => db.query<{ n: number }>('SELECT count(*)::int AS n FROM kept')));
    assert.ok(answers.every(([row]) => row?.n === 1));
  });

  test('a hung server (connections open, nothing answers): statements, transactions and new connections fail as unavailable within the time limit; then it serves again', async () => {
    // Connections in the pool, so that both an open one and a new one meet the hung server.
    await Promise.all(Array.from({ length: 3 }, () => db.query('SELECT pg_sleep(0.05)')));
    cluster.freeze();
    try {
      const attempts = [
        () => db.query('SELECT 1'),
        () => db.transaction(async (tx) => tx.query('SELECT 1')),
        ...Array.from({ length: 12 }, () => () => db.query('SELECT 2')), // more than the pool holds: some wait for a connection
      ];
      const results = await Promise.all(attempts.map(failure));
      for (const { error, ms } of results) {
        assert.ok(isDatabaseUnavailable(error), String(error));
        assert.ok(ms < 2 * TIMEOUT_MS + 1000, `${ms} ms`);
      }
    } finally {
      cluster.thaw();
    }
    const answers = await Promise.all(Array.from({ length: 12 }, () => db.query<{ one: number }>('SELECT 1 AS one')));
    assert.ok(answers.every(([row]) => row?.one === 1), 'the connections that hung are not handed out again');
  });

  test('a statement over the time limit is cancelled by the server as unavailable (57014); the connection stays usable', async () => {
    const { error, ms } = await failure(() => db.transaction((tx) => tx.query('SELECT pg_sleep(5)')));
    assert.ok(error instanceof DatabaseError && error.unavailable, String(error));
    assert.equal(error.code, '57014');
    assert.ok(ms < TIMEOUT_MS + 1000, `${ms} ms`);
    assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }]);
  });

  test('wrong statements are not an outage', async () => {
    for (const wrong of [
      () => db.query('SELEC 1'), // 42601
      () => db.query('SELECT $1::int', [1, 2]), // 08P01: a class 08 code, but the statement's fault
      () => db.query('SELECT 1/0'), // 22012
      () => db.transaction((tx) => tx.query('INSERT INTO kept VALUES (1)')), // 23505
    ]) {
      const { error } = await failure(wrong);
      assert.ok(error instanceof DatabaseError && !error.unavailable, String(error));
    }
  });

  test('LISTEN comes back after a restart on every channel, and each handler hears an empty payload for what it missed', async () => {
    const heard: Record<string, string[]> = { a: [], b: [] };
    await db.listen('fault_a', (payload) => heard.a?.push(payload));
    await db.listen('fault_b', (payload) => heard.b?.push(payload));
    const notify = async (channel: string, payload: string) => {
      const client = new pg.Client({ connectionString: cluster.url });
      await client.connect();
      await client.query('SELECT pg_notify($1, $2)', [db.channel(channel), payload]);
      await client.end();
    };
    await notify('fault_a', 'before');
    await waitFor(() => heard.a?.includes('before') === true, 'a notification before the restart');

    await cluster.stop('fast');
    await cluster.start();
    await waitFor(() => heard.a?.includes('') === true && heard.b?.includes('') === true, 'the missed-notifications call after the reconnection', 10_000);
    await notify('fault_a', 'after');
    await notify('fault_b', 'after');
    await waitFor(() => heard.a?.includes('after') === true && heard.b?.includes('after') === true, 'notifications after the restart, on both channels');
    assert.deepEqual(heard, { a: ['before', '', 'after'], b: ['', 'after'] });
  });

  test('the service opens its database migrated, with DATABASE_TIMEOUT_SECONDS as the limit (default 10, 1 to 3600)', async () => {
    assert.equal(loadConfig({}).databaseTimeoutSeconds, 10);
    for (const bad of ['0', '3601', 'soon']) assert.throws(() => loadConfig({ DATABASE_TIMEOUT_SECONDS: bad }), ConfigError);
    const config = loadConfig({ DATABASE_URL: cluster.url, DATABASE_TIMEOUT_SECONDS: '1' });
    const service = await openDatabase(config);
    try {
      assert.ok((await service.query('SELECT version FROM schema_migrations')).length > 0, 'migrated');
      const { error, ms } = await failure(() => service.query('SELECT pg_sleep(3)'));
      assert.ok(isDatabaseUnavailable(error), String(error));
      assert.ok(ms < 2000, `${ms} ms`);
    } finally {
      await service.close();
    }
  });
});
