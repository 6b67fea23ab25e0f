// GET /v1/webhooks/listen: events streamed as signed deliveries over server-sent events (README: Webhooks,
// "Local development"): verifiable with the stream's secret like a real delivery, the key's location only,
// ended when the key is revoked, a few streams per key, and no subscription or delivery row written.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifyWebhook } from '../../packages/sdk/src/index.ts';
import type { Sql } from '../../src/platform/db/index.ts';
import { backend, overriding } from '../helpers/database.ts';
import { createAccount, createApiKey, createDepartment } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { openListenStream } from '../helpers/listen.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { startService, useTestService } from '../helpers/service.ts';

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

/** A listen stream of the test's service. */
const listen = (token: string, query = '') => openListenStream(ctx.service.url, token, query);

async function tenant() {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  return { account, token: key.token, keyId: key.id };
}

async function createPerson(token: string, name: string): Promise<string> {
  const res = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

const countRows = async (table: string) => Number((await ctx.database.db.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`))[0]?.n);

describe('listen', () => {
  test('streams each event as a signed delivery that verifyWebhook accepts with the stream secret, the body a subscription gets', async () => {
    const t = await tenant();
    const sub = await ctx.service.request<{ secret: string }>('POST', '/v1/webhooks', { token: t.token, body: { url: receiver.url('/listen-compare'), events: ['person.created'] } });
    assert.equal(sub.status, 201, sub.text);
    const deliveriesBefore = await countRows('webhook_deliveries');
    const subscriptionsBefore = await countRows('webhook_subscriptions');

    const stream = await listen(t.token, '?events=person.created');
    assert.equal(stream.response.status, 200);
    assert.match(stream.response.headers.get('content-type') ?? '', /^text\/event-stream/);
    const ready = await stream.ready();
    assert.match(ready.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(ready.secret, sub.body.secret);
    assert.deepEqual(ready.events, ['person.created']);

    const personId = await createPerson(t.token, 'Streamed Person');
    await waitFor(() => stream.deliveries().length > 0, 'a delivery on the stream');
    const [delivery] = stream.deliveries();
    assert.ok(delivery);
    const now = (await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now;
    const event = await verifyWebhook(delivery.body, delivery.headers, ready.secret, { now: new Date(now) });
    assert.equal(event.type, 'person.created');
    assert.equal((event.data as { id: string }).id, personId);
    assert.equal(delivery.headers['x-service-event'], 'person.created');
    assert.equal(delivery.headers['x-service-delivery'], event.id);
    assert.equal(delivery.headers['user-agent'], 'Service-Webhooks/1.0');
    await assert.rejects(verifyWebhook(delivery.body, delivery.headers, sub.body.secret, { now: new Date(now) }), /signature/);

    // The subscription of the same location got the same event with the same body but for its id.
    await waitFor(() => receiver.received.some((r) => r.path === '/listen-compare'), 'the subscription delivery', 10_000);
    const real = receiver.received.find((r) => r.path === '/listen-compare');
    const streamed = JSON.parse(delivery.body) as Record<string, unknown>;
    assert.deepEqual({ ...streamed, id: null }, { ...real?.body, id: null });
    assert.deepEqual(Object.keys(streamed), ['id', 'type', 'created_at', 'data']);

    // Nothing written for the stream: the one new delivery row is the subscription's.
    assert.equal(await countRows('webhook_deliveries'), deliveriesBefore + 1);
    assert.equal(await countRows('webhook_subscriptions'), subscriptionsBefore);
    await stream.close();
  });

  test("only the key's location and its departments: a sibling department's and another account's events are not streamed", async () => {
    const t = await tenant();
    const deptA = await createDepartment(ctx.service, t.account.rootLocationId, 'A');
    const deptB = await createDepartment(ctx.service, t.account.rootLocationId, 'B');
    const keyA = await createApiKey(ctx.service, deptA, ['webhooks:manage', 'people:write']);
    const keyB = await createApiKey(ctx.service, deptB, ['people:write']);
    const other = await tenant();

    const streamA = await listen(keyA.token);
    const streamRoot = await listen(t.token);
    await streamA.ready();
    await streamRoot.ready();
    await createPerson(keyB.token, 'In B');
    await createPerson(other.token, 'Elsewhere');
    await createPerson(t.token, 'At the root');
    await createPerson(keyA.token, 'In A');
    await waitFor(() => streamA.deliveries().length >= 1 && streamRoot.deliveries().length >= 3, 'the deliveries');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const names = (stream: typeof streamA) => stream.deliveries().map((d) => (JSON.parse(d.body) as { data: { name: string } }).data.name);
    assert.deepEqual(names(streamA), ['In A']);
    assert.deepEqual(names(streamRoot).sort(), ['At the root', 'In A', 'In B']);
    await streamA.close();
    await streamRoot.close();
  });

  test('the stream ends when its key is revoked', async () => {
    const t = await tenant();
    const stream = await listen(t.token);
    await stream.ready();
    const revoked = await ctx.service.admin('DELETE', `/admin/v1/api_keys/${t.keyId}`);
    assert.ok(revoked.status < 300, revoked.text);
    await waitFor(() => stream.ended(), 'the end of the stream');
    assert.deepEqual(stream.messages.at(-1), { event: 'end', data: JSON.stringify({ reason: 'key_revoked' }) });
    const again = await ctx.service.request('GET', '/v1/webhooks/listen', { token: t.token });
    assert.equal(again.status, 401);
  });

  test('three streams per key at once, 429 beyond; a closed one makes room', async () => {
    const t = await tenant();
    const streams = [await listen(t.token), await listen(t.token), await listen(t.token)];
    for (const stream of streams) await stream.ready();
    const fourth = await ctx.service.request<{ error: { code: string } }>('GET', '/v1/webhooks/listen', { token: t.token });
    assert.equal(fourth.status, 429);
    assert.equal(fourth.body.error.code, 'rate_limited');
    assert.ok(fourth.headers.get('retry-after'));
    // Another key of the same account is not held back.
    const otherKey = await createApiKey(ctx.service, t.account.rootLocationId, ['webhooks:manage']);
    const other = await listen(otherKey.token);
    await other.ready();
    await other.close();
    await streams[0]?.close();
    await waitFor(async () => {
      const next = await listen(t.token);
      const ok = next.response.status === 200;
      await next.close();
      return ok;
    }, 'room for a stream');
    for (const stream of streams.slice(1)) await stream.close();
  });

  test('a client that leaves while its stream is being prepared holds no place: three streams open right after', async () => {
    // A second service on the same database, whose read of the newest event id waits until the client has gone:
    // the route then takes over a reply whose connection closed before anything listened for its close.
    let leaving: (() => Promise<void>) | null = null;
    let markAnswered = () => {};
    const answered = new Promise<void>((resolve) => (markAnswered = resolve));
    const db = overriding(ctx.database.db, {
      query: async <T extends object>(sql: Sql, params?: readonly unknown[]): Promise<T[]> => {
        if (!leaving || typeof sql !== 'string' || !sql.includes('max(id)::text AS id FROM domain_events')) return ctx.database.db.query<T>(sql, params);
        const leave = leaving;
        leaving = null;
        await leave();
        const rows = await ctx.database.db.query<T>(sql, params);
        // The route goes on synchronously from here to the stream's open(): done by the next turn of the loop.
        setImmediate(markAnswered);
        return rows;
      },
    });
    const other = await startService(db, { WEBHOOK_ALLOW_HOSTS: 'localhost' });
    try {
      const t = await tenant();
      const abort = new AbortController();
      leaving = async () => {
        abort.abort();
        await waitFor(async () => (await new Promise<number>((resolve) => other.latchkey.app.server.getConnections((_e, n) => resolve(n)))) === 0, 'the client gone');
      };
      const left = await fetch(`${other.url}/v1/webhooks/listen`, { headers: { authorization: `Bearer ${t.token}` }, signal: abort.signal }).catch((error: Error) => error);
      assert.ok(left instanceof Error, 'the client left before an answer');
      await answered;
      const streams = [];
      for (let i = 0; i < 3; i++) {
        const stream = await openListenStream(other.url, t.token);
        streams.push(stream);
        assert.equal(stream.response.status, 200, `stream ${i + 1} of 3`);
      }
      for (const stream of streams) await stream.close();
    } finally {
      await other.close();
    }
  });

  test('the stream carries the headers every answer of the public API carries: rate limits, request id, nosniff', async () => {
    const t = await tenant();
    const list = await ctx.service.request('GET', '/v1/webhooks', { token: t.token });
    assert.equal(list.status, 200, list.text);
    const stream = await listen(t.token);
    await stream.ready();
    const headers = stream.response.headers;
    // Every header of another route's answer but those that describe its body or connection.
    const bodyHeaders = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive', 'etag', 'transfer-encoding']);
    for (const [name] of list.headers) {
      if (!bodyHeaders.has(name)) assert.ok(headers.has(name), `${name} missing from the stream's head`);
    }
    assert.equal(headers.get('x-ratelimit-limit'), '600');
    assert.match(headers.get('x-ratelimit-remaining') ?? '', /^[0-9]+$/);
    assert.match(headers.get('x-request-id') ?? '', /.+/);
    assert.notEqual(headers.get('x-request-id'), list.headers.get('x-request-id'));
    assert.equal(headers.get('x-content-type-options'), 'nosniff');
    assert.equal(headers.get('cache-control'), 'no-store, private');
    assert.match(headers.get('content-type') ?? '', /^text\/event-stream/);
    await stream.close();
  });

  test('refuses unknown event names and keys without webhooks:manage', async () => {
    const t = await tenant();
    const unknown = await ctx.service.request<{ error: { code: string; message: string } }>('GET', '/v1/webhooks/listen?events=person.created,nope', { token: t.token });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /"nope"/);
    const reader = await createApiKey(ctx.service, t.account.rootLocationId, ['people:write']);
    const refused = await ctx.service.request<{ error: { code: string } }>('GET', '/v1/webhooks/listen', { token: reader.token });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'insufficient_scope');
  });

  test('two instances: an event emitted and a key revoked through another instance reach the stream on this one', { skip: backend !== 'postgres' && 'a second instance needs PostgreSQL' }, async () => {
    const other = await startService(await ctx.database.openAnother(), { WEBHOOK_ALLOW_HOSTS: 'localhost' });
    try {
      const t = await tenant();
      const stream = await listen(t.token);
      const ready = await stream.ready();
      const res = await other.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'From B' } });
      assert.equal(res.status, 201, res.text);
      await waitFor(() => stream.deliveries().length > 0, 'the event from the other instance');
      const [delivery] = stream.deliveries();
      const now = (await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now;
      const event = await verifyWebhook(delivery?.body ?? '', delivery?.headers ?? {}, ready.secret, { now: new Date(now) });
      assert.equal((event.data as { id: string }).id, res.body.id);
      await other.admin('DELETE', `/admin/v1/api_keys/${t.keyId}`);
      await waitFor(() => stream.ended(), 'the end of the stream');
    } finally {
      await other.close();
    }
  });
});
