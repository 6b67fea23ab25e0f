// Numbers in paths and query strings are plain decimal integers: no other spelling is read as one, so an
// id has no second spelling (and no second rate-limit budget), and a limit is never Infinity.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { validatorCompiler } from '../../src/platform/validation.ts';
import { alignToMinuteStart, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let lockId: number;
let token: string;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  lockId = await createLock(service, account.rootLocationId);
  token = (await createApiKey(service, account.rootLocationId, ['catalog:read', 'keys:read', 'locks:control'], { lock_allowlist: [lockId] })).token;
}, {}, { transport: 'inject' });

/** The spellings ajv's coercion used to read as the number `n`. */
const otherSpellings = (n: number) => [`0x${n.toString(16)}`, `${n}.0`, `${n}e0`, `+${n}`, `%2B${n}`, `%20${n}`, `${n}%20`, `%09${n}`, `${n}.`];

describe('path ids', () => {
  test('0x7, 7.0, 7e0, +7 and 7 with spaces are malformed: 400 invalid_request', async () => {
    for (const spelling of otherSpellings(lockId)) {
      for (const [method, path] of [
        ['GET', `/v1/locks/${spelling}`],
        ['GET', `/v1/keys/${spelling}`],
        ['POST', `/v1/locks/${spelling}/unlock`],
      ] as const) {
        const res = await ctx.service.request<ErrorBody>(method, path, { token });
        assert.equal(res.status, 400, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.error.code, 'invalid_request');
      }
      const admin = await ctx.service.admin<ErrorBody>('GET', `/admin/v1/accounts/${spelling}`);
      assert.equal(admin.status, 400, `accounts/${spelling}`);
    }
  });

  test('an id of more digits than a number holds answers 400, not a database error', async () => {
    for (const digits of [400, 5000]) {
      const res = await ctx.service.request<ErrorBody>('GET', `/v1/locks/${'1'.repeat(digits)}`, { token });
      assert.equal(res.status, 400, `${digits} digits: ${res.text}`);
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });

  test('the plain decimal spelling works, leading zeros included', async () => {
    assert.equal((await ctx.service.request('GET', `/v1/locks/${lockId}`, { token })).status, 200);
    assert.equal((await ctx.service.request('GET', `/v1/locks/00${lockId}`, { token })).status, 200);
  });
});

describe('limit and other integers of the query string', () => {
  test('limit=1e400, Infinity and every other non-integer spelling answer 400 invalid_request', async () => {
    for (const limit of ['1e400', 'Infinity', '-Infinity', 'NaN', '1e2', '0x10', '%2B5', '%205', '5.0', '']) {
      const res = await ctx.service.request<ErrorBody>('GET', `/v1/locks?limit=${limit}`, { token });
      assert.equal(res.status, 400, `limit=${limit.slice(0, 20)}: ${res.text}`);
      assert.equal(res.body.error.code, 'invalid_request');
    }
    for (const locationId of ['0x1', '1'.repeat(400)]) {
      const location = await ctx.service.request<ErrorBody>('GET', `/v1/locks?location_id=${locationId}`, { token });
      assert.equal(location.status, 400, `location_id=${locationId.slice(0, 20)}`);
    }
  });

  test('integer limits out of range are still clamped', async () => {
    for (const limit of ['0', '-3', '999', '99999999999999999999', '9'.repeat(400)]) {
      const res = await ctx.service.request<{ data: unknown[] }>('GET', `/v1/locks?limit=${limit}`, { token });
      assert.equal(res.status, 200, `limit=${limit.slice(0, 20)}`);
    }
  });
});

describe('numbers in bodies', () => {
  test('JSON numbers that overflow to Infinity are no number of any field, even one without a maximum', () => {
    const validate = validatorCompiler()({ schema: Type.Object({ n: Type.Integer() }), httpPart: 'body', method: 'POST', url: '/' }) as (data: unknown) => boolean;
    assert.equal(validate(JSON.parse('{"n": 12}')), true);
    assert.equal(validate(JSON.parse('{"n": 1e400}')), false);
    assert.equal(validate(JSON.parse('{"n": -1e400}')), false);
  });
});

describe('per-lock unlock limit', () => {
  test('11 unlocks of one lock in a minute, in mixed spellings, hit 429 rate_limited on the 11th', async () => {
    await alignToMinuteStart(ctx.service);
    const spellings = [`${lockId}`, `0${lockId}`, `00${lockId}`, `000${lockId}`];
    for (let i = 0; i < 10; i++) {
      const res = await ctx.service.request<ErrorBody>('POST', `/v1/locks/${spellings[i % spellings.length]}/unlock`, { token });
      // Not remote: refused, but counted (the limit is counted before the lock is looked at).
      assert.equal(res.status, 409, `unlock ${i + 1}: ${res.text}`);
      assert.equal(res.body.error.code, 'lock_not_remote');
      // A malformed spelling in between answers 400 and opens no budget of its own.
      const malformed = otherSpellings(lockId)[i % otherSpellings(lockId).length] as string;
      assert.equal((await ctx.service.request('POST', `/v1/locks/${malformed}/unlock`, { token })).status, 400);
    }
    for (const spelling of [`${lockId}`, ...spellings.slice(1), `0000000${lockId}`]) {
      const limited = await ctx.service.request<ErrorBody>('POST', `/v1/locks/${spelling}/unlock`, { token });
      assert.equal(limited.status, 429, `/v1/locks/${spelling}/unlock`);
      assert.equal(limited.body.error.code, 'rate_limited');
      assert.equal(limited.headers.get('x-ratelimit-limit'), '10');
      assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    }
  });
});
