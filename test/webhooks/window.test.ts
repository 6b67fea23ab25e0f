// The dispatcher's window: at most 64 attempts in flight, refilled as each one ends, so a slow receiver
// holds its own slots and not the deliveries to everyone else.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';

const SLOW_MS = 2500;

interface Arrival {
  path: string;
  id: string;
  at: number;
}

/** An HTTPS receiver that answers /slow after SLOW_MS and everything else at once, and counts what is open. */
let server: Server;
let port = 0;
const arrivals: Arrival[] = [];
let open = 0;
let mostOpen = 0;
let slowAnsweredAt = Number.POSITIVE_INFINITY;

before(async () => {
  server = createServer({ key: readFileSync('test/fixtures/tls/key.pem'), cert: readFileSync('test/fixtures/tls/cert.pem') }, (request, response) => {
    open++;
    mostOpen = Math.max(mostOpen, open);
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      const path = request.url ?? '';
      arrivals.push({ path, id: (JSON.parse(raw) as { id: string }).id, at: Date.now() });
      const answer = () => {
        open--;
        if (path === '/slow') slowAnsweredAt = Date.now();
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      };
      if (path === '/slow') setTimeout(answer, SLOW_MS);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

test('a slow receiver holds one slot: 300 deliveries to a fast one go out meanwhile, never more than 64 at once', async () => {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
  const subscribe = async (path: string) => {
    const res = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', {
      token: key.token,
      body: { url: `https://localhost:${port}${path}`, events: ['person.created'] },
    });
    assert.equal(res.status, 201);
    return res.body.id;
  };
  const slow = await subscribe('/slow');
  const fast = await subscribe('/fast');
  const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
  // The slow delivery is the oldest due, so it is in the first claim, ahead of every fast one.
  const insert = (subscriptionId: string, count: number, due: Date) =>
    ctx.database.db.query(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, next_attempt_at, created_at)
       SELECT gen_random_uuid(), $1, 'person.created', g::text, jsonb_build_object('id', g), 'pending', $3, $3
         FROM generate_series(1, $2::int) g`,
      [subscriptionId, count, due],
    );
  await insert(slow, 1, new Date(now.getTime() - 2000));
  await insert(fast, 300, new Date(now.getTime() - 1000));

  await advanceClock(ctx.service, 0); // runs the dispatcher until every outcome is recorded

  const fastArrivals = arrivals.filter((a) => a.path === '/fast');
  assert.equal(fastArrivals.length, 300);
  assert.equal(arrivals.filter((a) => a.path === '/slow').length, 1);
  const late = fastArrivals.filter((a) => a.at > slowAnsweredAt).length;
  assert.equal(late, 0, `${late} fast deliveries waited for the slow answer`);
  assert.ok(mostOpen <= 64, `${mostOpen} attempts in flight at once`);
  assert.ok(mostOpen > 1, 'attempts overlap');
  const statuses = await ctx.database.db.query<{ status: string; count: number }>(
    'SELECT status, count(*)::int AS count FROM webhook_deliveries WHERE subscription_id = ANY($1::uuid[]) GROUP BY status',
    [[slow, fast]],
  );
  assert.deepEqual(statuses, [{ status: 'delivered', count: 301 }]);
});

test('never more than 64 in flight when every receiver is slow; the rest wait their turn and all are delivered', async () => {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
  const res = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', {
    token: key.token,
    body: { url: `https://localhost:${port}/slow`, events: ['person.created'] },
  });
  assert.equal(res.status, 201);
  const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
  await ctx.database.db.query(
    `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, next_attempt_at, created_at)
     SELECT gen_random_uuid(), $1, 'person.created', g::text, jsonb_build_object('id', g), 'pending', $2, $2 FROM generate_series(1, 100) g`,
    [res.body.id, new Date(now.getTime() - 1000)],
  );
  mostOpen = 0;
  const before = arrivals.length;
  await advanceClock(ctx.service, 0);
  assert.equal(arrivals.length - before, 100);
  assert.equal(mostOpen, 64, 'the window is full, and no fuller');
  const [row] = await ctx.database.db.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM webhook_deliveries WHERE subscription_id = $1 AND status = 'delivered'`,
    [res.body.id],
  );
  assert.equal(row?.count, 100);
});

test('a new event is claimed at once while slow receivers hold most of the window', async () => {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  const subscribe = async (path: string, events: string[]) => {
    const res = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token: key.token, body: { url: `https://localhost:${port}${path}`, events } });
    assert.equal(res.status, 201);
    return res.body.id;
  };
  const slow = await subscribe('/slow', ['person.deleted']);
  await subscribe('/prompt', ['person.created']);
  const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
  // 40 slow attempts leave 24 slots free: fewer than a refill, which waits for half the window.
  await ctx.database.db.query(
    `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, next_attempt_at, created_at)
     SELECT gen_random_uuid(), $1, 'person.deleted', g::text, jsonb_build_object('id', g), 'pending', $2, $2 FROM generate_series(1, 40) g`,
    [slow, new Date(now.getTime() - 1000)],
  );
  const slowBefore = arrivals.filter((a) => a.path === '/slow').length;
  const draining = advanceClock(ctx.service, 0);
  for (let i = 0; i < 200 && arrivals.filter((a) => a.path === '/slow').length < slowBefore + 40; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const slowStarted = Date.now();
  const created = await ctx.service.request('POST', '/v1/people', { token: key.token, body: { name: 'Prompt Pia' } });
  assert.equal(created.status, 201);
  for (let i = 0; i < 200 && !arrivals.some((a) => a.path === '/prompt'); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const prompt = arrivals.find((a) => a.path === '/prompt');
  assert.ok(prompt, 'the new event was delivered');
  assert.ok(prompt.at - slowStarted < SLOW_MS - 500, `the new event waited ${prompt.at - slowStarted} ms`);
  await draining;
});
