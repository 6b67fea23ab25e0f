// The SDK's retries against a real Latchkey with a small rate limit: Idempotency-Key reuse, Retry-After,
// the statuses never retried, and the caller's AbortSignal.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { advanceClock, alignToMinuteStart, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import { Latchkey, LatchkeyError, type LatchkeyOptions } from '../../packages/sdk/src/index.ts';

const RATE_LIMIT = 5;
const ctx = useTestService(undefined, { API_RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), KEY_REVOCATION_ENABLED: 'false' });

/** An API key of its own (so its own budget) and a client for it. */
async function client(options: Partial<LatchkeyOptions> = {}) {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['people:write', 'keys:write', 'webhooks:manage']);
  return { token, lk: new Latchkey({ apiKey: token, baseUrl: ctx.service.url, ...options }) };
}

/** Spends the key's budget of the current window. */
async function exhaust(token: string): Promise<void> {
  for (let i = 0; i < RATE_LIMIT; i++) assert.equal((await ctx.service.request('GET', '/v1/people', { token })).status, 200);
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('the call succeeded');
}

const envelope = (code: string) => JSON.stringify({ error: { code, message: `a ${code} in the way` } });

describe('Idempotency-Key', () => {
  test('a create whose answer was lost is retried with the same key and answered from the stored response', async () => {
    const sent: Array<{ key: string | null; status: number; replayed: string | null }> = [];
    let dropped = false;
    const { lk } = await client({
      fetch: async (request) => {
        const response = await fetch(request);
        sent.push({ key: request.headers.get('idempotency-key'), status: response.status, replayed: response.headers.get('idempotent-replayed') });
        if (request.method === 'POST' && !dropped) {
          dropped = true; // the service made the person; its answer never arrives
          await response.arrayBuffer();
          throw new TypeError('fetch failed: the connection was reset');
        }
        return response;
      },
    });
    const person = await lk.people.create({ name: 'Made once' }); // no phone or e-mail: nothing to de-duplicate on
    assert.equal(sent.length, 2);
    assert.match(sent[0]?.key ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(sent[1]?.key, sent[0]?.key, 'the retry carries the same Idempotency-Key');
    assert.deepEqual([sent[0]?.status, sent[1]?.status, sent[1]?.replayed], [201, 201, 'true']);
    const everyone = await lk.people.list().all();
    assert.deepEqual(everyone.map((p) => p.id), [person.id], 'one person');
  });

  test('every create has a key of its own; a caller-chosen key is sent as given', async () => {
    const keys: Array<string | null> = [];
    const { lk } = await client({
      fetch: (request) => {
        keys.push(request.headers.get('idempotency-key'));
        return fetch(request);
      },
    });
    const first = await lk.people.create({ name: 'Twin' });
    const second = await lk.people.create({ name: 'Twin' });
    assert.notEqual(first.id, second.id);
    assert.notEqual(keys[0], keys[1]);
    const chosen = await lk.people.create({ name: 'Chosen' }, { idempotencyKey: 'hr-sync-4711' });
    const replay = await lk.people.create({ name: 'Chosen' }, { idempotencyKey: 'hr-sync-4711' });
    assert.equal(replay.id, chosen.id);
    assert.deepEqual(keys.slice(2), ['hr-sync-4711', 'hr-sync-4711']);
  });
});

describe('retries', () => {
  test('a lost connection is retried for a GET, never for a POST without Idempotency-Key', async () => {
    let calls = 0;
    const { lk } = await client({
      fetch: (request) => {
        calls++;
        return calls <= 2 ? Promise.reject(new TypeError('fetch failed')) : fetch(request);
      },
    });
    const page = await lk.people.list().page();
    assert.deepEqual([calls, page.data], [3, []]);

    let pings = 0;
    const failing = new Latchkey({
      apiKey: 'lk_unused',
      baseUrl: ctx.service.url,
      fetch: () => {
        pings++;
        return Promise.reject(new TypeError('fetch failed'));
      },
    });
    const error = await rejection(failing.webhooks.ping(randomUUID()));
    assert.ok(error instanceof TypeError);
    assert.equal(pings, 1, 'a ping may have been sent: it is not sent again');
  });

  test('429 is retried after the Retry-After the service sent', async () => {
    const seen: Array<{ status: number; retryAfter: string | null }> = [];
    const { lk, token } = await client({
      fetch: async (request) => {
        const response = await fetch(request);
        seen.push({ status: response.status, retryAfter: response.headers.get('retry-after') });
        return response;
      },
    });
    await alignToMinuteStart(ctx.service);
    await exhaust(token);
    // Then to 57.5 s into the window (2.5 s left: a short wait), read from the service's clock after the
    // requests, whatever they took on a loaded machine.
    const now = (await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now;
    const intoMinute = new Date(now).getUTCSeconds() + new Date(now).getUTCMilliseconds() / 1000;
    await advanceClock(ctx.service, Math.max(0, 57.5 - intoMinute));
    const started = Date.now();
    const page = await lk.people.list().page();
    const waited = Date.now() - started;
    assert.deepEqual(page.data, []);
    assert.deepEqual(seen.map((s) => s.status), [429, 200]);
    const retryAfter = Number(seen[0]?.retryAfter);
    assert.ok(retryAfter >= 1 && retryAfter <= 3, `Retry-After ${retryAfter}`);
    assert.ok(waited >= retryAfter * 1000 - 50, `waited ${waited} ms for Retry-After ${retryAfter}`);
  });

  test('a wait longer than maxRetryWaitMs, or retries: 0, hands the 429 to the caller at once', async () => {
    await alignToMinuteStart(ctx.service); // the window has about 59 s left
    for (const options of [{ maxRetryWaitMs: 1000 }, { retries: 0 }]) {
      const { lk, token } = await client(options);
      await exhaust(token);
      const started = Date.now();
      const error = await rejection(lk.people.list().page());
      assert.ok(error instanceof LatchkeyError);
      assert.deepEqual([error.status, error.code], [429, 'rate_limited']);
      assert.ok((error.retryAfter ?? 0) > 1, `retryAfter ${error.retryAfter}`);
      assert.ok(Date.now() - started < 1000, JSON.stringify(options));
    }
  });

  test('the caller aborts a call while it waits for a retry, or before it starts', async () => {
    await alignToMinuteStart(ctx.service);
    let calls = 0;
    const { lk, token } = await client({
      fetch: (request) => {
        calls++;
        return fetch(request);
      },
    });
    await exhaust(token);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = Date.now();
    const error = await rejection(lk.people.list({}, { signal: controller.signal }).page());
    assert.equal((error as Error).name, 'AbortError');
    assert.ok(Date.now() - started < 2000, 'the wait of about a minute was cut short');
    assert.equal(calls, 1);
    const before = await rejection(lk.people.create({ name: 'Never' }, { signal: AbortSignal.abort() }));
    assert.equal((before as Error).name, 'AbortError');
    assert.equal(calls, 1, 'nothing was sent');
  });

  test('503 without Retry-After (revocation disabled) and 500 are not retried; 503 and 409 in progress with Retry-After are', async () => {
    let calls = 0;
    const { lk } = await client({
      fetch: (request) => {
        calls++;
        return fetch(request);
      },
    });
    const disabled = await rejection(lk.keys.revoke(1));
    assert.ok(disabled instanceof LatchkeyError);
    assert.deepEqual([disabled.status, disabled.code, disabled.retryAfter, calls], [503, 'not_available', null, 1]);

    // A proxy in front of the service answers first; the next attempt reaches the service.
    for (const [status, code, retried] of [
      [500, 'server_error', false],
      [503, 'not_available', true],
      [409, 'idempotency_in_progress', true],
    ] as const) {
      const statuses: number[] = [];
      const { lk: proxied } = await client({
        fetch: (request) => {
          if (statuses.length === 0) {
            statuses.push(status);
            return Promise.resolve(new Response(envelope(code), { status, headers: { 'content-type': 'application/json', ...(status === 500 ? {} : { 'retry-after': '1' }) } }));
          }
          return fetch(request).then((response) => {
            statuses.push(response.status);
            return response;
          });
        },
      });
      const outcome = await proxied.people.create({ name: `Behind a ${status}` }).catch((error: unknown) => error);
      if (retried) assert.deepEqual(statuses, [status, 201], code);
      else assert.ok(outcome instanceof LatchkeyError && outcome.code === code && statuses.length === 1, code);
    }
  });
});
