// GET /healthz and GET /readyz (README: Operations): open, outside the public API's rate limits, hidden from the OpenAPI
// documents, silent in the log; readiness names the part that is down (database, mqtt, jobs) and nothing else.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify from 'fastify';
import { databaseError } from '../../src/platform/db/errors.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { databaseProbe, healthRoutes, type MqttState } from '../../src/platform/health.ts';
import { RateLimits } from '../../src/platform/rate-limit.ts';
import { createTestDatabase, overriding, withFaults, type TestDatabase } from '../helpers/database.ts';
import { alignToMinuteStart } from '../helpers/fixtures.ts';
import { freshIp, startService, useTestService, type TestService } from '../helpers/service.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

interface ReadyBody {
  status: string;
  checks: Record<string, string>;
}

test('GET /healthz answers 200 {"status":"ok"} without credentials', async () => {
  const res = await ctx.service.request('GET', '/healthz');
  assert.equal(res.status, 200);
  assert.deepEqual(res.body, { status: 'ok' });
  assert.equal(res.headers.get('cache-control'), 'no-store, private');
});

test('the probes take no credentials and no rate limit: more than a minute of anonymous requests from one IP', async () => {
  const ip = freshIp();
  const answers = await Promise.all(Array.from({ length: 650 }, () => ctx.service.request('GET', '/healthz', { ip })));
  assert.ok(answers.every((r) => r.status === 200));
  // The public API's per-IP budget was not touched by them.
  assert.equal((await ctx.service.request('GET', '/v1/locks', { ip })).status, 401);
});

test('GET /readyz: 503 naming the job loop until it runs, then 200 with every check ok', async () => {
  const before = await ctx.service.request<ReadyBody>('GET', '/readyz');
  assert.equal(before.status, 503);
  assert.deepEqual(before.body, { status: 'not_ready', checks: { database: 'ok', mqtt: 'ok', jobs: 'down' } });
  ctx.service.latchkey.jobs.start();
  try {
    const ready = await ctx.service.request<ReadyBody>('GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ok', checks: { database: 'ok', mqtt: 'ok', jobs: 'ok' } });
  } finally {
    await ctx.service.latchkey.jobs.stop();
  }
});

test('GET /readyz is limited per address (120 a minute) before any check runs; others and /healthz are not held back', async () => {
  await alignToMinuteStart(ctx.service);
  const ip = freshIp();
  const answers = await Promise.all(Array.from({ length: 130 }, () => ctx.service.request<{ error?: { code: string } }>('GET', '/readyz', { ip })));
  const refused = answers.filter((r) => r.status === 429);
  assert.equal(refused.length, 10);
  assert.ok(refused.every((r) => r.body.error?.code === 'rate_limited' && Number(r.headers.get('retry-after')) > 0));
  assert.notEqual((await ctx.service.request('GET', '/readyz', { ip: freshIp() })).status, 429);
  assert.equal((await ctx.service.request('GET', '/healthz', { ip })).status, 200);
});

test('the probes are not in either OpenAPI document', async () => {
  const publicDoc = await ctx.service.request<{ paths: Record<string, unknown> }>('GET', '/v1/openapi.json');
  const operatorDoc = await ctx.service.admin<{ paths: Record<string, unknown> }>('GET', '/admin/v1/openapi.json');
  for (const doc of [publicDoc.body, operatorDoc.body]) {
    assert.ok(!Object.keys(doc.paths).some((path) => /healthz|readyz|metrics/.test(path)), Object.keys(doc.paths).join(' '));
  }
});

describe('with the database down', () => {
  let database: TestDatabase;
  let service: TestService;
  const state = { down: false };
  const lines: string[] = [];
  before(async () => {
    database = await createTestDatabase();
    // The statements fail as a lost connection would, with a message that must not reach the answer.
    const faulty = withFaults(database.db, () =>
      state.down ? databaseError(Object.assign(new Error('connect ECONNREFUSED 10.9.9.9:5432 password=hunter2'), { code: 'ECONNREFUSED' }), '', true) : undefined,
    );
    const stream = { write: (line: string) => void lines.push(line) };
    service = await startService(faulty, {}, undefined, { level: 'info', stream }, 'inject');
    service.latchkey.jobs.start();
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  test('GET /readyz answers 503 naming the database, and nothing of the error; 200 again once it is back', async () => {
    state.down = true;
    const down = await service.request<ReadyBody>('GET', '/readyz');
    state.down = false;
    assert.equal(down.status, 503);
    assert.deepEqual(down.body, { status: 'not_ready', checks: { database: 'down', mqtt: 'ok', jobs: 'ok' } });
    assert.doesNotMatch(down.text, /ECONNREFUSED|10\.9\.9\.9|hunter2|5432/);
    // Liveness does not depend on the database.
    state.down = true;
    const alive = await service.request('GET', '/healthz');
    state.down = false;
    assert.equal(alive.status, 200);
    assert.equal((await service.request('GET', '/readyz')).status, 200);
  });

  test('probes write no line to the log (a request to the API does)', async () => {
    lines.length = 0;
    await service.request('GET', '/healthz');
    await service.request('GET', '/readyz');
    assert.deepEqual(lines.filter((line) => /healthz|readyz/.test(line)), []);
    await service.request('GET', '/v1/locks');
    assert.ok(lines.some((line) => line.includes('/v1/locks')), 'the request log itself is on');
  });
});

test('a database that does not answer in time reads as down, and probes meanwhile share the one check', async () => {
  let statements = 0;
  const stalled = overriding(ctx.database.db, {
    query: (async () => {
      statements++;
      return new Promise(() => undefined); // never answers
    }) as typeof ctx.database.db.query,
  });
  const probe = await databaseProbe(stalled, 50);
  const started = Date.now();
  assert.deepEqual(await Promise.all([probe(), probe(), probe()]), [false, false, false]);
  assert.ok(Date.now() - started < 1000);
  assert.equal(statements, 1);
  assert.equal(await (await databaseProbe(ctx.database.db)).call(null), true);
});

test('a database without the newest migration is not ready', async () => {
  const old = overriding(ctx.database.db, {
    query: (async () => [{ applied: false }]) as typeof ctx.database.db.query,
  });
  assert.equal(await (await databaseProbe(old))(), false);
});

test('GET /readyz answers 503 naming mqtt when the link is down, or up without its subscriptions', async () => {
  const app = Fastify({ logger: false });
  let link: MqttState = 'ok';
  healthRoutes(app, { database: async () => true, mqtt: () => link, jobs: () => true }, new RateLimits(systemClock, null));
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  for (const state of ['down', 'not_subscribed'] as const) {
    link = state;
    const down = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(down.statusCode, 503);
    assert.deepEqual(down.json(), { status: 'not_ready', checks: { database: 'ok', mqtt: state, jobs: 'ok' } });
  }
  await app.close();
});
