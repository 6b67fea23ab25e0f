// Redis goes away with REDIS_URL set (README: Faults): the rate limits fail open per instance. Requests
// keep answering at once, counted by the instance in memory (so a key still meets its limit), with one
// warning per outage; once Redis is back the counting is shared in it again. A Redis that stops answering
// without closing the connection costs a request at most about three seconds. Uses a redis-server of the
// test's own on a free port (never the machine's Redis); skipped where redis-server is not installed.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { alignToMinuteStart, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { freePort } from '../helpers/mosquitto.ts';
import { startService, type TestService } from '../helpers/service.ts';

const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'].find((p) => existsSync(p));
const PER_MINUTE = 20;

/** A redis-server on `port`, nothing kept on disk; resolves once it answers. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(REDIS_SERVER as string, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => undefined);
  try {
    await waitFor(async () => {
      if (child.exitCode !== null) throw new Error('redis-server exited');
      return probe.connect().then(
        () => true,
        () => false,
      );
    }, 'redis-server answers');
  } finally {
    probe.disconnect();
  }
  return child;
}

/** The service's log lines, as Fastify's logger writes them to `stream`. */
function capturedLog(): { log: Array<{ level: number; msg: string }>; stream: Writable } {
  const log: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) log.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { log, stream };
}

async function stop(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

test('Redis away: limits fail open per instance, with one warning; shared again once it is back; a silent Redis costs at most about three seconds', { skip: REDIS_SERVER ? false : 'redis-server is not installed', timeout: 60_000 }, async () => {
  const port = await freePort();
  let redis: ChildProcess | null = await startRedis(port);
  let database: TestDatabase | null = null;
  let service: TestService | null = null;
  const inspect = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
  inspect.on('error', () => undefined);
  after(async () => {
    if (redis?.signalCode === 'SIGSTOP') redis.kill('SIGCONT');
    await service?.close();
    await database?.close();
    inspect.disconnect();
    await stop(redis);
  });

  const { log, stream } = capturedLog();
  const prefix = `lkfault-${process.pid}`;
  database = await createTestDatabase();
  service = await startService(database.db, { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix, API_RATE_LIMIT_PER_MINUTE: String(PER_MINUTE) }, undefined, { level: 'info', stream });
  const target = service;
  const { rootLocationId } = await createAccount(target);
  const { id: keyId, token } = await createApiKey(target, rootLocationId, ['catalog:read']);
  const counted = async () => {
    const keys = await inspect.keys(`${prefix}:rl:api-key:${keyId}:*`);
    return keys.length === 0 ? 0 : Number(await inspect.get(keys[0] as string));
  };
  /** One request, and how long it took. */
  const timed = async (who = token) => {
    const started = Date.now();
    const res = await target.request('GET', '/v1/locks', { token: who });
    return { status: res.status, ms: Date.now() - started, remaining: res.headers.get('x-ratelimit-remaining') };
  };
  const warnings = () => log.filter((l) => l.level === 40 && l.msg.startsWith('redis unavailable')).length;
  await inspect.connect();

  // Redis up: counted in Redis.
  await alignToMinuteStart(target);
  for (let i = 0; i < 3; i++) assert.equal((await timed()).status, 200);
  assert.equal(await counted(), 3, 'counted in Redis');

  // Redis killed: every request answers at once, counted in memory, one warning for the whole outage.
  await stop(redis);
  redis = null;
  await alignToMinuteStart(target); // a fresh window: the in-memory count starts at 0
  const during = [];
  for (let i = 0; i < PER_MINUTE; i++) during.push(await timed());
  assert.deepEqual(during.map((r) => r.status), Array(PER_MINUTE).fill(200));
  assert.ok(during.every((r) => r.ms < 1000), `answered at once: ${during.map((r) => r.ms).join(', ')} ms`);
  assert.equal(during.at(-1)?.remaining, '0', 'still counted, in memory');
  const limited = await timed();
  assert.equal(limited.status, 429, 'the limit still holds per instance');
  assert.equal(warnings(), 1, 'one warning per outage, not one per request or reconnection attempt');

  // Redis back on the same port (empty): counted in Redis again.
  redis = await startRedis(port);
  await waitFor(() => log.some((l) => l.msg === 'redis is back: rate limits are shared again'), 'the service sees Redis back', 10_000);
  await alignToMinuteStart(target);
  assert.equal((await timed()).status, 200);
  await waitFor(async () => (await counted()) === 1, 'counted in Redis again');

  // Redis stops answering but keeps its connection open: a request waits at most about three seconds for it.
  const other = await createApiKey(target, rootLocationId, ['catalog:read']);
  redis.kill('SIGSTOP');
  const stalled = [];
  for (let i = 0; i < 5; i++) stalled.push(await timed(other.token));
  assert.deepEqual(stalled.map((r) => r.status), Array(5).fill(200));
  assert.ok(stalled.every((r) => r.ms < 4500), `no request waits for a silent Redis: ${stalled.map((r) => r.ms).join(', ')} ms`);
  assert.equal(warnings(), 2, 'the second outage is told once too');
  redis.kill('SIGCONT');
});

test('a service started while Redis is down serves at once, counting in memory, and says so once', { skip: REDIS_SERVER ? false : 'redis-server is not installed', timeout: 60_000 }, async () => {
  const port = await freePort(); // nothing listens there
  const { log, stream } = capturedLog();
  const database = await createTestDatabase();
  const service = await startService(database.db, { REDIS_URL: `redis://127.0.0.1:${port}`, API_RATE_LIMIT_PER_MINUTE: '3' }, undefined, { level: 'info', stream });
  try {
    const { rootLocationId } = await createAccount(service);
    const { token } = await createApiKey(service, rootLocationId, ['catalog:read']);
    await alignToMinuteStart(service);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await service.request('GET', '/v1/locks', { token })).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    await new Promise((resolve) => setTimeout(resolve, 500)); // a few more attempts to dial Redis
    assert.equal(log.filter((l) => l.level === 40 && l.msg.startsWith('redis unavailable')).length, 1);
  } finally {
    await service.close();
    await database.close();
  }
});
