// The service as a newcomer starts it: npm start's entry point, a data directory, SIGTERM.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { backend, testDatabaseUrl } from '../helpers/database.ts';

interface Started {
  child: ChildProcess;
  output: () => string;
  url: string;
}

async function start(env: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line:\n${output}`)), 60_000);
    const check = () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve((match[1] as string).replace('localhost', '127.0.0.1'));
      }
    };
    child.stdout?.on('data', check);
    child.on('exit', () => reject(new Error(`exited before listening:\n${output}`)));
  });
  return { child, output: () => output, url };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

async function storageEnv(): Promise<Record<string, string>> {
  if (backend === 'postgres') {
    const schema = `lk_main_${process.pid}`;
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await client.end();
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: testDatabaseUrl() });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    });
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('options', `-c search_path=${schema}`);
    return { DATABASE_URL: url.toString() };
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-main-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return { DATA_DIR: dir };
}

test('starts with no configuration but storage, prints the admin token once, and stops cleanly on SIGTERM', async () => {
  const env = await storageEnv();
  const first = await start(env);
  const token = /admin token \(shown once, keep it\): (\S+)/.exec(first.output())?.[1];
  assert.ok(token, 'the generated admin token is printed on first start');
  const account = await fetch(`${first.url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Persisted' }),
  });
  assert.equal(account.status, 201);
  const exited = exitOf(first.child);
  first.child.kill('SIGTERM');
  assert.equal(await exited, 0);

  // Second start on the same data: migrations already applied, token not printed again, data kept.
  const second = await start(env);
  assert.doesNotMatch(second.output(), /admin token/);
  const { id } = (await account.json()) as { id: number };
  const read = await fetch(`${second.url}/admin/v1/accounts/${id}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(read.status, 200);
  const stopped = exitOf(second.child);
  second.child.kill('SIGINT');
  assert.equal(await stopped, 0);
});

test('an invalid variable stops start-up with a message naming it', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: 'not-a-port' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await exitOf(child);
  assert.equal(code, 1);
  assert.match(output, /PORT/);
});
