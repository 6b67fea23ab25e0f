// Gateway presence over real MQTT: the embedded broker (credentials, confinement, will, disconnect,
// 45 quiet minutes) and an external Mosquitto (TEST_MQTT_URL).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { advanceClock, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';

interface Gateway {
  id: number;
  mqtt: { url: string; client_id: string; username: string; password: string; topic_prefix: string };
}

const ctx = useTestService();
const clients: MqttClient[] = [];
after(async () => {
  for (const client of clients) await client.endAsync(true).catch(() => undefined);
});

async function site(service: TestService) {
  const account = await createAccount(service);
  const gateway = await service.admin<Gateway>('POST', '/admin/v1/gateways', { location_id: account.rootLocationId, name: 'Lobby bridge' });
  assert.equal(gateway.status, 201);
  const locks = [
    await createLock(service, account.rootLocationId, { name: 'Front', gateway_id: gateway.body.id }),
    await createLock(service, account.rootLocationId, { name: 'Back', gateway_id: gateway.body.id }),
  ];
  const token = (await createApiKey(service, account.rootLocationId, ['catalog:read'])).token;
  return { account, gateway: gateway.body, locks, token };
}

/** Connects as the gateway, with the contract's will, and announces itself online. */
async function connectGateway(gateway: Gateway, overrides: Partial<mqtt.IClientOptions> = {}, url = gateway.mqtt.url): Promise<MqttClient> {
  const presence = `${gateway.mqtt.topic_prefix}/gateways/${gateway.id}/presence`;
  const client = await mqtt.connectAsync(url.replace('localhost', '127.0.0.1'), {
    clientId: gateway.mqtt.client_id,
    username: gateway.mqtt.username,
    password: gateway.mqtt.password,
    reconnectPeriod: 0,
    will: { topic: presence, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
    ...overrides,
  });
  clients.push(client);
  await client.publishAsync(presence, '{"online":true}', { qos: 1, retain: true });
  return client;
}

async function online(service: TestService, token: string, lockId: number): Promise<boolean | null> {
  return (await service.request<{ online: boolean | null }>('GET', `/v1/locks/${lockId}`, { token })).body.online;
}

async function eventually(check: () => Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out: ${what}`);
}

async function presenceEvents(service: TestService, accountId: number) {
  void service;
  return ctx.database.db.query<{ type: string; data: { lock: { id: number }; online: boolean } }>(
    `SELECT type, data FROM domain_events WHERE account_id = $1 AND type IN ('lock.online', 'lock.offline') ORDER BY id`,
    [accountId],
  );
}

describe('embedded broker', () => {
  test('a gateway announcing itself makes its locks online, one lock.online each, no repeats', async () => {
    const s = await site(ctx.service);
    assert.equal(await online(ctx.service, s.token, s.locks[0] as number), false, 'never connected: offline');
    const client = await connectGateway(s.gateway);
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    await client.publishAsync(`latchkey/v1/gateways/${s.gateway.id}/presence`, '{"online":true}', { qos: 1, retain: true });
    await client.publishAsync(`latchkey/v1/gateways/${s.gateway.id}/heartbeat`, '{}', { qos: 0 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = await presenceEvents(ctx.service, s.account.id);
    assert.deepEqual(
      events.map((e) => [e.type, e.data.lock.id, e.data.online]),
      s.locks.map((id) => ['lock.online', id, true]),
    );
  });

  test('an abrupt disconnect (the will) marks the locks offline within seconds', async () => {
    const s = await site(ctx.service);
    const client = await connectGateway(s.gateway);
    await eventually(async () => (await online(ctx.service, s.token, s.locks[1] as number)) === true, 'online');
    client.stream.destroy();
    await eventually(async () => (await online(ctx.service, s.token, s.locks[1] as number)) === false, 'offline after the will');
    const events = await presenceEvents(ctx.service, s.account.id);
    assert.deepEqual(events.map((e) => e.type), ['lock.online', 'lock.online', 'lock.offline', 'lock.offline']);
  });

  test('a clean disconnect is a broker-side disconnect: offline too', async () => {
    const s = await site(ctx.service);
    const client = await connectGateway(s.gateway);
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    await client.endAsync();
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === false, 'offline after disconnect');
  });

  test('45 minutes without any message on the service clock marks a gateway offline; messages keep it online', async () => {
    const s = await site(ctx.service);
    const client = await connectGateway(s.gateway);
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    await advanceClock(ctx.service, 30 * 60);
    await client.publishAsync(`latchkey/v1/gateways/${s.gateway.id}/heartbeat`, '{}', { qos: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await advanceClock(ctx.service, 30 * 60);
    assert.equal(await online(ctx.service, s.token, s.locks[0] as number), true, 'the heartbeat at 30 minutes counts');
    await advanceClock(ctx.service, 16 * 60);
    assert.equal(await online(ctx.service, s.token, s.locks[0] as number), false);
    const offline = (await presenceEvents(ctx.service, s.account.id)).filter((e) => e.type === 'lock.offline');
    assert.equal(offline.length, 2);
  });

  test('refuses wrong credentials and confines a gateway to its own topics', async () => {
    const s = await site(ctx.service);
    const other = await site(ctx.service);
    await assert.rejects(connectGateway(s.gateway, { password: 'wrong' }));
    await assert.rejects(connectGateway(s.gateway, { clientId: 'someone-else' }));
    // Publishing as the other gateway is refused: its locks stay offline.
    const client = await mqtt.connectAsync(s.gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
      clientId: s.gateway.mqtt.client_id,
      username: s.gateway.mqtt.username,
      password: s.gateway.mqtt.password,
      reconnectPeriod: 0,
    });
    clients.push(client);
    await client.publishAsync(`latchkey/v1/gateways/${other.gateway.id}/presence`, '{"online":true}', { qos: 0 }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await online(ctx.service, other.token, other.locks[0] as number), false);
  });
});

const externalUrl = process.env.TEST_MQTT_URL;

describe('external broker (Mosquitto)', { skip: externalUrl ? false : 'set TEST_MQTT_URL to run' }, () => {
  test('presence through MQTT_URL: online, then the will marks offline', async () => {
    const service = await startService(ctx.database.db, { MQTT_URL: externalUrl as string });
    try {
      const s = await site(service);
      assert.equal(s.gateway.mqtt.url, externalUrl);
      const client = await connectGateway(s.gateway, { clientId: `${s.gateway.mqtt.client_id}-${process.pid}` }, externalUrl);
      await eventually(async () => (await online(service, s.token, s.locks[0] as number)) === true, 'online through Mosquitto');
      client.stream.destroy();
      await eventually(async () => (await online(service, s.token, s.locks[0] as number)) === false, 'offline after the will');
      // Leave no retained presence behind on the shared broker.
      const cleaner = await mqtt.connectAsync(externalUrl as string, { reconnectPeriod: 0 });
      await cleaner.publishAsync(`latchkey/v1/gateways/${s.gateway.id}/presence`, '', { qos: 1, retain: true });
      await cleaner.endAsync();
    } finally {
      await service.close();
    }
  });
});
