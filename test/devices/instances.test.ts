// Two service instances on one PostgreSQL and one Mosquitto: they share the gateway topics (MQTT 5 shared
// subscriptions) and the database decides which command is in flight.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { backend } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';

const externalUrl = process.env.TEST_MQTT_URL;
const skip = backend !== 'postgres' ? 'needs PostgreSQL (LATCHKEY_TEST_BACKEND=postgres)' : !externalUrl ? 'set TEST_MQTT_URL to run' : false;

const ctx = useTestService();
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out: ${what}`);
}

test('two simultaneous unlocks through two instances give one command and one pulse; each event is stored once', { skip }, async () => {
  const env = { MQTT_URL: externalUrl as string };
  const a: TestService = await startService(await ctx.database.openAnother(), env);
  closers.push(() => a.close());
  const b: TestService = await startService(await ctx.database.openAnother(), env);
  closers.push(() => b.close());

  const account = await createAccount(a);
  const gateway = await a.admin<{ id: number; mqtt: { client_id: string } }>('POST', '/admin/v1/gateways', { location_id: account.rootLocationId, name: 'gw' });
  const lock = await createLock(a, account.rootLocationId, { name: 'Gate', gateway_id: gateway.body.id });
  const token = (await createApiKey(a, account.rootLocationId, ['locks:control', 'events:read', 'catalog:read'], { lock_allowlist: [lock] })).token;

  const base = `latchkey/v1/gateways/${gateway.body.id}`;
  const commands: string[] = [];
  const device: MqttClient = await mqtt.connectAsync(externalUrl as string, { clientId: `${gateway.body.mqtt.client_id}-${process.pid}`, reconnectPeriod: 0 });
  closers.push(() => device.endAsync(true));
  device.on('message', (topic, payload) => {
    if (topic.endsWith('/commands')) commands.push((JSON.parse(payload.toString()) as { id: string }).id);
  });
  await device.subscribeAsync(`${base}/commands`, { qos: 1 });
  await device.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1 });
  await waitFor(async () => (await b.request<{ online: boolean }>('GET', `/v1/locks/${lock}`, { token })).body.online === true, 'online');

  const [viaA, viaB] = await Promise.all([
    a.request<{ id: string }>('POST', `/v1/locks/${lock}/unlock`, { token }),
    b.request<{ id: string }>('POST', `/v1/locks/${lock}/unlock`, { token }),
  ]);
  assert.deepEqual([viaA.status, viaB.status], [202, 202]);
  assert.equal(viaA.body.id, viaB.body.id, 'one command');
  await waitFor(() => commands.length >= 1, 'the command');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(commands, [viaA.body.id], 'one pulse');

  for (let i = 0; i < 20; i++) {
    const event = { id: `evt-${i % 10}`, lock_id: lock, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null };
    await device.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
  }
  await waitFor(async () => (await ctx.database.db.query('SELECT id FROM access_events WHERE lock_id = $1 AND gateway_id IS NOT NULL', [lock])).length >= 10, 'events');
  await new Promise((resolve) => setTimeout(resolve, 300));
  const stored = await ctx.database.db.query('SELECT gateway_event_id FROM access_events WHERE lock_id = $1 AND gateway_id IS NOT NULL', [lock]);
  assert.equal(stored.length, 10, 'each gateway event once, whichever instance received it');
  await device.publishAsync(`${base}/presence`, '', { qos: 1, retain: true });
});
