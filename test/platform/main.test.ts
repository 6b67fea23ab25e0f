// The service as a newcomer starts it: npm start's entry point, a data directory, SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, test } from 'node:test';
import { processStorage, startServiceProcess } from '../helpers/process.ts';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

async function storageEnv(): Promise<Record<string, string>> {
  const storage = await processStorage('main');
  cleanups.push(storage.cleanup);
  return storage.env;
}

test('starts with no configuration but storage, prints the admin token once, and stops cleanly on SIGTERM', async () => {
  const env = await storageEnv();
  const first = await startServiceProcess(env);
  const token = /admin token \(shown once, keep it\): (\S+)/.exec(first.output())?.[1];
  assert.ok(token, 'the generated admin token is printed on first start');
  const account = await fetch(`${first.url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Persisted' }),
  });
  assert.equal(account.status, 201);
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  // Second start on the same data: migrations already applied, token not printed again, data kept.
  const second = await startServiceProcess(env);
  assert.doesNotMatch(second.output(), /admin token/);
  const { id } = (await account.json()) as { id: number };
  const read = await fetch(`${second.url}/admin/v1/accounts/${id}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(read.status, 200);
  second.child.kill('SIGINT');
  assert.equal(await second.exited, 0);
});

test('an invalid variable stops start-up with a message naming it', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { ...process.env, PORT: 'not-a-port' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 1);
  assert.match(output, /PORT/);
});

test('a failed start prints the error with its stack and code, and never the database password', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    // Nothing listens on port 1 of the loopback: the connection is refused at once.
    env: { ...process.env, DATABASE_URL: 'postgres://latchkey:s3cret-pw@127.0.0.1:1/latchkey', PORT: '0', MQTT_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 1);
  assert.match(output, /Latchkey failed to start: Error: connect ECONNREFUSED 127\.0\.0\.1:1 \[ECONNREFUSED\]/);
  assert.match(output, /at async openPostgres /, 'the stack names the part that failed');
  assert.ok(!output.includes('s3cret-pw'), output);
});
