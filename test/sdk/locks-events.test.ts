// The SDK's remote unlock (waiting for the command's outcome) and the access log it follows, against a real
// Latchkey with a gateway on its embedded MQTT broker played by this test.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { advanceClock, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import { Latchkey, type Event } from '../../packages/sdk/src/index.ts';

const ctx = useTestService();
const connect = gatewayClients();

type Answer = { ok: true } | { ok: false; error: string } | null;

/**
 * A gateway online with one remote lock, answering each unlock command as `answer` says after 200 ms
 * (null: never), and a client allowed to open the lock and read the log.
 */
async function site(answer: Answer = { ok: true }) {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lockId = await createLock(ctx.service, account.rootLocationId, { name: 'Gate', place: 'Yard', gateway_id: gateway.id });
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['locks:control', 'events:read', 'catalog:read'], { lock_allowlist: [lockId] });
  const sent: string[] = [];
  const lk = new Latchkey({
    apiKey: token,
    baseUrl: ctx.service.url,
    fetch: (request) => {
      sent.push(`${request.method} ${new URL(request.url).pathname}`);
      return fetch(request);
    },
  });
  const client = await connect(gateway);
  const base = `latchkey/v1/gateways/${gateway.id}`;
  client.on('message', (_topic, payload) => {
    const command = JSON.parse(payload.toString()) as { id: string };
    if (answer) setTimeout(() => void client.publishAsync(`${base}/commands/result`, JSON.stringify({ id: command.id, ...answer }), { qos: 1 }), 200);
  });
  await client.subscribeAsync(`${base}/commands`, { qos: 1 });
  await client.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1, retain: true });
  await waitFor(async () => (await lk.locks.get(lockId)).online === true, 'the lock online');
  let n = 0;
  const door = (type: string, occurredAt: string) =>
    client.publishAsync(`${base}/events`, JSON.stringify({ id: `d${++n}`, lock_id: lockId, type, occurred_at: occurredAt, key_id: null, reason: null }), { qos: 1 });
  return { lk, lockId, sent, door };
}

describe('locks.unlock', () => {
  test('without wait: the published command; with wait: polled until confirmed', async () => {
    const s = await site();
    const published = await s.lk.locks.unlock(s.lockId);
    assert.deepEqual([published.status, published.lock_id, published.timeout_seconds], ['published', s.lockId, 30]);
    await waitFor(async () => (await s.lk.locks.command(s.lockId, published.id)).status === 'confirmed', 'the first command confirmed');

    s.sent.length = 0;
    const confirmed = await s.lk.locks.unlock(s.lockId, { wait: true, pollIntervalMs: 50 });
    assert.notEqual(confirmed.id, published.id);
    assert.equal(confirmed.status, 'confirmed');
    assert.ok(confirmed.confirmed_at);
    assert.equal(s.sent[0], `POST /v1/locks/${s.lockId}/unlock`);
    assert.ok(s.sent.slice(1).every((r) => r === `GET /v1/locks/${s.lockId}/commands/${confirmed.id}`) && s.sent.length > 1, s.sent.join(' | '));
  });

  test('with wait: resolves with failed when the device refuses', async () => {
    const s = await site({ ok: false, error: 'device_missing' });
    const failed = await s.lk.locks.unlock(s.lockId, { wait: true, pollIntervalMs: 50 });
    assert.deepEqual([failed.status, failed.error?.code], ['failed', 'device_missing']);
  });

  test('with wait: resolves with timed_out when the device never answers', async () => {
    const s = await site(null);
    const waiting = s.lk.locks.unlock(s.lockId, { wait: true, pollIntervalMs: 50 });
    await waitFor(() => s.sent.some((r) => r.startsWith('GET')), 'the first poll');
    await advanceClock(ctx.service, 31); // past timeout_seconds: the service times the command out
    const outcome = await waiting;
    assert.deepEqual([outcome.status, outcome.error?.code], ['timed_out', 'timed_out']);
  });

  test('the wait is bounded: past timeoutMs it rejects with a TimeoutError', async () => {
    const s = await site(null);
    const started = Date.now();
    const error = await s.lk.locks.unlock(s.lockId, { wait: true, pollIntervalMs: 50, timeoutMs: 300 }).catch((e: unknown) => e);
    assert.equal((error as Error).name, 'TimeoutError');
    assert.ok(Date.now() - started < 2000);
  });
});

describe('events', () => {
  test('since() pages through the rows since the time, then follows new rows as they arrive', async () => {
    const s = await site();
    await s.door('access.granted', '2025-12-31T23:59:59Z'); // before `since`
    await s.door('access.granted', '2026-01-01T08:00:00Z');
    await s.door('door.closed', '2026-01-01T08:00:05Z');
    await s.door('access.denied', '2026-01-01T09:00:00Z');
    await waitFor(async () => (await s.lk.events.list().all()).length === 4, 'four rows stored');

    s.sent.length = 0;
    const seen: Event[] = [];
    for await (const event of s.lk.events.since(new Date('2026-01-01T00:00:00Z'), { limit: 2, intervalMs: 50 })) {
      seen.push(event);
      if (seen.length === 3) {
        // Caught up: the next rows arrive while since() is waiting for them.
        await s.door('door.left_open', '2026-01-01T10:00:00Z');
        await s.door('access.granted', '2026-01-01T10:05:00Z');
      }
      if (seen.length === 5) break;
    }
    assert.deepEqual(
      seen.map((e) => [e.type, e.occurred_at]),
      [
        ['access.granted', '2026-01-01T08:00:00.000Z'],
        ['door.closed', '2026-01-01T08:00:05.000Z'],
        ['access.denied', '2026-01-01T09:00:00.000Z'],
        ['door.left_open', '2026-01-01T10:00:00.000Z'],
        ['access.granted', '2026-01-01T10:05:00.000Z'],
      ],
    );
    const ids = seen.map((e) => e.id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'in id order, each once');
    assert.ok(s.sent.length >= 3, 'two pages, then reads of the last one');
    assert.ok(s.sent.every((r) => r === 'GET /v1/events'));
  });

  test('since() stops when its signal is aborted while it waits; list() filters', async () => {
    const s = await site();
    await s.door('access.granted', '2026-02-01T08:00:00Z');
    await s.door('door.closed', '2026-02-01T08:00:03Z');
    await waitFor(async () => (await s.lk.events.list().all()).length === 2, 'two rows stored');
    assert.deepEqual((await s.lk.events.list({ type: 'door.closed' }).all()).map((e) => e.type), ['door.closed']);

    const controller = new AbortController();
    const seen: number[] = [];
    const error = await (async () => {
      for await (const event of s.lk.events.since('2026-02-01T00:00:00Z', { intervalMs: 60_000, signal: controller.signal })) {
        seen.push(event.id);
        if (seen.length === 2) setTimeout(() => controller.abort(), 100);
      }
    })().catch((e: unknown) => e);
    assert.equal((error as Error).name, 'AbortError');
    assert.equal(seen.length, 2);
  });
});
