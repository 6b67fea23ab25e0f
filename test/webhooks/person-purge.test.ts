// A person's deletion and the webhook deliveries carrying their data (spec: General rules, a deletion purges
// the person's delivery payloads at once): a delivery whose attempt is under way when the person is deleted
// keeps the end the purge gave it, whatever the attempt's answer, and a body with `data: null` is never sent;
// what a transaction beside the deletion wrote with their data is purged by the sweep. And the other end a
// delivery can meet under way, its subscription paused: there the receiver's answer is what the delivery reads.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { failPendingOfPausedSubscriptions } from '../../src/modules/webhooks/delivery-store.ts';
import { sweepDeletedPeople } from '../../src/modules/webhooks/person-data.ts';
import { WebhookSender } from '../../src/modules/webhooks/sender.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { SecretBox } from '../../src/platform/secret-box.ts';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

interface Held {
  path: string;
  raw: string;
  /** Answers the held request with this status; resolves once the answer has gone out. */
  answer(status: number): Promise<void>;
}

/** A receiver that holds every request until the test answers it, so that an attempt is in flight at will. */
const held: Held[] = [];
let server: Server;
let port = 0;
before(async () => {
  server = createServer({ key: readFileSync('test/fixtures/tls/key.pem'), cert: readFileSync('test/fixtures/tls/cert.pem') }, (request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      held.push({
        path: request.url ?? '',
        raw,
        answer: (status) => new Promise<void>((resolve) => response.writeHead(status).end('{}', () => resolve())),
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

interface Delivery {
  id: string;
  event_type: string;
  status: string;
  attempt: number;
  response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  payload: Record<string, unknown> | null;
}

async function tenantWithSubscription(path: string) {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token, body: { url: `https://localhost:${port}${path}`, events: ['person.created'] } });
  assert.equal(sub.status, 201, sub.text);
  return { token, subscriptionId: sub.body.id };
}

async function deliveries(token: string, subscriptionId: string): Promise<Delivery[]> {
  const res = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${subscriptionId}/deliveries`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

const bodiesTo = (path: string) => held.filter((h) => h.path === path).map((h) => JSON.parse(h.raw) as { type: string; data: unknown });

/** Creates a person, waits for the attempt of their person.created to reach the receiver (held there), and deletes the person. */
async function deleteWhileInFlight(path: string) {
  const t = await tenantWithSubscription(path);
  const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'Purge Me', email: 'purge.me@example.com' } });
  assert.equal(person.status, 201, person.text);
  await waitFor(() => held.some((h) => h.path === path), 'the attempt at the receiver');
  const deleted = await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token: t.token });
  assert.equal(deleted.status, 204, deleted.text);
  const [purged] = await deliveries(t.token, t.subscriptionId);
  assert.deepEqual([purged?.status, purged?.last_error, purged?.payload], ['failed', 'payload purged: person deleted', null]);
  return t;
}

describe('a person deleted while their delivery is in flight', () => {
  test('a failed attempt does not bring the purged delivery back: it stays failed, is never retried, and data null is never sent', async () => {
    const path = '/in-flight-500';
    const t = await deleteWhileInFlight(path);
    await (held.find((h) => h.path === path) as Held).answer(500);
    await advanceClock(ctx.service, 0); // waits for the dispatcher's drain: the outcome is recorded
    const [record] = await deliveries(t.token, t.subscriptionId);
    assert.deepEqual(
      { status: record?.status, last_error: record?.last_error, next_attempt_at: record?.next_attempt_at, payload: record?.payload, attempt: record?.attempt },
      { status: 'failed', last_error: 'payload purged: person deleted', next_attempt_at: null, payload: null, attempt: 1 },
    );
    // Past every rung of the ladder: nothing more is sent.
    for (const seconds of [61, 5 * 60, 30 * 60]) await advanceClock(ctx.service, seconds);
    const bodies = bodiesTo(path);
    assert.equal(bodies.length, 1, 'one attempt only, the one in flight at the deletion');
    assert.ok(bodies.every((b) => b.data !== null), 'no body with data null');
    assert.equal((await deliveries(t.token, t.subscriptionId))[0]?.status, 'failed');
  });

  test("a 2xx arriving after the deletion does not overwrite the purge's end", async () => {
    const path = '/in-flight-200';
    const t = await deleteWhileInFlight(path);
    await (held.find((h) => h.path === path) as Held).answer(200);
    await advanceClock(ctx.service, 0);
    const [record] = await deliveries(t.token, t.subscriptionId);
    assert.deepEqual([record?.status, record?.last_error, record?.payload], ['failed', 'payload purged: person deleted', null]);
  });
});

describe("what a transaction beside the deletion wrote with the person's data", () => {
  test("is purged by the sweep within minutes; the deletion's own person.deleted keeps its payload", async () => {
    const account = await createAccount(ctx.service);
    const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
    const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', {
      token,
      body: { url: `https://localhost:${port}/sweep`, events: ['person.created', 'person.updated', 'person.deleted'] },
    });
    assert.equal(sub.status, 201, sub.text);
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Sweep Sue', email: 'sweep.sue@example.com' } });
    assert.equal(person.status, 201, person.text);
    assert.equal((await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token })).status, 204);
    // A person.updated that committed just after the deletion's purge, as one begun before it would: its outbox
    // row and its delivery carry the name.
    const late = await ctx.database.db.query<{ id: string }>(
      `INSERT INTO domain_events (type, account_id, location_id, person_id, data, occurred_at)
       SELECT 'person.updated', account_id, location_id, person_id, '{"name":"Sweep Sue"}'::jsonb, occurred_at FROM domain_events
        WHERE person_id = $1 AND type = 'person.deleted' RETURNING id::text`,
      [person.body.id],
    );
    await ctx.database.db.query(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, attempt, created_at)
       VALUES ($1, $2, 'person.updated', $3, $4, '{"data":{"name":"Sweep Sue"}}'::jsonb, 'delivered', 1, now())`,
      [randomUUID(), sub.body.id, late[0]?.id, person.body.id],
    );
    const named = async () =>
      (
        await ctx.database.db.query<{ type: string }>(
          `SELECT type FROM domain_events WHERE person_id = $1 AND data::text LIKE '%Sweep Sue%'
           UNION ALL SELECT event_type FROM webhook_deliveries WHERE person_id = $1 AND payload::text LIKE '%Sweep Sue%' ORDER BY 1`,
          [person.body.id],
        )
      ).map((r) => r.type);
    const deletedOnly = ['person.deleted', 'person.deleted'];
    assert.deepEqual(await named(), [...deletedOnly, 'person.updated', 'person.updated'].sort());
    await advanceClock(ctx.service, 60); // the sweep runs with the due jobs
    assert.deepEqual(await named(), deletedOnly, "only the deletion's own event and its delivery keep the name");

    // Past its window the sweep leaves the person alone.
    const clock = await advanceClock(ctx.service, 6 * 60);
    await ctx.database.db.query(`UPDATE domain_events SET data = '{"name":"Sweep Sue"}'::jsonb WHERE id = $1::bigint`, [late[0]?.id]);
    assert.equal(await sweepDeletedPeople(ctx.database.db, clock), 0);
  });
});

describe('a subscription paused while its delivery is in flight', () => {
  for (const [answer, expected] of [
    [200, { status: 'delivered', response_status: 200, last_error: null, next_attempt_at: null }],
    [503, { status: 'failed', response_status: 503, last_error: 'subscription paused', next_attempt_at: null }],
  ] as const) {
    test(`the receiver's ${answer} is what the delivery reads`, async () => {
      const path = `/paused-${answer}`;
      const t = await tenantWithSubscription(path);
      assert.equal((await ctx.service.request('POST', '/v1/people', { token: t.token, body: { name: 'Held Hal' } })).status, 201);
      await waitFor(() => held.some((h) => h.path === path), 'the attempt at the receiver');
      const paused = await ctx.service.request('PATCH', `/v1/webhooks/${t.subscriptionId}`, { token: t.token, body: { status: 'paused' } });
      assert.equal(paused.status, 200, paused.text);
      // The sweep that fails a paused subscription's pending deliveries (every second) runs during the attempt.
      // (The service clock read, not advanced: advancing waits for the attempt under way.)
      const now = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
      await failPendingOfPausedSubscriptions(ctx.database.db, new Date(now.body.now));
      assert.equal((await deliveries(t.token, t.subscriptionId))[0]?.status, 'pending', 'the attempt under way keeps its delivery');
      await (held.find((h) => h.path === path) as Held).answer(answer);
      await advanceClock(ctx.service, 0); // the attempt's outcome is recorded
      await advanceClock(ctx.service, 0); // and the sweep runs again
      const [record] = await deliveries(t.token, t.subscriptionId);
      assert.deepEqual(
        { status: record?.status, response_status: record?.response_status, last_error: record?.last_error, next_attempt_at: record?.next_attempt_at },
        expected,
      );
    });
  }
});

test('a pending delivery without a payload is never claimed, so never sent with data null', async () => {
  const path = '/no-payload';
  const t = await tenantWithSubscription(path);
  await ctx.database.db.query(
    `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, next_attempt_at, created_at)
     VALUES ($1, $2, 'person.created', 'x', NULL, 'pending', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z')`,
    [randomUUID(), t.subscriptionId],
  );
  await advanceClock(ctx.service, 61);
  await advanceClock(ctx.service, 0);
  assert.deepEqual(bodiesTo(path), [], 'nothing sent');
  const [record] = await deliveries(t.token, t.subscriptionId);
  assert.equal(record?.attempt, 0, 'never claimed');
});

test('the sender itself refuses a delivery without a payload: nothing goes out', async () => {
  const box = new SecretBox(randomBytes(32));
  const sender = new WebhookSender(systemClock, box, ['localhost']);
  const before = held.length;
  const result = await sender.attempt({
    id: randomUUID(),
    subscription_id: randomUUID(),
    event_type: 'person.created',
    payload: null,
    attempt: 1,
    created_at: new Date(),
    url: `https://localhost:${port}/sender-null`,
    secret_ciphertext: box.seal('whsec_test'),
  });
  await sender.close();
  assert.deepEqual(result, { ok: false, status: null, error: 'payload purged: not sent' });
  assert.equal(held.length, before);
});
