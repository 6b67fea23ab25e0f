// The service as a newcomer starts it: npm start's entry point, a data directory, SIGTERM. Everything it
// writes is one JSON log line after another (LOG_FORMAT=auto: stdout is a pipe here, not a terminal).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, test } from 'node:test';
import { writeMigratedTemplate } from '../../src/platform/db/migrated-template.ts';
import { backend } from '../helpers/database.ts';
import { processStorage, startArguments, startServiceProcess } from '../helpers/process.ts';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

async function storageEnv(): Promise<Record<string, string>> {
  const storage = await processStorage('main');
  cleanups.push(storage.cleanup);
  return storage.env;
}

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  part?: string;
  setting?: string;
  err?: { type: string; message: string; stack: string; cause?: { code?: string; stack: string } };
  [field: string]: unknown;
}

/** Every line of the output as a log line: fails on any line that is not pino JSON. */
function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        throw new Error(`a line that is not JSON: ${line}`);
      }
    });
}

/** Runs the service until it exits by itself (a failed start); its exit code and everything it wrote. */
async function runToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, startArguments, {
    env: { ...process.env, PORT: '0', MQTT_PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

test('starts with no configuration but storage, logs what it uses and the admin token once, and stops cleanly on SIGTERM', async () => {
  if (backend === 'pglite') await writeMigratedTemplate(); // as `npm start`'s build leaves it
  const env = await storageEnv();
  const first = await startServiceProcess({ ...env, LOG_LEVEL: 'info' });
  const token = /admin token \(shown once, keep it\): ([^\s"]+)/.exec(first.output())?.[1];
  assert.ok(token, 'the generated admin token is printed on first start');
  const account = await fetch(`${first.url}/admin/v1/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Persisted-body-value' }),
  });
  assert.equal(account.status, 201);
  const listed = await fetch(`${first.url}/admin/v1/accounts?limit=5&secret-query-value=1`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(listed.status, 200);
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);

  const lines = logLines(first.output());
  const messages = lines.map((l) => l.msg);
  assert.ok(!messages.some((m) => m.startsWith('Server listening at')), "no Fastify 'Server listening at' line");
  assert.equal(messages.filter((m) => m.startsWith('listening on http://')).length, 1);
  assert.match(messages[0] ?? '', /^starting Latchkey \S+ on Node v\d+/);
  if (backend === 'pglite') {
    assert.ok(messages.includes(`database: embedded (PGlite) in ${env.DATA_DIR} (DATA_DIR)`), messages.join('\n'));
    assert.ok(messages.some((m) => m.startsWith(`creating the embedded database in ${env.DATA_DIR}/pg (first start`)), messages.join('\n'));
  } else {
    assert.ok(messages.some((m) => /^database: PostgreSQL at postgres:\/\/\S+ \(DATABASE_URL\)$/.test(m)), messages.join('\n'));
  }
  // A first start on PostgreSQL applies the migrations; an embedded one copies the migrated template (made
  // before the test starts the process: the bundle's build makes it).
  if (backend === 'pglite') assert.ok(messages.includes('copied the migrated database template (every migration applied; .cache/pglite)'), messages.join('\n'));
  else assert.ok(messages.some((m) => /^applying migration 001_foundation \(1 of \d+ to apply\)$/.test(m)), 'progress of the first start');
  assert.ok(messages.includes('MQTT broker: embedded, on any free port (MQTT_PORT)'));
  assert.ok(messages.includes('rate limits: counted in this process (REDIS_URL unset)'));
  assert.ok(messages.includes('sandbox: off; operator console: on at /console'));
  assert.ok(messages.some((m) => /^embedded MQTT broker on mqtt:\/\/localhost:\d+$/.test(m)));
  // The requests' lines: each with its request id, never a body or a query string.
  const requestLines = lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed');
  assert.equal(requestLines.length, 4, messages.join('\n'));
  assert.ok(requestLines.every((l) => typeof l.reqId === 'string' && l.reqId !== ''));
  assert.ok(!first.output().includes('Persisted-body-value') && !first.output().includes('secret-query-value'));

  // Second start on the same data: migrations already applied, token not printed again, data kept; with
  // METRICS_PORT, the metrics listener's address is printed and answers.
  const second = await startServiceProcess({ ...env, METRICS_PORT: '0' });
  const metricsUrl = /Prometheus metrics on (http:\/\/[^\s"]+) \(METRICS_PORT\)/.exec(second.output())?.[1];
  assert.ok(metricsUrl, second.output());
  assert.equal((await fetch(metricsUrl)).status, 200);
  assert.doesNotMatch(second.output(), /admin token/);
  assert.doesNotMatch(second.output(), /applying migration/);
  if (backend === 'pglite') assert.match(second.output(), /"opening the embedded database in [^"]+\/pg"/);
  const { id } = (await account.json()) as { id: number };
  const read = await fetch(`${second.url}/admin/v1/accounts/${id}`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(read.status, 200);
  // PORT=0 without PUBLIC_URL: the links the service gives (here the OpenAPI server) carry the port it listens on.
  const document = (await (await fetch(`${second.url}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
    servers: Array<{ variables: { origin: { default: string } } }>;
  };
  assert.equal(document.servers[0]?.variables.origin.default, `http://localhost:${new URL(second.url).port}`);
  second.child.kill('SIGINT');
  assert.equal(await second.exited, 0);
  // LOG_LEVEL=warn (the helper's): the start-up lines are written all the same, and nothing at info else.
  const quiet = logLines(second.output());
  assert.ok(quiet.some((l) => l.msg.startsWith('listening on http://')));
  assert.ok(!quiet.some((l) => l.msg === 'incoming request'));
});

test('an invalid variable stops start-up with a log line naming it', async () => {
  const { code, output } = await runToExit({ PORT: 'not-a-port' });
  assert.equal(code, 1);
  const [line, ...rest] = logLines(output);
  assert.deepEqual(rest, []);
  assert.equal(line?.level, 60);
  assert.equal(line?.variable, 'PORT');
  assert.match(line?.msg ?? '', /^invalid configuration: PORT: expected an integer/);
});

test('a failed start names the database and DATABASE_URL, with the error chain, and never the password', async () => {
  const { code, output } = await runToExit({
    // Nothing listens on port 1999 of the loopback: the connection is refused at once.
    DATABASE_URL: 'postgres://latchkey:s3cret-pw@127.0.0.1:1999/latchkey?sslpassword=other-s3cret',
  });
  assert.equal(code, 1);
  const lines = logLines(output);
  assert.ok(lines.some((l) => l.msg === 'database: PostgreSQL at postgres://latchkey@127.0.0.1:1999/latchkey (DATABASE_URL)'), output);
  const last = lines.at(-1);
  assert.equal(last?.level, 60);
  assert.equal(
    last?.msg,
    'Latchkey failed to start: the database (DATABASE_URL=postgres://latchkey@127.0.0.1:1999/latchkey) is not reachable: connect ECONNREFUSED 127.0.0.1:1999',
  );
  assert.equal(last?.part, 'the database');
  assert.equal(last?.setting, 'DATABASE_URL=postgres://latchkey@127.0.0.1:1999/latchkey');
  assert.equal(last?.err?.cause?.code, 'ECONNREFUSED');
  assert.match(last?.err?.cause?.stack ?? '', /at async openPostgres /, 'the stack names the code that failed');
  assert.ok(!output.includes('s3cret'), output);
});

test('a failed start on an unreachable MQTT_URL names the broker and MQTT_URL; the summary names Redis, the sandbox and the console', async () => {
  const { code, output } = await runToExit({
    DATA_DIR: 'memory',
    MQTT_URL: 'mqtt://latchkey:broker-s3cret@127.0.0.1:1998',
    REDIS_URL: 'redis://:redis-s3cret@127.0.0.1:1997/2',
    SANDBOX: 'true',
    CONSOLE_ENABLED: 'false',
  });
  assert.equal(code, 1);
  const lines = logLines(output);
  const messages = lines.map((l) => l.msg);
  assert.ok(messages.includes('database: embedded, in memory: nothing is kept when the process ends (DATA_DIR=memory)'), output);
  assert.ok(messages.some((m) => m.startsWith('MQTT broker: mqtt://latchkey@127.0.0.1:1998 (MQTT_URL), client id ')), output);
  assert.ok(messages.includes('rate limits: shared in Redis at redis://127.0.0.1:1997/2 (REDIS_URL), keys prefixed latchkey'), output);
  assert.ok(messages.includes('sandbox: on (SANDBOX=true); operator console: off (CONSOLE_ENABLED=false)'), output);
  // Redis away does not stop a start (README: Faults); its warning names REDIS_URL.
  assert.ok(messages.some((m) => m.startsWith('redis unavailable (REDIS_URL=redis://127.0.0.1:1997/2): ')), output);
  const last = lines.at(-1);
  assert.equal(last?.level, 60);
  assert.equal(last?.msg, 'Latchkey failed to start: the MQTT broker (MQTT_URL=mqtt://latchkey@127.0.0.1:1998) is not reachable: connect ECONNREFUSED 127.0.0.1:1998');
  assert.equal(last?.setting, 'MQTT_URL=mqtt://latchkey@127.0.0.1:1998');
  assert.ok(!output.includes('s3cret'), output);
});

test('a broker refusing the user and password of MQTT_URL is said so, with where to change the service\'s password', async () => {
  // A broker that refuses every CONNECT as Mosquitto does a wrong password (MQTT 5: 135, Not authorized).
  const { createServer } = await import('node:net');
  const mqttPacket = (await import('mqtt-packet')).default;
  const broker = createServer((socket) => {
    socket.on('error', () => undefined);
    const parser = mqttPacket.parser({ protocolVersion: 5 });
    parser.on('packet', (packet) => {
      if (packet.cmd === 'connect') socket.end(mqttPacket.generate({ cmd: 'connack', sessionPresent: false, reasonCode: 135 }, { protocolVersion: 5 }));
    });
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => void broker.close(() => resolve())));
  const address = broker.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const { code, output } = await runToExit({ DATA_DIR: 'memory', MQTT_URL: `mqtt://latchkey:wrong-s3cret@127.0.0.1:${port}` });
  assert.equal(code, 1);
  const last = logLines(output).at(-1);
  assert.equal(last?.level, 60);
  assert.match(last?.msg ?? '', new RegExp(`^Latchkey failed to start: the MQTT broker \\(MQTT_URL=mqtt://latchkey@127\\.0\\.0\\.1:${port}\\) refused the user and password of MQTT_URL `));
  assert.match(last?.msg ?? '', /docs\/brokers\.md, changing the service's password/);
  assert.ok(!output.includes('s3cret'), output);
});

/** A port something else listens on, until `release`. */
async function busyPort(): Promise<{ port: number; release: () => void }> {
  const { createServer } = await import('node:net');
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const address = taken.address();
  return { port: typeof address === 'object' && address ? address.port : 0, release: () => taken.close() };
}

const TOKEN_LINE = /admin token \(shown once, keep it\): ([^\s"]+)/;

async function status(url: string, token: string): Promise<number> {
  return (await fetch(`${url}/admin/v1/accounts?limit=1`, { headers: { authorization: `Bearer ${token}` } })).status;
}

test('a first start that fails on a busy port has opened nothing and kept no operator token: the next start that listens prints one that works', async () => {
  const env = await storageEnv();
  const busy = await busyPort();
  try {
    for (const [setting, part] of [
      ['PORT', 'the HTTP listener'],
      ['MQTT_PORT', 'the embedded MQTT broker'],
      ['METRICS_PORT', 'the metrics listener'],
    ] as const) {
      const failed = await runToExit({ ...env, LOG_LEVEL: 'info', [setting]: String(busy.port) });
      assert.equal(failed.code, 1, failed.output);
      const lines = logLines(failed.output);
      assert.match(lines.at(-1)?.msg ?? '', new RegExp(`^Latchkey failed to start: ${part} \\(.*${setting}=${busy.port}\\) cannot listen, the port is in use`), failed.output);
      assert.doesNotMatch(failed.output, /admin token/, 'no token printed by a start that does not listen');
      // The ports are taken first: no database was created, opened or migrated, and no broker session opened.
      const opened = lines.filter((line) => line.level < 60 && !/^(starting Latchkey|database: |MQTT broker: |rate limits: |sandbox: )/.test(line.msg));
      assert.deepEqual(opened.map((line) => line.msg), [], failed.output);
    }
  } finally {
    busy.release();
  }
  const started = await startServiceProcess({ ...env, LOG_LEVEL: 'info' });
  try {
    // The storage is as it was: this start is the first.
    assert.match(started.output(), /applying migration 001_|\(first start\)/);
    const token = TOKEN_LINE.exec(started.output())?.[1];
    assert.ok(token, `the start that listens prints the token:\n${started.output()}`);
    assert.equal(await status(started.url, token), 200);
    // Printed before the listening line, after the listener is up.
    const messages = logLines(started.output()).map((l) => l.msg);
    assert.ok(messages.findIndex((m) => m.startsWith('admin token')) < messages.findIndex((m) => m.startsWith('listening on')));
  } finally {
    started.child.kill('SIGTERM');
    await started.exited;
  }
});

test('npm run operator-token -- --reset replaces a lost operator token; the old one stops working', async () => {
  const env = await storageEnv();
  const first = await startServiceProcess({ ...env, LOG_LEVEL: 'info' });
  const lost = TOKEN_LINE.exec(first.output())?.[1];
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.ok(lost);

  const run = async (args: string[]) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/operator-token.ts', ...args], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, output };
  };
  const without = await run([]);
  assert.equal(without.code, 2);
  assert.match(without.output, /--reset/);
  const reset = await run(['--reset']);
  assert.equal(reset.code, 0, reset.output);
  const fresh = /\(shown once, keep it\): (lk_admin_\S+)/.exec(reset.output)?.[1];
  assert.ok(fresh, reset.output);

  const second = await startServiceProcess(env);
  try {
    assert.equal(await status(second.url, fresh), 200);
    assert.equal(await status(second.url, lost), 401);
    assert.doesNotMatch(second.output(), /admin token/);
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});
