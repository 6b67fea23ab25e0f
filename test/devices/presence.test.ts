// Gateway presence over real MQTT: the embedded broker (credentials, confinement, will, disconnect,
// 45 quiet minutes, contact, restarts and crashes, takeover) and an external Mosquitto (TEST_MQTT_URL).
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { advanceClock, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { closedWithin, within } from '../helpers/gateways.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import pino from 'pino';
import { PresenceService, STATE_CHANGE_MS } from '../../src/modules/devices/presence.ts';

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

/** Connects as the gateway, with the contract's will, and (unless told not to) announces itself online. */
async function connectGateway(gateway: Gateway, overrides: Partial<mqtt.IClientOptions> = {}, url = gateway.mqtt.url, announce = true): Promise<MqttClient> {
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
  if (announce) await client.publishAsync(presence, '{"online":true}', { qos: 1, retain: true });
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

async function gatewayOnline(gatewayId: number): Promise<boolean | undefined> {
  const [row] = await ctx.database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gatewayId]);
  return row?.online;
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

  test('a gateway flooding online and offline changes state at most once a second here, and ends in its last word', async () => {
    const s = await site(ctx.service);
    const client = await connectGateway(s.gateway);
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    const topic = `latchkey/v1/gateways/${s.gateway.id}/presence`;
    const started = Date.now();
    for (let i = 0; i < 400; i++) client.publish(topic, i % 2 === 0 ? '{"online":false}' : '{"online":true}', { qos: 0 });
    await client.publishAsync(topic, '{"online":false}', { qos: 1 });
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === false, 'offline: its last word');
    await new Promise((resolve) => setTimeout(resolve, STATE_CHANGE_MS + 200)); // nothing more waits
    const seconds = (Date.now() - started) / 1000;
    const changes = (await presenceEvents(ctx.service, s.account.id)).length / s.locks.length - 1; // the first online is the login's
    assert.ok(changes <= Math.ceil(seconds) + 1, `${changes} changes in ${seconds.toFixed(1)} s of 401 announcements`);
    assert.equal(await gatewayOnline(s.gateway.id), false);
  });

  test('an offline said again while an earlier offline and a contact are still being written is not taken for a repeat', async () => {
    // The gateway's work as the pipeline would run it, but run here step by step: a slow database.
    const s = await site(ctx.service);
    const queued: Array<() => Promise<unknown>> = [];
    const runNext = async () => void (await (queued.shift() as () => Promise<unknown>)());
    const presence = new PresenceService(ctx.database.db, { now: () => new Date() }, pino({ level: 'silent' }), (_id, work) => void queued.push(work));
    presence.announce(s.gateway.id, true);
    while (queued.length > 0) await runNext();
    assert.equal(await gatewayOnline(s.gateway.id), true);
    await new Promise((resolve) => setTimeout(resolve, STATE_CHANGE_MS + 50));
    presence.announce(s.gateway.id, false); // acted on: its write waits in the queue
    presence.heard(s.gateway.id); // a heartbeat after it: contact, queued behind
    await runNext(); // the offline is written
    presence.announce(s.gateway.id, false); // its will: a change from what its last message said
    while (queued.length > 0) await runNext(); // the contact is written: online
    await eventually(async () => {
      while (queued.length > 0) await runNext();
      return (await gatewayOnline(s.gateway.id)) === false;
    }, 'offline: its last word', 3000);
  });

  test('a gateway reconnecting in a loop changes state at most once a second here, and ends in its last connection state', async () => {
    const s = await site(ctx.service);
    const changes = async () => (await presenceEvents(ctx.service, s.account.id)).length / s.locks.length;
    // Logins and clean ends only: no will, no announcement.
    const login = () => connectGateway(s.gateway, {}, s.gateway.mqtt.url, false);
    const reconnect = async (times: number) => {
      for (let i = 0; i < times; i++) await (await login()).endAsync();
    };
    const started = Date.now();
    await reconnect(50);
    const held = await login();
    await eventually(async () => (await gatewayOnline(s.gateway.id)) === true, 'connected: online', STATE_CHANGE_MS + 3000);
    let seconds = (Date.now() - started) / 1000;
    assert.ok((await changes()) <= Math.ceil(seconds) + 1, `${await changes()} changes in ${seconds.toFixed(1)} s of 51 logins`);
    await held.endAsync();
    await reconnect(50);
    const ended = Date.now();
    await eventually(async () => (await gatewayOnline(s.gateway.id)) === false, 'offline: its last connection ended', 2000);
    assert.ok(Date.now() - ended <= 2000, `offline ${Date.now() - ended} ms after the end`);
    await new Promise((resolve) => setTimeout(resolve, STATE_CHANGE_MS + 300));
    assert.equal(await gatewayOnline(s.gateway.id), false, 'still offline: nothing waited behind');
    seconds = (Date.now() - started) / 1000;
    assert.ok((await changes()) <= Math.ceil(seconds) + 1, `${await changes()} changes in ${seconds.toFixed(1)} s of 101 logins`);
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

  test('any message from an offline gateway is contact: a heartbeat, a door event or a command result brings it back', async () => {
    const s = await site(ctx.service);
    const client = await connectGateway(s.gateway);
    const base = `latchkey/v1/gateways/${s.gateway.id}`;
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    const messages: Array<[string, string]> = [
      ['heartbeat', '{}'],
      ['events', JSON.stringify({ id: randomUUID(), lock_id: s.locks[0], type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null })],
      ['commands/result', JSON.stringify({ id: randomUUID(), ok: true })],
    ];
    for (const [kind, payload] of messages) {
      await client.publishAsync(`${base}/presence`, '{"online":false}', { qos: 1, retain: true });
      await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === false, `offline before the ${kind}`);
      await client.publishAsync(`${base}/${kind}`, payload, { qos: 1 });
      await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, `online after the ${kind}`);
    }
    await client.publishAsync(`${base}/heartbeat`, '{}', { qos: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const events = await presenceEvents(ctx.service, s.account.id);
    assert.deepEqual(
      events.map((e) => e.type),
      ['online', 'offline', 'online', 'offline', 'online', 'offline', 'online'].flatMap((state) => [`lock.${state}`, `lock.${state}`]),
      'one event per lock per change',
    );
  });

  test('a gateway that reconnects after a restart of the service is online again without announcing itself', async () => {
    let first: TestService | null = await startService(ctx.database.db);
    const firstUrl = first.latchkey.mqttUrl as string;
    let second: TestService | null = null;
    try {
      const s = await site(first);
      // Announces itself on its first connection only, as the simulator used to; reconnects on its own.
      await connectGateway(s.gateway, { reconnectPeriod: 200 }, firstUrl);
      await eventually(async () => (await gatewayOnline(s.gateway.id)) === true, 'online');
      await first.close();
      first = null;
      await eventually(async () => (await gatewayOnline(s.gateway.id)) === false, 'offline while the service is down');
      second = await startService(ctx.database.db, { MQTT_PORT: new URL(firstUrl).port });
      await eventually(async () => (await online(second as TestService, s.token, s.locks[0] as number)) === true, 'online after the restart');
      const events = await presenceEvents(ctx.service, s.account.id);
      assert.deepEqual(events.map((e) => e.type), ['online', 'offline', 'online'].flatMap((state) => [`lock.${state}`, `lock.${state}`]));
    } finally {
      await second?.close();
      await first?.close();
    }
  });

  test('after a crash, gateways left online read offline within seconds of the next start; one that reconnects is online', async () => {
    const gone = await site(ctx.service);
    const back = await site(ctx.service);
    // What a killed service leaves behind: gateways marked online that nobody is connected to any more.
    await ctx.database.db.query('UPDATE gateways SET online = true, last_seen_at = now() WHERE id = ANY($1::bigint[])', [[gone.gateway.id, back.gateway.id]]);
    const started = Date.now();
    const restarted = await startService(ctx.database.db);
    try {
      await connectGateway(back.gateway, {}, restarted.latchkey.mqttUrl as string, false); // logs in, announces nothing
      await eventually(async () => (await online(restarted, gone.token, gone.locks[0] as number)) === false, 'the gone gateway offline');
      assert.ok(Date.now() - started < 5000, `offline ${Date.now() - started} ms after the start`);
      assert.deepEqual((await presenceEvents(ctx.service, gone.account.id)).map((e) => [e.type, e.data.lock.id]), gone.locks.map((id) => ['lock.offline', id]));
      await eventually(async () => (await online(restarted, back.token, back.locks[0] as number)) === true, 'the reconnected gateway online');
      assert.deepEqual(
        (await presenceEvents(ctx.service, back.account.id)).map((e) => e.type),
        ['lock.offline', 'lock.offline', 'lock.online', 'lock.online'],
        'offline from the crash, then online with its new connection',
      );
    } finally {
      await restarted.close();
    }
  });

  test("the offline a start writes is not the gateway's change: its login right after is acted on at once", async () => {
    const s = await site(ctx.service);
    await ctx.database.db.query('UPDATE gateways SET online = true WHERE id = $1', [s.gateway.id]);
    // The writes are only queued: the other tests' gateways stay as they are.
    const presence = new PresenceService(ctx.database.db, { now: () => new Date() }, pino({ level: 'silent' }), () => undefined);
    assert.ok((await presence.startWithNobodyConnected()) >= 1);
    assert.equal(presence.announce(s.gateway.id, true), true, 'not held back by the bound');
  });

  test('a gateway that reconnects while its old connection is still open stays authorised and online', async () => {
    const s = await site(ctx.service);
    const commandsTopic = `latchkey/v1/gateways/${s.gateway.id}/commands`;
    const old = await connectGateway(s.gateway);
    await old.subscribeAsync(commandsTopic, { qos: 1 });
    await eventually(async () => (await online(ctx.service, s.token, s.locks[0] as number)) === true, 'online');
    const oldClosed = closedWithin(old, 2000);
    const fresh = await connectGateway(s.gateway); // same client id: the broker closes the old connection
    assert.equal(await oldClosed, true, 'the old connection is taken over');
    const [granted] = await within(fresh.subscribeAsync(commandsTopic, { qos: 1 }), 2000, 'the subscription');
    assert.equal(granted?.qos, 1, 'the new connection may subscribe');
    const commands: string[] = [];
    fresh.on('message', (_topic, payload) => commands.push(payload.toString()));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await online(ctx.service, s.token, s.locks[0] as number), true);
    assert.deepEqual((await presenceEvents(ctx.service, s.account.id)).map((e) => e.type), ['lock.online', 'lock.online'], 'no lock.offline');
    const key = (await createApiKey(ctx.service, s.account.rootLocationId, ['locks:control'], { lock_allowlist: [s.locks[0] as number] })).token;
    assert.equal((await ctx.service.request('POST', `/v1/locks/${s.locks[0]}/unlock`, { token: key })).status, 202);
    await eventually(async () => commands.length === 1, 'the command reaches the new connection');
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

  test('a service that starts takes presence from the retained messages, marks nothing offline on its own; any message is contact', async () => {
    const s = await site(ctx.service); // created through the embedded service: the gateway is in the shared store
    const presenceTopic = `latchkey/v1/gateways/${s.gateway.id}/presence`;
    const clearRetained = async () => {
      const cleaner = await mqtt.connectAsync(externalUrl as string, { reconnectPeriod: 0 });
      await cleaner.publishAsync(presenceTopic, '', { qos: 1, retain: true });
      await cleaner.endAsync();
    };
    await clearRetained(); // another run's gateway with the same id may have left one
    // The gateway is connected to the broker and announced itself while no service listened.
    const device = await connectGateway(s.gateway, { clientId: `${s.gateway.mqtt.client_id}-${process.pid}` }, externalUrl);
    assert.equal(await gatewayOnline(s.gateway.id), false);
    const started: TestService[] = [];
    try {
      started.push(await startService(ctx.database.db, { MQTT_URL: externalUrl as string }));
      await eventually(async () => (await online(started[0] as TestService, s.token, s.locks[0] as number)) === true, 'online from the retained presence');
      // A second instance starting (or this one restarting) leaves it online: the broker still holds its connection.
      started.push(await startService(ctx.database.db, { MQTT_URL: externalUrl as string }));
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(await gatewayOnline(s.gateway.id), true);
      // Live: the gateway says offline, then any message of it is contact.
      await device.publishAsync(presenceTopic, '{"online":false}', { qos: 1, retain: true });
      await eventually(async () => (await gatewayOnline(s.gateway.id)) === false, 'offline');
      await device.publishAsync(`latchkey/v1/gateways/${s.gateway.id}/heartbeat`, '{}', { qos: 1 });
      await eventually(async () => (await gatewayOnline(s.gateway.id)) === true, 'online after a heartbeat');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(
        (await presenceEvents(ctx.service, s.account.id)).map((e) => e.type),
        ['online', 'offline', 'online'].flatMap((state) => [`lock.${state}`, `lock.${state}`]),
        'once per change, whichever instance handled it',
      );
    } finally {
      await device.endAsync(true);
      await clearRetained();
      for (const service of started) await service.close();
    }
  });
});
