// The per-address limits of the routes nobody authenticates to: the setup links (/activate/{token} and its
// passkey steps) and the key holder's polls of a command. Counted before the route looks anything up.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { HOLDER_LIMITS } from '../../src/modules/holder/service.ts';
import { alignToMinuteStart, advanceClock } from '../helpers/fixtures.ts';
import { freshIp, type HttpResult, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

function assertRefused(res: HttpResult<ErrorBody>, what: string): number {
  assert.equal(res.status, 429, `${what}: ${res.text}`);
  assert.equal(res.body.error.code, 'rate_limited', what);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, what);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${retryAfter}`);
  return retryAfter;
}

describe('setup links', () => {
  test(`${HOLDER_LIMITS.setupLinkPerIp} requests a minute per address to /activate/…, then 429 until the window rolls`, async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    const json = { accept: 'application/json' };
    // Guessed links, in every form a setup link is asked: the page, the activation, the passkey steps.
    const asks: Array<[string, string, Record<string, unknown> | undefined]> = [
      ['GET', '/activate/guess', undefined],
      ['POST', '/activate/guess', undefined],
      ['POST', '/activate/guess/passkey/options', {}],
    ];
    for (let i = 0; i < HOLDER_LIMITS.setupLinkPerIp; i++) {
      const [method, path, body] = asks[i % asks.length] as (typeof asks)[number];
      const res = await ctx.service.request(method, path.replace('guess', `guess${i}`), { ip, headers: json, ...(body ? { body } : {}) });
      assert.equal(res.status, 410, `${method} ${path} ${i + 1}: ${res.text}`);
    }
    for (const [method, path, body] of [...asks, ['POST', '/activate/guess/passkey', { response: {} }] as const]) {
      const res = await ctx.service.request<ErrorBody>(method, path, { ip, headers: json, ...(body ? { body } : {}) });
      assertRefused(res, `${method} ${path}`);
    }
    // Another address has its own budget; the window rolls.
    assert.equal((await ctx.service.request('GET', '/activate/guess', { ip: freshIp() })).status, 410);
    const retryAfter = assertRefused(await ctx.service.request<ErrorBody>('GET', '/activate/guess', { ip }), 'still');
    await advanceClock(ctx.service, retryAfter);
    assert.equal((await ctx.service.request('GET', '/activate/guess', { ip })).status, 410);
  });
});

describe("the key holder's polls", () => {
  test(`${HOLDER_LIMITS.pollsPerIp} polls of a command a minute per address, then 429`, async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    for (let sent = 0; sent < HOLDER_LIMITS.pollsPerIp; sent += 25) {
      const answers = await Promise.all(Array.from({ length: 25 }, () => ctx.service.request('GET', `/my-key/commands/${randomUUID()}`, { ip })));
      assert.ok(answers.every((res) => res.status === 404), answers.map((res) => res.status).join(' '));
    }
    assertRefused(await ctx.service.request<ErrorBody>('GET', `/my-key/commands/${randomUUID()}`, { ip }), 'poll');
    // The setup links count apart.
    assert.equal((await ctx.service.request('GET', '/activate/guess', { ip })).status, 410);
  });

  test("the holder's static page and its assets are not limited (served from memory)", async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    for (let i = 0; i < 100; i++) assert.equal((await ctx.service.request('GET', '/my-key/manifest.webmanifest', { ip })).status, 200);
  });
});
