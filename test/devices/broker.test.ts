// What the embedded broker accepts, attacked over real TCP: the packet size limit (before and after
// authentication), the CONNECT deadline, and the topics a gateway may publish and subscribe to.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { CONNECT_TIMEOUT_MS, EmbeddedBroker } from '../../src/modules/devices/broker.ts';
import { advanceClock, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { closedWithin, fixedHeader, createGateway, gatewayClients, gatewayTopic, waitFor, within, type GatewayCredentials } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();
const connectGateway = gatewayClients();
/** MQTT_MAX_PACKET_BYTES's default. */
const MAX_PACKET_BYTES = 64 * 1024;

async function site() {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lock = await createLock(ctx.service, account.rootLocationId, { name: 'Gate', gateway_id: gateway.id });
  return { account, gateway, lock };
}

function brokerSocket(gateway: GatewayCredentials): Promise<Socket> {
  const url = new URL(gateway.mqtt.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Milliseconds until the broker closes the socket, or null if it stays open for `ms`. */
function closedAfter(socket: Socket, ms: number): Promise<number | null> {
  const started = Date.now();
  socket.on('error', () => undefined); // a reset when the broker cuts us off mid-write
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Date.now() - started);
    });
  });
}


function doorEvent(lock: number, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ id: randomUUID(), lock_id: lock, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null, ...extra });
}

async function storedEvents(gatewayId: number): Promise<number> {
  return (await ctx.database.db.query('SELECT id FROM access_events WHERE gateway_id = $1', [gatewayId])).length;
}

describe('packet size (MQTT_MAX_PACKET_BYTES) and the CONNECT deadline', () => {
  test('a CONNECT announcing 250 MB gets the socket closed at once, without credentials and without reading it', async () => {
    const { gateway } = await site();
    const socket = await brokerSocket(gateway);
    const closed = closedAfter(socket, 3000);
    socket.write(fixedHeader(0x10, 250_000_000));
    // Keep sending, as the attack did: the broker must not be collecting it.
    const chunk = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 32 && !socket.destroyed; i++) socket.write(chunk);
    const after = await closed;
    assert.ok(after !== null && after < 1000, `closed after ${after} ms`);
    // The broker still serves gateways.
    const client = await connectGateway(gateway);
    assert.ok(client.connected);
  });

  test('a socket that sends no CONNECT, or trickles one, is closed after the deadline', async () => {
    const { gateway } = await site();
    const silent = await brokerSocket(gateway);
    const slow = await brokerSocket(gateway);
    const silentClosed = closedAfter(silent, CONNECT_TIMEOUT_MS + 3000);
    const slowClosed = closedAfter(slow, CONNECT_TIMEOUT_MS + 3000);
    // A small CONNECT (40 bytes announced), one byte every 300 ms: it never completes in time.
    slow.write(fixedHeader(0x10, 40));
    const trickle = setInterval(() => !slow.destroyed && slow.write(Buffer.from([0])), 300);
    try {
      const [silentAfter, slowAfter] = await Promise.all([silentClosed, slowClosed]);
      for (const after of [silentAfter, slowAfter]) {
        assert.ok(after !== null && after >= CONNECT_TIMEOUT_MS - 200 && after < CONNECT_TIMEOUT_MS + 2000, `closed after ${after} ms`);
      }
    } finally {
      clearInterval(trickle);
    }
  });

  test('an authenticated gateway publishing more than the limit is disconnected and nothing is stored', async () => {
    const { gateway, lock } = await site();
    const client = await connectGateway(gateway);
    const closed = closedWithin(client, 2000);
    client.publish(gatewayTopic(gateway, 'events'), doorEvent(lock, { padding: 'x'.repeat(MAX_PACKET_BYTES) }), { qos: 1 });
    assert.equal(await closed, true, 'disconnected');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await storedEvents(gateway.id), 0);
    // Below the limit, the same event is taken.
    const again = await connectGateway(gateway);
    await again.publishAsync(gatewayTopic(gateway, 'events'), doorEvent(lock, { padding: 'x'.repeat(MAX_PACKET_BYTES / 2) }), { qos: 1 });
    await waitFor(async () => (await storedEvents(gateway.id)) === 1, 'the event under the limit');
  });
});

describe('what a gateway may publish and subscribe to', () => {
  test('a command published on its own commands topic, even retained, is refused and never reaches the gateway', async () => {
    const { account, gateway, lock } = await site();
    const commands: string[] = [];
    const client = await connectGateway(gateway);
    client.on('message', (_topic, payload) => commands.push(payload.toString()));
    await client.subscribeAsync(gatewayTopic(gateway, 'commands'), { qos: 1 });
    const forged = JSON.stringify({ id: randomUUID(), lock_id: lock, action: 'unlock', expires_at: new Date(Date.now() + 60_000).toISOString() });
    const closed = closedWithin(client, 2000);
    client.publish(gatewayTopic(gateway, 'commands'), forged, { qos: 1, retain: true });
    assert.equal(await closed, true, 'disconnected');
    // The gateway, back, is not handed the forged command (as a retained message) either.
    const back = await connectGateway(gateway);
    back.on('message', (_topic, payload) => commands.push(payload.toString()));
    await back.subscribeAsync(gatewayTopic(gateway, 'commands'), { qos: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(commands, []);
    // A real unlock still reaches it.
    const token = (await createApiKey(ctx.service, account.rootLocationId, ['locks:control'], { lock_allowlist: [lock] })).token;
    assert.equal((await ctx.service.request('POST', `/v1/locks/${lock}/unlock`, { token })).status, 202);
    await waitFor(() => commands.length === 1, 'the real command');
  });

  test('topics outside the protocol, retained messages other than presence and QoS 2 are refused; nothing is stored', async () => {
    const { gateway, lock } = await site();
    const refused: Array<[string, string, { qos: 0 | 1 | 2; retain: boolean }]> = [
      ['other topic under its prefix', gatewayTopic(gateway, 'anything'), { qos: 1, retain: false }],
      ['the commands topic', gatewayTopic(gateway, 'commands'), { qos: 0, retain: false }],
      ['a retained heartbeat', gatewayTopic(gateway, 'heartbeat'), { qos: 0, retain: true }],
      ['a retained door event', gatewayTopic(gateway, 'events'), { qos: 1, retain: true }],
      ['a door event at QoS 2', gatewayTopic(gateway, 'events'), { qos: 2, retain: false }],
    ];
    for (const [what, topic, options] of refused) {
      const client = await connectGateway(gateway);
      const closed = closedWithin(client, 2000);
      client.publish(topic, doorEvent(lock), options);
      assert.equal(await closed, true, `${what}: disconnected`);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await storedEvents(gateway.id), 0);
    // What the protocol gives it is taken: a retained presence, a heartbeat, a door event at QoS 1.
    const client = await connectGateway(gateway);
    const closed = closedWithin(client, 500);
    await client.publishAsync(gatewayTopic(gateway, 'presence'), '{"online":true}', { qos: 1, retain: true });
    await client.publishAsync(gatewayTopic(gateway, 'heartbeat'), '{}', { qos: 0 });
    await client.publishAsync(gatewayTopic(gateway, 'events'), doorEvent(lock), { qos: 1 });
    assert.equal(await closed, false, 'still connected');
    await waitFor(async () => (await storedEvents(gateway.id)) === 1, 'the door event');
  });

  test('a gateway may subscribe only to its own commands and access topics; a refused filter closes the connection, as a refused publish does', async () => {
    const { gateway } = await site();
    const other = await site();
    for (const topic of [
      gatewayTopic(gateway, '#'),
      gatewayTopic(gateway, 'events'),
      gatewayTopic(gateway, 'presence'),
      gatewayTopic(other.gateway, 'commands'),
      gatewayTopic(other.gateway, 'access/list'),
      gatewayTopic(other.gateway, 'access/answer'),
      gatewayTopic(gateway, 'access/+'),
      gatewayTopic(gateway, 'access/request'),
      'latchkey/v1/gateways/+/commands',
      'latchkey/v1/gateways/+/access/list',
      '#',
    ]) {
      const client = await connectGateway(gateway);
      const closed = closedWithin(client, 2000);
      // Beside its own commands: one refused filter in a packet is enough.
      client.subscribe([gatewayTopic(gateway, 'commands'), topic], { qos: 1 }, () => undefined);
      assert.equal(await closed, true, `${topic}: disconnected`);
    }
    const client = await connectGateway(gateway);
    const closed = closedWithin(client, 500);
    const [granted] = await within(client.subscribeAsync(gatewayTopic(gateway, 'commands'), { qos: 1 }), 2000, 'its commands');
    assert.equal(granted?.qos, 1);
    const access = await within(client.subscribeAsync([gatewayTopic(gateway, 'access/list'), gatewayTopic(gateway, 'access/answer')], { qos: 1 }), 2000, 'its access topics');
    assert.deepEqual(access.map((g) => g.qos), [1, 1]);
    assert.equal(await closed, false, 'still connected');
  });

  test('a SUBSCRIBE of 3,000 refused filters is one warn line (a count and a sample), and the connection is closed', async () => {
    const { gateway } = await site();
    const lines: Array<{ level: number; msg: string; filters?: number; sample?: string[] }> = [];
    // A broker of its own on the test's store, whose log the test reads.
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const broker = new EmbeddedBroker(ctx.database.db, { connected: () => undefined, disconnected: () => undefined, refused: () => undefined }, () => undefined, MAX_PACKET_BYTES, log);
    const port = await broker.start(0, '127.0.0.1');
    try {
      const client = await connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, url: `mqtt://127.0.0.1:${port}` } });
      const closed = closedWithin(client, 2000);
      const filters = Array.from({ length: 3000 }, (_, i) => `x/${i.toString(36)}/#`);
      client.subscribe(filters, { qos: 0 }, () => undefined);
      assert.equal(await closed, true, 'disconnected');
      await waitFor(() => lines.some((line) => line.msg.startsWith('mqtt subscription refused')), 'the refusal logged');
      const refusals = lines.filter((line) => line.msg.startsWith('mqtt subscription refused'));
      assert.equal(refusals.length, 1, 'one line for the packet');
      assert.equal(refusals[0]?.filters, 3000);
      assert.deepEqual(refusals[0]?.sample, filters.slice(0, 3));
    } finally {
      await broker.close();
    }
  });
});

describe('a gateway that stops reading what it is sent', () => {
  test('is closed once its socket holds more than MAX_UNDRAINED_FORWARDS messages, and the other gateways go on getting theirs at once', async () => {
    // A broker of the test's own, so that it can send large messages to one gateway (the service sends answers,
    // lists and commands; a gateway that asks thousands of questions and reads nothing fills its socket the same way).
    const disconnected = new Set<number>();
    const broker = new EmbeddedBroker(ctx.database.db, { connected: () => undefined, disconnected: (id) => disconnected.add(id), refused: () => undefined }, () => undefined, MAX_PACKET_BYTES, pino({ level: 'silent' }));
    const port = await broker.start(0, '127.0.0.1');
    const link = broker.link();
    try {
      const stalled = (await site()).gateway;
      const other = (await site()).gateway;
      const url = `mqtt://127.0.0.1:${port}`;
      const connectTo = (gateway: GatewayCredentials) => connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, url } });
      const staller = await connectTo(stalled);
      await staller.subscribeAsync(gatewayTopic(stalled, 'access/answer'), { qos: 1 });
      const reader = await connectTo(other);
      const received: string[] = [];
      reader.on('message', (_topic, payload) => received.push(payload.toString()));
      await reader.subscribeAsync(gatewayTopic(other, 'access/answer'), { qos: 1 });
      (staller.stream as Socket).pause(); // reads nothing from now on
      // More than Aedes's deliveries in flight used to be (100), each far larger than a socket takes at once.
      const big = { id: randomUUID(), filler: 'x'.repeat(60 * 1024) };
      // Sent one after another, as answers come (each forward finds the socket as the last ones left it).
      for (let i = 0; i < 300 && !disconnected.has(stalled.id); i++) {
        void link.publish(gatewayTopic(stalled, 'access/answer'), big).catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await waitFor(() => disconnected.has(stalled.id), 'the gateway that reads nothing closed', 10_000);
      const started = Date.now();
      await link.publish(gatewayTopic(other, 'access/answer'), { id: 'still served' });
      await waitFor(() => received.some((m) => m.includes('still served')), 'the other gateway served', 3000);
      assert.ok(Date.now() - started < 3000, 'at once, not after a drain time-out');
    } finally {
      await broker.close();
    }
  });
});

/**
 * A broker of the test's own with few deliveries in flight (the service has 1,000), gateways on it that read nothing
 * (their sockets paused) or read, and large answers to send them.
 */
async function smallBroker(deliveries: number) {
  const disconnected = new Set<number>();
  const broker = new EmbeddedBroker(
    ctx.database.db,
    { connected: () => undefined, disconnected: (id) => disconnected.add(id), refused: () => undefined },
    () => undefined,
    MAX_PACKET_BYTES,
    pino({ level: 'silent' }),
    deliveries,
  );
  const url = `mqtt://127.0.0.1:${await broker.start(0, '127.0.0.1')}`;
  const link = broker.link();
  const subscribed = async () => {
    const gateway = (await site()).gateway;
    const client = await connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, url } });
    await client.subscribeAsync(gatewayTopic(gateway, 'access/answer'), { qos: 1 });
    return { gateway, client };
  };
  return {
    broker,
    disconnected,
    big: { id: randomUUID(), filler: 'x'.repeat(60 * 1024) },
    sendTo: (gateway: GatewayCredentials, message: unknown) => void link.publish(gatewayTopic(gateway, 'access/answer'), message).catch(() => undefined),
    async notReading(): Promise<GatewayCredentials> {
      const { gateway, client } = await subscribed();
      (client.stream as Socket).pause();
      return gateway;
    },
    /** A gateway that reads: served at once (not after the drain time-out) whatever the others hold. */
    async reading() {
      const { gateway, client } = await subscribed();
      const received: string[] = [];
      client.on('message', (_topic, payload) => received.push(payload.toString()));
      return async () => {
        const started = Date.now();
        await link.publish(gatewayTopic(gateway, 'access/answer'), { id: 'still served' });
        await waitFor(() => received.some((m) => m.includes('still served')), 'the gateway that reads served', 5000);
        assert.ok(Date.now() - started < 3000, 'at once, not after a drain time-out');
      };
    },
  };
}

describe('many gateways that stop reading at once', () => {
  test('cannot hold every delivery: past half of them, a connection that has not drained is closed, and a gateway that reads is served at once', async () => {
    // 100 deliveries in flight: four gateways that read nothing, sent large messages in turn, hold 25 each, under the
    // bound per connection (32), once their sockets' buffers are full: then nothing more is forwarded, none of them
    // reaches its own bound, and nobody is served until the drain time-out (15 s).
    const deliveries = 100;
    const b = await smallBroker(deliveries);
    try {
      const stalled: GatewayCredentials[] = [];
      for (let i = 0; i < 4; i++) stalled.push(await b.notReading());
      const servedAtOnce = await b.reading();
      for (let i = 0; i < 150 && !stalled.every((gateway) => b.disconnected.has(gateway.id)); i++) {
        for (const gateway of stalled) b.sendTo(gateway, b.big);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await servedAtOnce();
      await waitFor(() => stalled.some((gateway) => b.disconnected.has(gateway.id)), 'a gateway that reads nothing closed');
      // What the closed ones held is free again: nothing left counted against the gateways that read.
      await waitFor(() => stalled.every((gateway) => b.disconnected.has(gateway.id)) || b.broker.heldByConnectionsNotDrained < deliveries / 4, 'the held deliveries freed', 5000);
    } finally {
      await b.broker.close();
    }
  });

  test('a burst forwarded in one turn of the event loop to a gateway that reads nothing is seen too: it is closed, and the others served', async () => {
    // Aedes authorises every forward of one turn before it writes any, so the socket looks drained to each of them;
    // what they hold is read from Aedes (its _pendingDrains: this test fails if an Aedes release moves it).
    const deliveries = 100;
    const b = await smallBroker(deliveries);
    try {
      const stalled = await b.notReading();
      const servedAtOnce = await b.reading();
      for (let i = 0; i < 2 * deliveries; i++) b.sendTo(stalled, b.big);
      await servedAtOnce();
      await waitFor(() => b.disconnected.has(stalled.id), 'the gateway that reads nothing closed');
    } finally {
      await b.broker.close();
    }
  });
});

describe('a gateway cut off while it logs in', () => {
  test('a login whose password was read before the gateway was cut off (a rotation) is refused, not left open', async () => {
    const { gateway } = await site();
    // A broker of its own whose read of the password waits until the test has cut the gateway off.
    let reading: () => void = () => undefined;
    const read = new Promise<void>((resolve) => (reading = resolve));
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const db = ctx.database.db;
    const slowDb = new Proxy(db, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver) as unknown;
        return async (...args: Parameters<typeof db.query>) => {
          if (String(args[0]).includes('mqtt_username')) {
            reading();
            await released;
          }
          return target.query(...args);
        };
      },
    });
    const broker = new EmbeddedBroker(slowDb, { connected: () => undefined, disconnected: () => undefined, refused: () => undefined }, () => undefined, MAX_PACKET_BYTES, pino({ level: 'silent' }));
    const port = await broker.start(0, '127.0.0.1');
    try {
      const login = connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, url: `mqtt://127.0.0.1:${port}` } }, { reconnectPeriod: 0 });
      await within(read, 5000, 'the password being read');
      broker.disconnectGateway(gateway.id);
      release();
      await assert.rejects(login, /not authorized|bad user name or password|Connection refused/i);
      // A login that starts after the cut is checked afresh.
      const again = await connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, url: `mqtt://127.0.0.1:${port}` } }, { reconnectPeriod: 0 });
      assert.equal(again.connected, true);
    } finally {
      release();
      await broker.close();
    }
  });
});

describe('refused logins', () => {
  test("a login as a gateway with a wrong password or client id is recorded on it (at most once a minute); an unknown user name on none", async () => {
    const { gateway } = await site();
    const other = await createGateway(ctx.service, (await createAccount(ctx.service)).rootLocationId);
    const refusedAt = async (id: number) => (await ctx.service.admin<{ last_refused_at: string | null }>('GET', `/admin/v1/gateways/${id}`)).body.last_refused_at;
    assert.equal(await refusedAt(gateway.id), null);
    await assert.rejects(connectGateway(gateway, { password: 'an-old-password' }), /not authorized|bad user ?name or password/i);
    await waitFor(async () => (await refusedAt(gateway.id)) !== null, 'the refusal recorded');
    const first = await refusedAt(gateway.id);
    // Within the minute: refused all the same, not written again (anyone may try a user name).
    await assert.rejects(connectGateway(gateway, { clientId: other.mqtt.client_id }), /not authorized|bad user ?name or password/i);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await refusedAt(gateway.id), first);
    // A minute on: a client id that is not its user name is recorded too.
    await advanceClock(ctx.service, 61);
    await assert.rejects(connectGateway(gateway, { clientId: other.mqtt.client_id }), /not authorized|bad user ?name or password/i);
    await waitFor(async () => (await refusedAt(gateway.id)) !== first, 'the later refusal recorded');
    assert.ok(Date.parse((await refusedAt(gateway.id)) as string) > Date.parse(first as string));
    // Its own credentials log in; the other gateway, whose user name nobody tried, has none.
    const client = await connectGateway(gateway);
    assert.equal(client.connected, true);
    await assert.rejects(connectGateway({ ...gateway, mqtt: { ...gateway.mqtt, username: 'gateway-999999', client_id: 'gateway-999999' } }), /not authorized|bad user ?name or password/i);
    assert.equal(await refusedAt(other.id), null);
  });
});

describe('payloads that are not what the protocol says', () => {
  test('JSON that is not an object (null, a number, a list, a string) on any topic is dropped and acknowledged; the service carries on', async () => {
    const { gateway, lock } = await site();
    const client = await connectGateway(gateway);
    for (const topic of ['presence', 'heartbeat', 'events', 'commands/result']) {
      for (const payload of ['null', '42', '[]', '"online"', 'true']) {
        await within(client.publishAsync(gatewayTopic(gateway, topic), payload, { qos: 1, retain: topic === 'presence' }), 2000, `${topic} ${payload} acknowledged`);
      }
    }
    // The process is alive and the gateway's next door event is stored.
    await client.publishAsync(gatewayTopic(gateway, 'events'), doorEvent(lock), { qos: 1 });
    await waitFor(async () => (await storedEvents(gateway.id)) === 1, 'the door event after the junk');
  });

  test('a message that is not JSON is still contact: a heartbeat of any text brings a gateway that said it was offline back online', async () => {
    const { gateway } = await site();
    const client = await connectGateway(gateway);
    const online = async () => (await ctx.database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gateway.id]))[0]?.online;
    await waitFor(async () => (await online()) === true, 'online once connected');
    await client.publishAsync(gatewayTopic(gateway, 'presence'), '{"online":false}', { qos: 1, retain: true });
    await waitFor(async () => (await online()) === false, 'offline as it said');
    // Not on presence: a malformed retained presence (replayed by an external broker) brings nobody back.
    await client.publishAsync(gatewayTopic(gateway, 'presence'), 'false', { qos: 1, retain: true });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(await online(), false, 'a malformed presence is not contact');
    await client.publishAsync(gatewayTopic(gateway, 'heartbeat'), 'ping', { qos: 0 });
    await waitFor(async () => (await online()) === true, 'online again: the contract counts any message as a heartbeat');
  });
});
