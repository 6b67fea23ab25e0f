// At least once: a service killed in the middle of a delivery retries it after restart.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { processStorage, startServiceProcess } from '../helpers/process.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';

const ADMIN = 'crash-test-admin-token-0123';
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function start(env: Record<string, string>) {
  return startServiceProcess({ LOG_LEVEL: 'error', ADMIN_TOKEN: ADMIN, SANDBOX: 'true', WEBHOOK_ALLOW_HOSTS: 'localhost', ...env });
}

async function call<T>(base: string, method: string, pathname: string, token: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(base + pathname, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

test('kill -9 in the middle of a delivery, restart: the delivery is retried and delivered', async () => {
  const receiver: Receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const storage = await processStorage('crash');
  cleanups.push(storage.cleanup);
  const env = storage.env;

  const first = await start(env);
  const account = await call<{ root_location: { id: number } }>(first.url, 'POST', '/admin/v1/accounts', ADMIN, { name: 'Crash' });
  const key = await call<{ token: string }>(first.url, 'POST', '/admin/v1/api_keys', ADMIN, {
    location_id: account.body.root_location.id,
    name: 'k',
    scopes: ['webhooks:manage', 'people:write'],
  });
  const token = key.body.token;
  const sub = await call<{ id: string }>(first.url, 'POST', '/v1/webhooks', token, { url: receiver.url('/crash'), events: ['person.created'] });
  assert.equal(sub.status, 201);

  receiver.answer('hang');
  assert.equal((await call(first.url, 'POST', '/v1/people', token, { name: 'Crash Cat' })).status, 201);
  for (let i = 0; i < 100 && receiver.received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(receiver.received.length, 1, 'the delivery is in flight');
  const deliveryId = receiver.received[0]?.body.id;
  first.child.kill('SIGKILL');
  await first.exited;

  receiver.answer({ status: 200 });
  const second = await start(env);
  try {
    // The dead instance's claim runs out a minute later on the service clock; then the retry is due.
    await call(second.url, 'POST', '/admin/v1/sandbox/clock/advance', ADMIN, { seconds: 61 });
    await call(second.url, 'POST', '/admin/v1/sandbox/clock/advance', ADMIN, { seconds: 60 });
    const deliveries = await call<{ data: Array<{ id: string; status: string; attempt: number }> }>(second.url, 'GET', `/v1/webhooks/${sub.body.id}/deliveries`, token);
    assert.deepEqual(
      deliveries.body.data.map((d) => [d.id, d.status]),
      [[deliveryId, 'delivered']],
    );
    assert.ok(receiver.received.length >= 2);
    assert.ok(receiver.received.every((r) => r.body.id === deliveryId), 'the same delivery id every time');
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});

test("a delivery claimed by a killed instance goes out again within its 20 s lease, not a minute later, with no clock moved", { timeout: 120_000 }, async (t) => {
  const receiver: Receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const storage = await processStorage('crashlease');
  cleanups.push(storage.cleanup);
  const first = await start(storage.env);
  const account = await call<{ root_location: { id: number } }>(first.url, 'POST', '/admin/v1/accounts', ADMIN, { name: 'Lease' });
  const token = (await call<{ token: string }>(first.url, 'POST', '/admin/v1/api_keys', ADMIN, { location_id: account.body.root_location.id, name: 'k', scopes: ['webhooks:manage', 'people:write'] })).body.token;
  const sub = await call<{ id: string }>(first.url, 'POST', '/v1/webhooks', token, { url: receiver.url('/lease'), events: ['person.created'] });
  receiver.answer('hang');
  assert.equal((await call(first.url, 'POST', '/v1/people', token, { name: 'Lease Cat' })).status, 201);
  for (let i = 0; i < 100 && receiver.received.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(receiver.received.length, 1, 'the delivery is in flight');
  first.child.kill('SIGKILL');
  await first.exited;
  const killedAt = Date.now();

  receiver.answer({ status: 200 });
  const second = await start(storage.env);
  try {
    const delivered = async () =>
      (await call<{ data: Array<{ status: string }> }>(second.url, 'GET', `/v1/webhooks/${sub.body.id}/deliveries`, token)).body.data[0]?.status === 'delivered';
    while (!(await delivered()) && Date.now() - killedAt < 45_000) await new Promise((resolve) => setTimeout(resolve, 250));
    const seconds = (Date.now() - killedAt) / 1000;
    assert.ok(await delivered(), `delivered (waited ${seconds} s)`);
    t.diagnostic(`sent again and delivered ${seconds} s after the kill`);
    assert.ok(seconds < 30, `sent again ${seconds} s after the kill`);
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});
