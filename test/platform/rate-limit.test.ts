// Rate limits: 600 a minute per API key, 600 a minute per IP without a token, 30 failed authentications
// a minute per IP, windows on the service clock; shared through Redis by several instances.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { advanceClock, alignToMinuteStart, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { freshIp, type HttpResult, type RequestOptions, startService, type TestService, useTestService } from '../helpers/service.ts';
import { backend } from '../helpers/database.ts';
import type { ErrorBody } from '../helpers/types.ts';

let rootLocationId: number;

const ctx = useTestService(async (service) => {
  rootLocationId = (await createAccount(service)).rootLocationId;
  await createLock(service, rootLocationId);
}, {}, { transport: 'inject' });

/** Sends `count` requests, 25 at a time, and returns the answers in order. */
async function burst(target: TestService, count: number, path: string, options: RequestOptions): Promise<HttpResult[]> {
  const results: HttpResult[] = [];
  for (let sent = 0; sent < count; sent += 25) {
    const n = Math.min(25, count - sent);
    results.push(...(await Promise.all(Array.from({ length: n }, () => target.request('GET', path, options)))));
  }
  return results;
}

describe('per API key', () => {
  test('the 601st request in a minute answers 429 rate_limited with Retry-After, until the window rolls', async () => {
    await alignToMinuteStart(ctx.service);
    const { token } = await createApiKey(ctx.service, rootLocationId, ['catalog:read']);
    const first = await burst(ctx.service, 600, '/v1/locks', { token });
    assert.ok(first.every((r) => r.status === 200));
    const remaining = first.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b);
    assert.deepEqual(remaining.slice(0, 3), [0, 1, 2]);
    assert.equal(remaining.at(-1), 599);
    assert.ok(first.every((r) => r.headers.get('x-ratelimit-limit') === '600'));

    const limited = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { token });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');

    // Another key has its own budget.
    const other = await createApiKey(ctx.service, rootLocationId, ['catalog:read']);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token: other.token })).status, 200);

    await advanceClock(ctx.service, retryAfter);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token })).status, 200);
  });

  test('a method the path lacks is authenticated and counted like any request: 405 with Allow and X-RateLimit headers', async () => {
    await alignToMinuteStart(ctx.service);
    const { token } = await createApiKey(ctx.service, rootLocationId, ['people:read']);
    const first = await ctx.service.request<ErrorBody>('PUT', '/v1/locks', { token });
    assert.equal(first.status, 405, first.text);
    assert.equal(first.headers.get('allow'), 'GET');
    assert.equal(first.headers.get('x-ratelimit-limit'), '600');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '599');
    // Counted: the next request of the key has one less left. Scopes do not matter to a 405.
    const next = await ctx.service.request('GET', '/v1/people', { token });
    assert.equal(next.headers.get('x-ratelimit-remaining'), '598');
    // Without a token it is a request without a token: 401, counted in the per-IP bucket.
    const ip = freshIp();
    const anonymous = await ctx.service.request<ErrorBody>('PUT', '/v1/locks', { ip });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('x-ratelimit-limit'), '600');
    assert.equal(anonymous.headers.get('x-ratelimit-remaining'), '599');
  });

  test('every authenticated answer carries X-RateLimit headers, refusals included', async () => {
    const { token } = await createApiKey(ctx.service, rootLocationId, ['people:read']);
    for (const path of ['/v1/locks', '/v1/locks/999999']) {
      const res = await ctx.service.request('GET', path, { token });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('x-ratelimit-limit'), '600');
      assert.ok(res.headers.get('x-ratelimit-remaining'));
    }
  });
});

describe('per IP', () => {
  test('requests without a token share a per-IP bucket of 600 a minute', async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    const first = await burst(ctx.service, 600, '/v1/locks', { ip });
    assert.ok(first.every((r) => r.status === 401));
    // Each 401 describes the per-IP bucket it was counted in.
    assert.ok(first.every((r) => r.headers.get('x-ratelimit-limit') === '600'));
    const remaining = first.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b);
    assert.deepEqual([remaining[0], remaining.at(-1)], [0, 599]);
    const limited = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { ip });
    assert.equal(limited.status, 429);
    assert.ok(limited.headers.get('retry-after'));
    assert.equal(limited.headers.get('x-ratelimit-limit'), '600');
    assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
    // Another address is not affected.
    assert.equal((await ctx.service.request('GET', '/v1/locks', { ip: freshIp() })).status, 401);
  });

  test('the 31st failed authentication locks the IP out, even for a valid key, until the window rolls', async () => {
    await alignToMinuteStart(ctx.service);
    const { token } = await createApiKey(ctx.service, rootLocationId, ['catalog:read']);
    const ip = freshIp();
    const bad = `lk_${'x'.repeat(43)}`;
    for (let i = 0; i < 30; i++) {
      const res = await ctx.service.request('GET', '/v1/locks', { token: bad, ip });
      assert.equal(res.status, 401, `failure ${i + 1}`);
      // A failed authentication describes the failed-authentication budget: how many are left before the lock-out.
      assert.equal(res.headers.get('x-ratelimit-limit'), '30', `failure ${i + 1}`);
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(29 - i), `failure ${i + 1}`);
    }
    const lockedOut = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { token, ip });
    assert.equal(lockedOut.status, 429);
    assert.equal(lockedOut.body.error.code, 'rate_limited');
    const retryAfter = Number(lockedOut.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    // The lock-out refuses the valid key, so its budget is the one described, not the key's.
    assert.equal(lockedOut.headers.get('x-ratelimit-limit'), '30');
    assert.equal(lockedOut.headers.get('x-ratelimit-remaining'), '0');
    const noToken = await ctx.service.request('GET', '/v1/locks', { ip });
    assert.equal(noToken.status, 429);
    assert.equal(noToken.headers.get('x-ratelimit-remaining'), '0');
    // The same key from another address works.
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token, ip: freshIp() })).status, 200);
    await advanceClock(ctx.service, retryAfter);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token, ip })).status, 200);
  });

  test('the operator API is not rate limited', async () => {
    await alignToMinuteStart(ctx.service);
    const results = await burst(ctx.service, 700, '/admin/v1/sandbox/clock', { token: 'test-admin-token-0123456789' });
    assert.ok(results.every((r) => r.status === 200));
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

// Several instances share server PostgreSQL; on the embedded database every query holds the one event loop,
// so under a burst Redis's answers wait behind it and the limits fall back to memory (README: Faults).
describe('several instances on one Redis', { skip: !redisUrl ? 'set TEST_REDIS_URL to run' : backend !== 'postgres' ? 'several instances run on PostgreSQL' : false }, () => {
  test('two app instances share one budget per key', async () => {
    const env = { REDIS_URL: redisUrl as string, REDIS_KEY_PREFIX: `lktest-${randomBytes(4).toString('hex')}` };
    const a = await startService(await ctx.database.openAnother(), env);
    const b = await startService(await ctx.database.openAnother(), env);
    try {
      await alignToMinuteStart(a);
      const { token } = await createApiKey(a, rootLocationId, ['catalog:read']);
      const fromA = await burst(a, 300, '/v1/locks', { token });
      const fromB = await burst(b, 300, '/v1/locks', { token });
      assert.ok([...fromA, ...fromB].every((r) => r.status === 200));
      const limitedOnA = await a.request('GET', '/v1/locks', { token });
      const limitedOnB = await b.request('GET', '/v1/locks', { token });
      assert.equal(limitedOnA.status, 429);
      assert.equal(limitedOnB.status, 429);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
