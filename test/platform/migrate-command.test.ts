// `npm run migrate` applies the migrations without starting the service, and several migrating processes
// (migrate commands, instances starting) against one database take turns under the migration lock.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, test } from 'node:test';
import pg from 'pg';
import { writeMigratedTemplate } from '../../src/platform/db/migrated-template.ts';
import { listMigrations, MIGRATION_LOCK } from '../../src/platform/db/migrate.ts';
import { backend, testDatabaseUrl } from '../helpers/database.ts';
import { processStorage, startServiceProcess } from '../helpers/process.ts';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

interface Line {
  level: number;
  msg: string;
  applied?: string[];
}

/** Runs `npm run migrate`'s entry point; resolves with its exit code and its log lines. */
function runMigrate(env: Record<string, string>, onLine?: (line: Line) => void): Promise<{ code: number | null; lines: Line[]; output: string }> {
  // The same command as package.json's "migrate" script.
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/migrate.ts'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const lines: Line[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    pending += chunk.toString();
    for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
      const line = JSON.parse(pending.slice(0, end)) as Line;
      pending = pending.slice(end + 1);
      lines.push(line);
      onLine?.(line);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, lines, output })));
}

async function storage(name: string): Promise<Record<string, string>> {
  const made = await processStorage(name);
  cleanups.push(made.cleanup);
  return made.env;
}

test('npm run migrate with DATA_DIR creates the embedded database, migrated, and exits; the service then starts on it with nothing to apply', { skip: backend !== 'pglite' }, async () => {
  await writeMigratedTemplate(); // as `npm start`'s build leaves it
  const env = await storage('migrate');
  const total = (await listMigrations()).length;
  const first = await runMigrate(env);
  assert.equal(first.code, 0, first.output);
  assert.ok(first.lines.some((l) => /^creating the embedded database in .*\/pg \(first start/.test(l.msg)), first.output);
  // A new directory starts as a copy of the migrated template: the migrations are in it, none is left to apply.
  assert.ok(first.lines.some((l) => l.msg === 'copied the migrated database template (every migration applied; .cache/pglite)'), first.output);
  assert.ok(first.lines.some((l) => l.msg === `database schema up to date (${total} migrations)`), first.output);
  assert.deepEqual(first.lines.at(-1)?.applied, []);

  const again = await runMigrate(env);
  assert.equal(again.code, 0, again.output);
  assert.deepEqual(again.lines.at(-1)?.applied, []);
  assert.ok(again.lines.some((l) => l.msg === `database schema up to date (${total} migrations)`), again.output);

  const service = await startServiceProcess(env);
  assert.match(service.output(), /database schema up to date \(\d+ migrations\)/);
  assert.doesNotMatch(service.output(), /applying migration/);
  service.child.kill('SIGTERM');
  assert.equal(await service.exited, 0);
});

test('npm run migrate names DATABASE_URL, without its password, when the database is not reachable', { skip: backend !== 'pglite' }, async () => {
  const run = await runMigrate({ DATABASE_URL: 'postgres://latchkey:s3cret-pw@127.0.0.1:1999/latchkey' });
  assert.equal(run.code, 1);
  const last = run.lines.at(-1);
  assert.equal(last?.level, 60);
  assert.match(last?.msg ?? '', /^migration failed: the database \(DATABASE_URL=postgres:\/\/latchkey@127\.0\.0\.1:1999\/latchkey\) is not reachable: connect ECONNREFUSED/);
  assert.ok(!run.output.includes('s3cret-pw'), run.output);
});

async function appliedVersions(databaseUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((r) => r.version);
  } finally {
    await client.end();
  }
}

test('two npm run migrate at once on one fresh PostgreSQL schema: every migration applied once, by one of them', { skip: backend !== 'postgres' }, async () => {
  const env = await storage('migrate_pair');
  const all = (await listMigrations()).map((m) => m.version);
  const [a, b] = await Promise.all([runMigrate(env), runMigrate(env)]);
  assert.equal(a.code, 0, a.output);
  assert.equal(b.code, 0, b.output);
  const applied = [a, b].map((run) => run.lines.at(-1)?.applied ?? []).sort((x, y) => y.length - x.length);
  assert.deepEqual(applied, [all, []], 'one applied everything, the other nothing');
  assert.deepEqual(await appliedVersions(env.DATABASE_URL as string), all);
});

test('an instance starting while the migration lock is held waits for it, then finds its migrations applied', { skip: backend !== 'postgres' }, async () => {
  const env = await storage('migrate_wait');
  const migrated = await runMigrate(env);
  assert.equal(migrated.code, 0, migrated.output);
  // Another migration in progress elsewhere, as a second instance or `npm run migrate` would hold it.
  const holder = new pg.Client({ connectionString: testDatabaseUrl() });
  await holder.connect();
  await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  let released = false;
  try {
    const waiting = runMigrate(env, (line) => {
      if (line.msg === 'another instance is applying migrations: waiting for it' && !released) {
        released = true;
        void holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    });
    const run = await waiting;
    assert.equal(run.code, 0, run.output);
    assert.ok(released, `the lock was waited for:\n${run.output}`);
    assert.deepEqual(run.lines.at(-1)?.applied, []);

    // Start-up takes the same lock: released once the starting instance is seen waiting for it.
    await holder.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    // Named, so that only its wait counts (other test runs on the server take the same lock).
    const named = new URL(env.DATABASE_URL as string);
    named.searchParams.set('application_name', `lk-migrate-wait-${process.pid}`);
    const starting = startServiceProcess({ ...env, DATABASE_URL: named.toString() });
    const waitedFor = (async () => {
      for (let tries = 0; tries < 600; tries++) {
        const [row] = (
          await holder.query<{ waiting: number }>(
            `SELECT count(*)::int AS waiting FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objid = $1 AND a.application_name = $2`,
            [MIGRATION_LOCK, named.searchParams.get('application_name')],
          )
        ).rows;
        if ((row?.waiting ?? 0) > 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return false;
    })().finally(() => holder.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]));
    const service = await starting;
    try {
      assert.ok(await waitedFor, 'the starting instance waited for the lock');
      assert.match(service.output(), /another instance is applying migrations: waiting for it/);
      assert.match(service.output(), /database schema up to date \(\d+ migrations\)/);
    } finally {
      service.child.kill('SIGTERM');
      assert.equal(await service.exited, 0, service.output());
    }
  } finally {
    await holder.end();
  }
});
