// Gateway credentials enforced by the broker in front of the service (docs/brokers.md):
// - Mosquitto with its dynamic-security plugin, started here on a port of its own with the shipped
//   deploy/mosquitto/mosquitto.conf: the service provisions each gateway as a broker client whose role allows
//   exactly its topics, replaces it on rotation and removes it on deletion;
// - the HTTP authentication and ACL endpoints a broker such as EMQX calls, behind a shared secret;
// - the configuration variables of both.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import pino from 'pino';
import { buildApp, type Latchkey } from '../../src/app.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { DynsecAccounts, SERVICE_ROLE } from '../../src/modules/devices/mosquitto-dynsec.ts';
import { hashToken } from '../../src/platform/secrets.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { advanceClock, alignToMinuteStart, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { closedWithin, createGateway, dropped, fixedHeader, waitFor, type GatewayCredentials } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, freshIp, startService, useTestService, type TestService } from '../helpers/service.ts';
import { mosquittoAvailable, startMosquitto, type TestBroker } from '../helpers/mosquitto.ts';
import type { ErrorBody } from '../helpers/types.ts';

const SECRET = 'broker-secret-0123456789abcdef-0123456789';
const silent = pino({ level: 'silent' });



/** A service whose log lines are kept, to show what never reaches them. */
async function startLoggedService(db: TestDatabase['db'], env: Record<string, string>): Promise<{ latchkey: Latchkey; url: string; lines: string[] }> {
  const lines: string[] = [];
  const config = loadConfig({ ADMIN_TOKEN, SANDBOX: 'true', TRUST_PROXY: 'true', PORT: '0', HOST: '127.0.0.1', MQTT_PORT: '0', ...env });
  const latchkey = await buildApp({ config, db, logger: { level: 'trace', stream: { write: (line: string) => void lines.push(line) } } });
  await latchkey.app.listen({ port: 0, host: '127.0.0.1' });
  const address = latchkey.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return { latchkey, url: `http://127.0.0.1:${address.port}`, lines };
}

async function post<T>(url: string, token: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

// ---- configuration -------------------------------------------------------------------------------

describe('configuration of broker credentials', () => {
  test('MQTT_DYNSEC_USERNAME and MQTT_DYNSEC_PASSWORD come together, with MQTT_URL naming the service user', () => {
    const url = 'mqtt://latchkey:pw@broker:1883';
    assert.deepEqual(loadConfig({ MQTT_URL: url, MQTT_DYNSEC_USERNAME: 'admin', MQTT_DYNSEC_PASSWORD: 'secret' }).mqttDynsec, {
      username: 'admin',
      password: 'secret',
    });
    assert.equal(loadConfig({ MQTT_URL: url }).mqttDynsec, null);
    const cases: Array<[Record<string, string>, string]> = [
      [{ MQTT_URL: url, MQTT_DYNSEC_USERNAME: 'admin' }, 'MQTT_DYNSEC_PASSWORD'],
      [{ MQTT_URL: url, MQTT_DYNSEC_PASSWORD: 'secret' }, 'MQTT_DYNSEC_USERNAME'],
      [{ MQTT_DYNSEC_USERNAME: 'admin', MQTT_DYNSEC_PASSWORD: 'secret' }, 'MQTT_DYNSEC_USERNAME'],
      [{ MQTT_URL: 'mqtt://broker:1883', MQTT_DYNSEC_USERNAME: 'admin', MQTT_DYNSEC_PASSWORD: 'secret' }, 'MQTT_DYNSEC_USERNAME'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.variable === variable, JSON.stringify(env));
    }
  });

  test('MQTT_HTTP_AUTH_SECRET must be at least 32 characters', () => {
    assert.equal(loadConfig({}).mqttHttpAuthSecret, null);
    assert.equal(loadConfig({ MQTT_HTTP_AUTH_SECRET: SECRET }).mqttHttpAuthSecret, SECRET);
    assert.throws(
      () => loadConfig({ MQTT_HTTP_AUTH_SECRET: 'x'.repeat(31) }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'MQTT_HTTP_AUTH_SECRET',
    );
  });
});

// ---- HTTP authentication and ACL endpoints --------------------------------------------------------

const ctx = useTestService(undefined, { MQTT_HTTP_AUTH_SECRET: SECRET });

describe('HTTP authentication endpoints for brokers', () => {
  const authenticate = (body: unknown, ip = freshIp(), token: string | null = SECRET) =>
    ctx.service.request<{ result: string; is_superuser?: boolean } & Partial<ErrorBody>>('POST', '/broker/v1/authenticate', { token, body, ip });
  const authorize = (body: unknown, ip = freshIp()) =>
    ctx.service.request<{ result: string }>('POST', '/broker/v1/authorize', { token: SECRET, body, ip });

  test('a missing, malformed or wrong shared secret answers 401 unauthenticated', async () => {
    const body = { username: 'gateway-1', clientid: 'gateway-1', password: 'x' };
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic abc' }, { authorization: `Bearer ${SECRET}x` }, { authorization: 'Bearer' }]) {
      for (const path of ['/broker/v1/authenticate', '/broker/v1/authorize']) {
        const res = await ctx.service.request<ErrorBody>('POST', path, { headers, body, ip: freshIp() });
        assert.equal(res.status, 401, `${path} ${JSON.stringify(headers)}`);
        assert.equal(res.body.error.code, 'unauthenticated');
      }
    }
  });

  test("after 30 wrong secrets in a minute the wrong ones answer 429 until the window rolls; the right secret from that address still gets in", async () => {
    await alignToMinuteStart(ctx.service);
    // Behind a load balancer or NAT every broker node shares one address: wrong secrets from it must not
    // lock the broker itself out.
    const ip = freshIp();
    const body = { username: 'someone', clientid: 'c', password: 'p' };
    for (let i = 0; i < 30; i++) assert.equal((await authenticate(body, ip, 'wrong-secret')).status, 401);
    const locked = await authenticate(body, ip, 'wrong-secret');
    assert.equal(locked.status, 429);
    assert.equal(locked.body.error?.code, 'rate_limited');
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
    const missing = await ctx.service.request('POST', '/broker/v1/authenticate', { body, ip });
    assert.equal(missing.status, 429, 'no secret at all is a wrong one');
    assert.equal((await authenticate(body, ip)).status, 200, 'the right secret is never locked out');
    assert.equal((await authorize({ username: 'someone', clientid: 'c', topic: 't', action: 'publish' }, ip)).status, 200);
    await advanceClock(ctx.service, 60);
    assert.equal((await authenticate(body, ip, 'wrong-secret')).status, 401, 'a new window');
  });

  test('authenticate allows a gateway with its password and client id, denies anything else in its namespace, ignores other users', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const other = await createGateway(ctx.service, account.rootLocationId);
    const { username, password } = gateway.mqtt;
    const cases: Array<[Record<string, string>, string]> = [
      [{ username, clientid: username, password }, 'allow'],
      [{ username, clientid: username, password: `${password}x` }, 'deny'],
      [{ username, clientid: username, password: '' }, 'deny'],
      [{ username, clientid: other.mqtt.username, password }, 'deny'],
      [{ username, clientid: 'anything', password }, 'deny'],
      [{ username: other.mqtt.username, clientid: other.mqtt.username, password }, 'deny'],
      [{ username: 'gateway-999999999', clientid: 'gateway-999999999', password }, 'deny'],
      [{ username: `gateway-0${gateway.id}`, clientid: `gateway-0${gateway.id}`, password }, 'deny'],
      [{ username: 'gateway-', clientid: 'gateway-', password }, 'deny'],
      [{ username: 'latchkey', clientid: 'latchkey-1', password: 'whatever' }, 'ignore'],
    ];
    for (const [body, result] of cases) {
      const res = await authenticate(body);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { result, is_superuser: false }, JSON.stringify({ ...body, password: body.password === password ? '(right)' : body.password }));
    }
  });

  test("authorize allows a gateway exactly its own topics: publish presence, heartbeat, events, results and access requests, subscribe its commands and access answers and lists", async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const other = await createGateway(ctx.service, account.rootLocationId);
    const own = `latchkey/v1/gateways/${gateway.id}`;
    const theirs = `latchkey/v1/gateways/${other.id}`;
    const { username } = gateway.mqtt;
    const cases: Array<[string, string, string, string?]> = [
      ['publish', `${own}/presence`, 'allow'],
      ['publish', `${own}/heartbeat`, 'allow'],
      ['publish', `${own}/events`, 'allow'],
      ['publish', `${own}/commands/result`, 'allow'],
      ['subscribe', `${own}/commands`, 'allow'],
      ['publish', `${own}/access/request`, 'allow'],
      ['publish', `${own}/access/sync`, 'allow'],
      ['publish', `${own}/access/applied`, 'allow'],
      ['subscribe', `${own}/access/list`, 'allow'],
      ['subscribe', `${own}/access/answer`, 'allow'],
      ['publish', `${own}/access/answer`, 'deny'],
      ['publish', `${own}/access/list`, 'deny'],
      ['subscribe', `${own}/access/request`, 'deny'],
      ['subscribe', `${own}/access/#`, 'deny'],
      ['subscribe', `${theirs}/access/list`, 'deny'],
      ['subscribe', `${theirs}/access/answer`, 'deny'],
      ['publish', `${theirs}/access/request`, 'deny'],
      ['publish', `${own}/commands`, 'deny'],
      ['publish', `${own}/other`, 'deny'],
      ['publish', `${theirs}/events`, 'deny'],
      ['publish', `${theirs}/presence`, 'deny'],
      ['subscribe', `${theirs}/commands`, 'deny'],
      ['subscribe', `${own}/#`, 'deny'],
      ['subscribe', 'latchkey/v1/gateways/+/commands', 'deny'],
      ['subscribe', '#', 'deny'],
      ['subscribe', `${own}/events`, 'deny'],
      ['publish', `${own}/events`, 'deny', other.mqtt.username],
    ];
    for (const [action, topic, result, clientid] of cases) {
      const res = await authorize({ username, clientid: clientid ?? username, topic, action });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { result }, `${action} ${topic}`);
    }
    // The flags a broker like EMQX sends: QoS 2 is refused, and only presence may be retained.
    const flags: Array<[string, Record<string, unknown>, string]> = [
      [`${own}/presence`, { qos: 1, retain: true }, 'allow'],
      [`${own}/presence`, { qos: '1', retain: 'true' }, 'allow'],
      [`${own}/events`, { qos: 1, retain: false }, 'allow'],
      [`${own}/events`, { qos: '0', retain: 'false' }, 'allow'],
      [`${own}/events`, { qos: 1, retain: true }, 'deny'],
      [`${own}/heartbeat`, { retain: 'true' }, 'deny'],
      [`${own}/events`, { qos: 2 }, 'deny'],
      [`${own}/commands/result`, { qos: '2', retain: false }, 'deny'],
    ];
    for (const [topic, extra, result] of flags) {
      const res = await authorize({ username, clientid: username, topic, action: 'publish', ...extra });
      assert.deepEqual(res.body, { result }, `${topic} ${JSON.stringify(extra)}`);
    }
    const service = await authorize({ username: 'latchkey', clientid: 'latchkey-1', topic: `${own}/commands`, action: 'publish' });
    assert.deepEqual(service.body, { result: 'ignore' }, "another user is the broker's other sources' to judge");
    const malformed = await authorize({ username: 'gateway-01', clientid: 'gateway-01', topic: 'latchkey/v1/gateways/01/events', action: 'publish' });
    assert.deepEqual(malformed.body, { result: 'deny' });
  });

  test('after rotation the old password is denied and the new allowed; a deleted gateway is denied everything', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const { username } = gateway.mqtt;
    const rotated = await ctx.service.admin<GatewayCredentials>('POST', `/admin/v1/gateways/${gateway.id}/rotate_password`);
    assert.equal(rotated.status, 200);
    const refusedAt = async () => (await ctx.service.admin<{ last_refused_at: string | null }>('GET', `/admin/v1/gateways/${gateway.id}`)).body.last_refused_at;
    assert.equal(await refusedAt(), null);
    assert.equal((await authenticate({ username, clientid: username, password: gateway.mqtt.password })).body.result, 'deny');
    // The operator sees that the gateway still dials with its old password.
    await waitFor(async () => (await refusedAt()) !== null, 'the refused login recorded on the gateway');
    assert.equal((await authenticate({ username, clientid: username, password: rotated.body.mqtt.password })).body.result, 'allow');

    const topic = `latchkey/v1/gateways/${gateway.id}/events`;
    assert.equal((await authorize({ username, clientid: username, topic, action: 'publish' })).body.result, 'allow');
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/gateways/${gateway.id}`)).status, 204);
    assert.equal((await authenticate({ username, clientid: username, password: rotated.body.mqtt.password })).body.result, 'deny');
    assert.equal((await authorize({ username, clientid: username, topic, action: 'publish' })).body.result, 'deny', 'a connection that outlived it');
  });

  test('bad requests get the error envelope: unknown fields, wrong action, not JSON, too large', async () => {
    const unknown = await authenticate({ username: 'a', clientid: 'a', password: 'p', peerhost: '1.2.3.4' });
    assert.equal(unknown.status, 422);
    assert.equal(unknown.body.error?.code, 'validation_failed');
    const action = await ctx.service.request<ErrorBody>('POST', '/broker/v1/authorize', {
      token: SECRET,
      body: { username: 'a', clientid: 'a', topic: 't', action: 'all' },
      ip: freshIp(),
    });
    assert.equal(action.status, 422);
    const notJson = await ctx.service.request<ErrorBody>('POST', '/broker/v1/authenticate', { token: SECRET, body: '{', ip: freshIp() });
    assert.equal(notJson.status, 400);
    const large = await authenticate({ username: 'a', clientid: 'a', password: 'p'.repeat(10_000) });
    assert.equal(large.status, 413);
    assert.equal(large.body.error?.code, 'invalid_request');
  });

  test('without MQTT_HTTP_AUTH_SECRET the endpoints do not exist', async () => {
    const plain: TestService = await startService(ctx.database.db);
    try {
      const res = await plain.request<ErrorBody>('POST', '/broker/v1/authenticate', { token: SECRET, body: { username: 'a', clientid: 'a', password: 'p' } });
      assert.equal(res.status, 404);
    } finally {
      await plain.close();
    }
  });

  test('passwords never reach the log', async () => {
    const logged = await startLoggedService(ctx.database.db, { MQTT_HTTP_AUTH_SECRET: SECRET });
    try {
      const account = await post<{ root_location: { id: number } }>(`${logged.url}/admin/v1/accounts`, ADMIN_TOKEN, { name: 'Logged' });
      const created = await post<GatewayCredentials>(`${logged.url}/admin/v1/gateways`, ADMIN_TOKEN, { location_id: account.body.root_location.id, name: 'gw' });
      assert.equal(created.status, 201);
      const rotated = await post<GatewayCredentials>(`${logged.url}/admin/v1/gateways/${created.body.id}/rotate_password`, ADMIN_TOKEN);
      assert.equal(rotated.status, 200);
      const { username } = rotated.body.mqtt;
      for (const password of [created.body.mqtt.password, rotated.body.mqtt.password, 'a-wrong-password-to-remember']) {
        assert.equal((await post(`${logged.url}/broker/v1/authenticate`, SECRET, { username, clientid: username, password })).status, 200);
      }
      assert.equal((await post(`${logged.url}/broker/v1/authenticate`, 'a-wrong-secret-to-remember', { username, clientid: username, password: 'x' })).status, 401);
      assert.ok(logged.lines.length > 0, 'the log is written');
      const log = logged.lines.join('');
      for (const secret of [created.body.mqtt.password, rotated.body.mqtt.password, 'a-wrong-password-to-remember', SECRET, 'a-wrong-secret-to-remember']) {
        assert.ok(!log.includes(secret), 'a password or secret in the log');
      }
    } finally {
      await logged.latchkey.close();
    }
  });
});

// ---- Mosquitto with the dynamic-security plugin -----------------------------------------------------

const skipMosquitto = mosquittoAvailable() ? false : 'mosquitto is not installed';
let admin: { username: string; password: string };

describe('with Mosquitto and its dynamic-security plugin in front', { skip: skipMosquitto }, () => {
  let broker: TestBroker;
  let database: TestDatabase;
  let service: TestService;
  let control: DynsecAccounts;
  const clients: MqttClient[] = [];
  const serviceUser = { username: 'latchkey-svc', password: `svc-${process.pid}` };

  before(async () => {
    broker = await startMosquitto({ dynsec: true });
    admin = broker.admin as { username: string; password: string };
    database = await createTestDatabase();
    service = await startService(database.db, {
      MQTT_URL: broker.url.replace('mqtt://', `mqtt://${serviceUser.username}:${serviceUser.password}@`),
      MQTT_DYNSEC_USERNAME: admin.username,
      MQTT_DYNSEC_PASSWORD: admin.password,
    });
    control = await DynsecAccounts.connect(broker.url, admin, silent);
  });
  after(async () => {
    for (const client of clients) await client.endAsync(true).catch(() => undefined);
    await control?.close().catch(() => undefined);
    await service?.close();
    await database?.close();
    await broker?.stop();
  });

  /** Connects as a gateway; MQTT 5 by default, so that the broker's refusals come back as reason codes. */
  async function connectGateway(gateway: GatewayCredentials, options: mqtt.IClientOptions = {}): Promise<MqttClient> {
    const client = await mqtt.connectAsync(broker.url, {
      clientId: gateway.mqtt.client_id,
      username: gateway.mqtt.username,
      password: gateway.mqtt.password,
      protocolVersion: 5,
      reconnectPeriod: 0,
      ...options,
    });
    clients.push(client);
    return client;
  }

  const topic = (gateway: GatewayCredentials, name: string) => `${gateway.mqtt.topic_prefix}/gateways/${gateway.id}/${name}`;
  const doorEvent = (lockId: number, id: string) =>
    JSON.stringify({ id, lock_id: lockId, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null });
  const storedEvents = async (lockId: number) =>
    (await database.db.query('SELECT id FROM access_events WHERE lock_id = $1 AND gateway_id IS NOT NULL', [lockId])).length;

  test("the service gives its own broker user the service role; a gateway gets an account and the broker's address, not the service's password", async () => {
    const [answer] = await control.run([{ command: 'getClient', username: serviceUser.username }]);
    const roles = (answer?.data as { client: { roles: Array<{ rolename: string }> } }).client.roles.map((r) => r.rolename);
    assert.deepEqual(roles, [SERVICE_ROLE]);
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    assert.equal(gateway.mqtt.url, broker.url);
    const listed = await service.admin('GET', `/admin/v1/gateways/${gateway.id}`);
    assert.ok(!listed.text.includes(serviceUser.password));
    assert.ok((await control.provisionedGatewayIds()).has(gateway.id));
  });

  test('with wrong admin credentials for the control channel, the service does not start', async () => {
    await assert.rejects(
      startService(database.db, {
        MQTT_URL: broker.url.replace('mqtt://', `mqtt://${serviceUser.username}:${serviceUser.password}@`),
        MQTT_DYNSEC_USERNAME: admin.username,
        MQTT_DYNSEC_PASSWORD: `${admin.password}-wrong`,
      }),
      /MQTT_DYNSEC_USERNAME: .*not available/,
    );
  });

  test('a gateway with a wrong password, or another client id, is refused', async () => {
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    const other = await createGateway(service, account.rootLocationId);
    await assert.rejects(connectGateway(gateway, { password: `${gateway.mqtt.password}x` }), /Not authorized|Bad user name or password/i);
    await assert.rejects(connectGateway(gateway, { clientId: other.mqtt.client_id }), /Not authorized/i);
    await assert.rejects(connectGateway(gateway, { username: other.mqtt.username }), /Not authorized/i, "another gateway's user name");
    const client = await connectGateway(gateway);
    assert.ok(client.connected);
    await client.endAsync();
  });

  test("a gateway cannot publish on another gateway's topics or on its own commands, nor read another's commands", async () => {
    const account = await createAccount(service);
    const a = await createGateway(service, account.rootLocationId);
    const b = await createGateway(service, account.rootLocationId);
    const lockA = await createLock(service, account.rootLocationId, { gateway_id: a.id });
    const lockB = await createLock(service, account.rootLocationId, { gateway_id: b.id });

    const gatewayB = await connectGateway(b);
    const receivedByB: string[] = [];
    gatewayB.on('message', (_topic, payload) => receivedByB.push(payload.toString()));
    await gatewayB.subscribeAsync(topic(b, 'commands'), { qos: 1 });

    // MQTT 5: the broker says no to each.
    const gatewayA = await connectGateway(a);
    for (const [name, payload] of [
      [topic(b, 'events'), doorEvent(lockB, 'forged-1')],
      [topic(b, 'presence'), '{"online":true}'],
      [topic(b, 'commands'), '{"id":"x","lock_id":1,"action":"unlock"}'],
      [topic(b, 'commands/result'), '{"id":"x","ok":true}'],
      [topic(a, 'commands'), '{"id":"x","lock_id":1,"action":"unlock"}'],
      [topic(b, 'access/request'), '{"id":"x","lock_id":1,"credential":"uid:01020304"}'],
      [topic(a, 'access/answer'), '{"id":"x","granted":true,"reason":null,"key_id":1}'],
      [topic(a, 'access/list'), '{"type":"full","version":99,"valid_until":"2099-01-01T00:00:00Z","part":1,"parts":1,"entries":[],"removed":[]}'],
    ] as const) {
      await assert.rejects(gatewayA.publishAsync(name, payload, { qos: 1 }), /Not authorized/i, name);
    }
    await assert.rejects(gatewayA.subscribeAsync(topic(b, 'commands'), { qos: 1 }), /Not authorized/i);
    await assert.rejects(gatewayA.subscribeAsync(topic(b, 'access/list'), { qos: 1 }), /Not authorized/i);
    await assert.rejects(gatewayA.subscribeAsync(topic(b, 'access/answer'), { qos: 1 }), /Not authorized/i);
    await assert.rejects(gatewayA.subscribeAsync(`${a.mqtt.topic_prefix}/gateways/+/commands`, { qos: 1 }), /Not authorized/i);
    await gatewayA.endAsync();

    // MQTT 3.1.1: the broker drops them silently; a legitimate event afterwards shows the service is listening.
    const legacyA = await connectGateway(a, { protocolVersion: 4 });
    await legacyA.publishAsync(topic(b, 'events'), doorEvent(lockB, 'forged-2'), { qos: 1 });
    await legacyA.publishAsync(topic(b, 'presence'), '{"online":true}', { qos: 1 });
    await legacyA.publishAsync(topic(b, 'commands'), '{"id":"x","lock_id":1,"action":"unlock"}', { qos: 1 });
    await legacyA.publishAsync(topic(a, 'events'), doorEvent(lockA, 'genuine-1'), { qos: 1 });
    await waitFor(async () => (await storedEvents(lockA)) === 1, "A's own event");
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await storedEvents(lockB), 0, "nothing recorded for B's lock");
    const [rowB] = await database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [b.id]);
    assert.equal(rowB?.online, false, 'B was not marked online by A');
    assert.deepEqual(receivedByB, [], 'B received no forged command');

    // The service's own commands still reach B.
    const token = (await createApiKey(service, account.rootLocationId, ['locks:control'], { lock_allowlist: [lockB] })).token;
    await gatewayB.publishAsync(topic(b, 'presence'), '{"online":true}', { qos: 1, retain: true });
    await waitFor(async () => (await database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [b.id]))[0]?.online === true, 'B online');
    const unlock = await service.request('POST', `/v1/locks/${lockB}/unlock`, { token });
    assert.equal(unlock.status, 202, unlock.text);
    await waitFor(() => receivedByB.length === 1, 'the command reaches B');
    await gatewayB.publishAsync(topic(b, 'presence'), '', { qos: 1, retain: true });
  });

  test('rotation locks the old password out, drops the live connection and marks the gateway offline; the new password works', async () => {
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    const lock = await createLock(service, account.rootLocationId, { gateway_id: gateway.id });
    const online = async () => (await database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gateway.id]))[0]?.online;
    const live = await connectGateway(gateway, { will: { topic: topic(gateway, 'presence'), payload: Buffer.from('{"online":false}'), qos: 1, retain: true } });
    await live.publishAsync(topic(gateway, 'presence'), '{"online":true}', { qos: 1, retain: true });
    await waitFor(async () => (await online()) === true, 'online');
    const closed = dropped(live);

    const rotated = await service.admin<GatewayCredentials>('POST', `/admin/v1/gateways/${gateway.id}/rotate_password`);
    assert.equal(rotated.status, 200, rotated.text);
    await closed;
    await waitFor(async () => (await online()) === false, 'it reads offline: Mosquitto sends no will for a client it disconnects');
    await assert.rejects(connectGateway(gateway), /Not authorized/i, 'the old password');
    const again = await connectGateway(rotated.body);
    await again.publishAsync(topic(gateway, 'events'), doorEvent(lock, 'after-rotation'), { qos: 1 });
    await waitFor(async () => (await storedEvents(lock)) === 1, 'an event with the new credentials');
  });

  test('deletion removes the broker account and drops the live connection; a gateway with locks is kept', async () => {
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    const live = await connectGateway(gateway);
    const closed = dropped(live);
    assert.equal((await service.admin('DELETE', `/admin/v1/gateways/${gateway.id}`)).status, 204);
    await closed;
    await assert.rejects(connectGateway(gateway), /Not authorized/i);
    assert.ok(!(await control.provisionedGatewayIds()).has(gateway.id));
    const [role] = await control.run([{ command: 'getRole', rolename: `latchkey-gateway-${gateway.id}` }]);
    assert.match(role?.error ?? '', /not found/i, 'its role is gone too');

    const busy = await createGateway(service, account.rootLocationId);
    await createLock(service, account.rootLocationId, { gateway_id: busy.id });
    assert.equal((await service.admin('DELETE', `/admin/v1/gateways/${busy.id}`)).status, 409);
    assert.ok((await control.provisionedGatewayIds()).has(busy.id));

    // A gateway with history (the access log refers to it) is kept, and keeps its broker account.
    const lockless = await createGateway(service, account.rootLocationId);
    const plainLock = await createLock(service, account.rootLocationId);
    await database.db.query(
      `INSERT INTO access_events (account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, data)
       VALUES ($1, $2, $3, $4, 'e1', 'access.denied', now(), '{}')`,
      [account.id, account.rootLocationId, plainLock, lockless.id],
    );
    const kept = await service.admin<ErrorBody>('DELETE', `/admin/v1/gateways/${lockless.id}`);
    assert.equal(kept.status, 409);
    assert.equal(kept.body.error.code, 'gateway_in_use');
    assert.ok((await control.provisionedGatewayIds()).has(lockless.id), 'its broker account stays');
    assert.ok((await connectGateway(lockless)).connected, 'and it can still connect');
  });

  test('gateways without a broker account are named at start-up, and a rotation provisions them; no password is logged', async () => {
    const account = await createAccount(service);
    // A gateway from before dynamic security was configured: a row, and no broker account.
    const [reserved] = await database.db.query<{ id: number | string }>("SELECT nextval(pg_get_serial_sequence('gateways', 'id')) AS id");
    const id = Number(reserved?.id);
    await database.db.query(
      `INSERT INTO gateways (id, location_id, name, mqtt_username, password_hash, created_at) VALUES ($1, $2, 'old', $3, $4, now())`,
      [id, account.rootLocationId, `gateway-${id}`, hashToken('old-password')],
    );
    const old = { id, mqtt: { url: broker.url, client_id: `gateway-${id}`, username: `gateway-${id}`, password: 'old-password', topic_prefix: 'latchkey/v1' } };
    await assert.rejects(connectGateway(old), /Not authorized/i);

    const second = await startLoggedService(await database.openAnother(), {
      MQTT_URL: broker.url.replace('mqtt://', `mqtt://${serviceUser.username}:${serviceUser.password}@`),
      MQTT_DYNSEC_USERNAME: admin.username,
      MQTT_DYNSEC_PASSWORD: admin.password,
    });
    try {
      const warning = second.lines.map((line) => JSON.parse(line) as { msg: string; gatewayIds?: number[] }).find((line) => line.gatewayIds);
      assert.ok(warning?.gatewayIds?.includes(id), 'the gateway is named');
      assert.match(warning?.msg ?? '', /rotate/);
      const rotated = await post<GatewayCredentials>(`${second.url}/admin/v1/gateways/${id}/rotate_password`, ADMIN_TOKEN);
      assert.equal(rotated.status, 200);
      assert.ok((await connectGateway(rotated.body)).connected);
      const log = second.lines.join('');
      for (const secret of [rotated.body.mqtt.password, admin.password, serviceUser.password]) assert.ok(!log.includes(secret), 'a password in the log');
    } finally {
      await second.latchkey.close();
    }
  });

  test('a retained door event or command result is dropped and cleared on the broker, and an instance that starts later is not handed it', async () => {
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    const lock = await createLock(service, account.rootLocationId, { gateway_id: gateway.id });
    const client = await connectGateway(gateway);
    await client.publishAsync(topic(gateway, 'events'), doorEvent(lock, 'retained-1'), { qos: 1, retain: true });
    await client.publishAsync(topic(gateway, 'commands/result'), JSON.stringify({ id: '0190c2a1-1f6e-7000-8000-000000000001', ok: true }), { qos: 1, retain: true });
    await client.publishAsync(topic(gateway, 'events'), doorEvent(lock, 'plain-1'), { qos: 1 });
    await waitFor(async () => (await storedEvents(lock)) >= 1, 'the plain event stored');
    /** What the broker still holds retained under the gateway's topics, as a new subscription is handed it. */
    const retained = async () => {
      const reader = await mqtt.connectAsync(broker.url, { ...serviceUser, clientId: `retained-reader-${process.pid}`, protocolVersion: 5, reconnectPeriod: 0 });
      const held: string[] = [];
      reader.on('message', (t, payload, packet) => packet.retain && payload.length > 0 && held.push(t));
      await reader.subscribeAsync(['presence', 'events', 'commands/result'].map((kind) => topic(gateway, kind)), { qos: 1 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await reader.endAsync(true);
      return held;
    };
    await waitFor(async () => (await retained()).every((t) => t.endsWith('/presence')), 'the retained event and result cleared');

    const later = await startService(database.db, {
      MQTT_URL: broker.url.replace('mqtt://', `mqtt://${serviceUser.username}:${serviceUser.password}@`),
      MQTT_DYNSEC_USERNAME: admin.username,
      MQTT_DYNSEC_PASSWORD: admin.password,
    });
    try {
      await client.publishAsync(topic(gateway, 'events'), doorEvent(lock, 'plain-2'), { qos: 1 });
      await waitFor(async () => (await storedEvents(lock)) >= 2, 'the second plain event stored');
      const ids = (await database.db.query<{ gateway_event_id: string }>('SELECT gateway_event_id FROM access_events WHERE lock_id = $1 AND gateway_id IS NOT NULL ORDER BY id', [lock])).map((r) => r.gateway_event_id);
      assert.deepEqual(ids, ['plain-1', 'plain-2'], 'the retained event was never stored');
    } finally {
      await later.close();
    }
  });

  test('a gateway publishing at QoS 2 is disconnected by the broker (max_qos 1) and nothing is stored', async () => {
    const account = await createAccount(service);
    const gateway = await createGateway(service, account.rootLocationId);
    const lock = await createLock(service, account.rootLocationId, { gateway_id: gateway.id });
    const client = await connectGateway(gateway, { protocolVersion: 4 });
    const closed = closedWithin(client, 3000);
    client.publish(topic(gateway, 'events'), doorEvent(lock, 'qos2'), { qos: 2 }, () => undefined);
    assert.equal(await closed, true, 'the connection closed');
    const other = await connectGateway(gateway);
    await other.publishAsync(topic(gateway, 'events'), doorEvent(lock, 'qos1'), { qos: 1 });
    await waitFor(async () => (await storedEvents(lock)) >= 1, 'the QoS 1 event stored');
    assert.equal(await storedEvents(lock), 1, 'the QoS 2 event was not');
  });

  test('a connection announcing a packet over max_packet_size is closed before its body arrives, authenticated or not', async () => {
    const { port } = new URL(broker.url);
    for (const [what, typeByte] of [['CONNECT', 0x10], ['PUBLISH', 0x30]] as const) {
      const socket = connect(Number(port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const closed = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 3000);
        socket.once('close', () => (clearTimeout(timer), resolve(true)));
      });
      socket.on('error', () => undefined);
      // 60 MB announced, a few bytes sent.
      socket.write(Buffer.concat([fixedHeader(typeByte, 60_000_000), Buffer.alloc(16)]));
      assert.equal(await closed, true, `a ${what} of 60 MB announced: closed`);
      socket.destroy();
    }
    const config = loadConfig({});
    const shipped = /^max_packet_size\s+(\d+)/m.exec(readFileSync('deploy/mosquitto/mosquitto.conf', 'utf8'))?.[1];
    assert.equal(Number(shipped), config.mqttMaxPacketBytes, "the shipped max_packet_size is the embedded broker's default limit");
  });

  test('a broker that does not answer: 503 after the time-out; a late gateway account is removed, a late password change is mended by rotating again', async () => {
    const account = await createAccount(service);
    const kept = await createGateway(service, account.rootLocationId);
    const gatewayIds = async () => new Set((await database.db.query<{ id: number }>('SELECT id FROM gateways')).map((row) => Number(row.id)));
    broker.process().kill('SIGSTOP');
    try {
      const created = await service.admin<ErrorBody>('POST', '/admin/v1/gateways', { location_id: account.rootLocationId, name: 'gw' });
      assert.equal(created.status, 503);
      assert.equal(created.body.error.code, 'broker_unavailable');
      const rotated = await service.admin<ErrorBody>('POST', `/admin/v1/gateways/${kept.id}/rotate_password`);
      assert.equal(rotated.status, 503);
      assert.match(rotated.body.error.message, /rotated again/);
    } finally {
      broker.process().kill('SIGCONT');
    }
    // The broker now carries out what it was sent, in order: the new account, then its removal.
    const known = await gatewayIds();
    await waitFor(async () => [...(await control.provisionedGatewayIds())].every((id) => known.has(id)), 'no broker account without its gateway');
    // The late password change locked the gateway out, as the answer warned; a rotation mends it.
    await waitFor(async () => (await connectGateway(kept).then((c) => c.endAsync().then(() => false), () => true)), 'the late change applied');
    const again = await service.admin<GatewayCredentials>('POST', `/admin/v1/gateways/${kept.id}/rotate_password`);
    assert.equal(again.status, 200);
    assert.ok((await connectGateway(again.body)).connected);
  });

  // Last: it stops the broker.
  test('while the broker is away, creating answers 503 broker_unavailable and creates nothing; rotating and deleting change nothing', async () => {
    const account = await createAccount(service);
    const kept = await createGateway(service, account.rootLocationId);
    const count = async () => Number((await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM gateways'))[0]?.n);
    const before = await count();
    await broker.stop();

    const created = await service.admin<ErrorBody>('POST', '/admin/v1/gateways', { location_id: account.rootLocationId, name: 'gw' });
    assert.equal(created.status, 503);
    assert.equal(created.body.error.code, 'broker_unavailable');
    assert.equal(await count(), before, 'nothing created');

    const rotated = await service.admin<ErrorBody>('POST', `/admin/v1/gateways/${kept.id}/rotate_password`);
    assert.equal(rotated.status, 503);
    const [row] = await database.db.query<{ password_hash: string }>('SELECT password_hash FROM gateways WHERE id = $1', [kept.id]);
    assert.equal(row?.password_hash, hashToken(kept.mqtt.password), 'the old password stays good');

    const deleted = await service.admin<ErrorBody>('DELETE', `/admin/v1/gateways/${kept.id}`);
    assert.equal(deleted.status, 503);
    assert.equal((await service.admin('GET', `/admin/v1/gateways/${kept.id}`)).status, 200);
  });

});
