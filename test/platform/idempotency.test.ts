// Idempotency-Key on POST /people (the same mechanism serves POST /keys and POST /webhooks).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import type { Database } from '../../src/platform/db/index.ts';
import { overriding, withFailingTransactions } from '../helpers/database.ts';
import { startService, useTestService, type HttpResult } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

async function tenant(accountBody: Record<string, unknown> = {}) {
  const account = await createAccount(ctx.service, accountBody);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['people:write']);
  return { account, token: key.token, keyId: key.id };
}

function post(token: string, key: string | undefined, body: unknown): Promise<HttpResult> {
  return ctx.service.request('POST', '/v1/people', { token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });
}

async function peopleNamed(name: string): Promise<number> {
  return (await ctx.database.db.query('SELECT id FROM people WHERE name = $1', [name])).length;
}

describe('Idempotency-Key', () => {
  test('the same key and body replays the stored response verbatim with Idempotent-Replayed: true', async () => {
    const { token } = await tenant();
    const first = await post(token, 'create-uma-1', { name: 'Uma', email: 'uma@example.com' });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const replay = await post(token, 'create-uma-1', { email: 'uma@example.com', name: 'Uma' }); // keys in another order
    assert.equal(replay.status, 201);
    assert.equal(replay.text, first.text, 'byte-identical body');
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    for (const header of ['content-type', 'content-length', 'cache-control']) {
      assert.equal(replay.headers.get(header), first.headers.get(header), header);
    }
    assert.equal(await peopleNamed('Uma'), 1);
    const events = await ctx.database.db.query('SELECT id FROM domain_events WHERE person_id = $1', [(first.body as { id: string }).id]);
    assert.equal(events.length, 1);
  });

  test('the same key with another body answers 409 idempotency_conflict', async () => {
    const { token } = await tenant();
    assert.equal((await post(token, 'k-conflict', { name: 'Vic' })).status, 201);
    const res = await post(token, 'k-conflict', { name: 'Vic', title: 'Boss' });
    assert.equal(res.status, 409);
    assert.equal((res.body as ErrorBody).error.code, 'idempotency_conflict');
  });

  test('keys are stored per API key: another key with the same Idempotency-Key is independent', async () => {
    const a = await tenant();
    const bKey = (await createApiKey(ctx.service, a.account.rootLocationId, ['people:write'])).token;
    assert.equal((await post(a.token, 'shared-key', { name: 'Wes' })).status, 201);
    const fromB = await post(bKey, 'shared-key', { name: 'Xia' });
    assert.equal(fromB.status, 201);
    assert.equal(fromB.headers.get('idempotent-replayed'), null);
    assert.equal((fromB.body as { name: string }).name, 'Xia');
  });

  test('a malformed header answers 400 invalid_request', async () => {
    const { token } = await tenant();
    for (const key of ['', 'a'.repeat(65), 'has space', 'dots.not.allowed', 'ünïcode']) {
      const res = await post(token, key, { name: 'Yan' });
      assert.equal(res.status, 400, JSON.stringify(key));
      assert.equal((res.body as ErrorBody).error.code, 'invalid_request');
    }
    assert.equal((await post(token, 'a'.repeat(64), { name: 'Yan' })).status, 201);
    assert.equal((await post(token, 'A-z_0-9', { name: 'Yan' })).status, 201);
  });

  test('a 422 is stored and replayed like any other answer', async () => {
    const { token } = await tenant();
    const first = await post(token, 'bad-body', { name: 'Admin' });
    assert.equal(first.status, 422);
    const replay = await post(token, 'bad-body', { name: 'Admin' });
    assert.equal(replay.status, 422);
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });

  test('while the first call runs, the same key answers 409 idempotency_in_progress with Retry-After: 2', async () => {
    const { account, token } = await tenant({ locking_system: 'sandbox' });
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, delay_ms: 1500 });
    const slow = post(token, 'slow-one', { name: 'Zed' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    const second = await post(token, 'slow-one', { name: 'Zed' });
    assert.equal(second.status, 409);
    assert.equal((second.body as ErrorBody).error.code, 'idempotency_in_progress');
    assert.equal(second.headers.get('retry-after'), '2');
    assert.equal((await slow).status, 201);
    const after = await post(token, 'slow-one', { name: 'Zed' });
    assert.equal(after.status, 201);
    assert.equal(after.headers.get('idempotent-replayed'), 'true');
  });

  test('a first call still in progress after 60 seconds on the service clock is abandoned and the retry executes', async () => {
    const { token, keyId } = await tenant();
    // The first call's instance died after claiming the key.
    const clock = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
    const body = { name: 'Abe' };
    const started = new Date(clock.body.now);
    const print = createHash('sha256').update(`POST /v1/people\n{"name":"Abe"}`).digest('hex');
    await ctx.database.db.query(
      `INSERT INTO idempotency_keys (api_key_id, key, fingerprint, state, started_at, expires_at)
       VALUES ($1, 'crashed', $2, 'in_progress', $3, $4)`,
      [keyId, print, started, new Date(started.getTime() + 86_400_000)],
    );
    const early = await post(token, 'crashed', body);
    assert.equal((early.body as ErrorBody).error.code, 'idempotency_in_progress');
    await advanceClock(ctx.service, 61);
    const retried = await post(token, 'crashed', body);
    assert.equal(retried.status, 201);
    assert.equal(await peopleNamed('Abe'), 1);
  });

  test('409 lockingsystem_rejected is never stored: the retry executes again', async () => {
    const { account, token } = await tenant({ locking_system: 'sandbox' });
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'reject' });
    const refused = await post(token, 'ls-retry', { name: 'Bea' });
    assert.equal(refused.status, 409);
    assert.equal((refused.body as ErrorBody).error.code, 'lockingsystem_rejected');
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'accept' });
    const retried = await post(token, 'ls-retry', { name: 'Bea' });
    assert.equal(retried.status, 201);
    assert.equal(retried.headers.get('idempotent-replayed'), null);
  });

  test('5xx answers are never stored: the retry executes again', async () => {
    let failing = false;
    const service = await startService(withFailingTransactions(ctx.database.db, () => failing));
    try {
      const account = await createAccount(service);
      const key = await createApiKey(service, account.rootLocationId, ['people:write']);
      const headers = { 'idempotency-key': 'flaky-1' };
      failing = true;
      const first = await service.request('POST', '/v1/people', { token: key.token, body: { name: 'Cal' }, headers });
      assert.equal(first.status, 500);
      failing = false;
      const second = await service.request('POST', '/v1/people', { token: key.token, body: { name: 'Cal' }, headers });
      assert.equal(second.status, 201);
    } finally {
      await service.close();
    }
  });

  test('records expire after 24 hours: the key can then be used for another body, and the purge removes them', async () => {
    const { token, keyId } = await tenant();
    assert.equal((await post(token, 'day-old', { name: 'Dot' })).status, 201);
    await advanceClock(ctx.service, 24 * 3600 + 1);
    const rows = await ctx.database.db.query('SELECT key FROM idempotency_keys WHERE api_key_id = $1', [keyId]);
    assert.equal(rows.length, 0, 'purged by the job the clock advance ran');
    const reused = await post(token, 'day-old', { name: 'Dot', title: 'New' });
    assert.equal(reused.status, 201);
    assert.equal(reused.headers.get('idempotent-replayed'), null);
  });

  test('stored responses are sealed: the record of POST /v1/webhooks holds no signing secret, and the replay returns it byte for byte', async () => {
    const account = await createAccount(ctx.service);
    const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
    const body = { url: 'https://93.184.215.14/hook', events: ['person.created'] };
    const headers = { 'idempotency-key': 'hook-once' };
    const first = await ctx.service.request<{ secret: string }>('POST', '/v1/webhooks', { token: key.token, body, headers });
    assert.equal(first.status, 201, first.text);
    const secret = first.body.secret;
    assert.match(secret, /^whsec_/);
    const [record] = await ctx.database.db.query<{ text: string }>(
      'SELECT row_to_json(k)::text AS text FROM idempotency_keys k WHERE api_key_id = $1 AND key = $2',
      [key.id, 'hook-once'],
    );
    assert.ok(record, 'the response is stored');
    assert.ok(!record.text.includes(secret), `the stored record holds the secret: ${record.text}`);
    assert.ok(!record.text.includes('93.184.215.14'), 'nothing of the response in clear');
    const replay = await ctx.service.request('POST', '/v1/webhooks', { token: key.token, body, headers });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.status, 201);
    assert.equal(replay.text, first.text, 'byte-identical body');
  });

  test('a record stored before responses were sealed (migration 009) still replays', async () => {
    const { token, keyId } = await tenant();
    const print = createHash('sha256').update(`POST /v1/people\n{"name":"Fay"}`).digest('hex');
    const clock = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
    const stored = '{"id":"legacy","name":"Fay"}';
    await ctx.database.db.query(
      `INSERT INTO idempotency_keys (api_key_id, key, fingerprint, state, status, content_type, body, started_at, expires_at)
       VALUES ($1, 'legacy', $2, 'done', 201, 'application/json; charset=utf-8', $3, $4, $5)`,
      [keyId, print, stored, new Date(clock.body.now), new Date(Date.parse(clock.body.now) + 3_600_000)],
    );
    const replay = await post(token, 'legacy', { name: 'Fay' });
    assert.equal(replay.status, 201);
    assert.equal(replay.text, stored);
    assert.equal(await peopleNamed('Fay'), 0);
  });

  test('without the header every call executes (POST /people still de-duplicates on data)', async () => {
    const { token } = await tenant();
    assert.equal((await post(token, undefined, { name: 'Eli', email: 'eli@example.com' })).status, 201);
    const again = await post(token, undefined, { name: 'Eli', email: 'eli@example.com' });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('idempotent-replayed'), null);
  });

  test('a key whose claim is released under every attempt is answered 409 idempotency_in_progress, not retried without end', async () => {
    const { token } = await tenant();
    // Every statement about this key finds nothing: the INSERT meets a record it may not take over, and the
    // record is gone when read, as if each first call failed and released it in between. Picked by parameter.
    let statements = 0;
    const db = ctx.database.db;
    const flickering = overriding(db, {
      query: (async (sql, params = []) => {
        if (!params.includes('flicker')) return db.query(sql, params);
        statements += 1;
        return [];
      }) as Database['query'],
    });
    const service = await startService(flickering, {}, undefined, undefined, 'inject');
    try {
      const answer = await Promise.race([
        service.request('POST', '/v1/people', { token, body: { name: 'Flo' }, headers: { 'idempotency-key': 'flicker' } }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer after ${statements} statements`)), 10_000).unref()),
      ]);
      assert.equal(answer.status, 409, answer.text);
      assert.equal((answer.body as ErrorBody).error.code, 'idempotency_in_progress');
      assert.equal(answer.headers.get('retry-after'), '2');
      assert.equal(statements, 6, 'three claims of two statements each');
    } finally {
      await service.close();
    }
  });
});
