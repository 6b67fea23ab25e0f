// The external broker restarts (README: Faults), here a Mosquitto of the test's own without persistence,
// so that it forgets every session, subscription and retained message: an unlock while it is down answers
// 502 publish_failed in the envelope; the service links again by itself and subscribes again; gateways
// reconnect and say they are online, and presence follows; a door event published after the restart is
// stored, unlocks work again, and a command published before the restart and never answered ends
// timed_out rather than staying `published`.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, describe, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { waitFor } from '../helpers/gateways.ts';
import { mosquittoAvailable, startMosquitto, type TestBroker } from '../helpers/mosquitto.ts';
import { processStorage, startServiceProcess, type ServiceProcess } from '../helpers/process.ts';

const ADMIN = 'broker-restart-admin-token-0123';
const UNLOCK_TIMEOUT_SECONDS = 4;

interface Answer<T> {
  status: number;
  body: T;
  ms: number;
}

type Command = { id: string; status: string; error: { code: string } | null };

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/**
 * A gateway as the contract describes it: a will `{"online": false}`, `{"online": true}` on every
 * connection, subscribed to its commands; it answers each unlock unless told not to.
 */
async function connectGateway(
  brokerUrl: string,
  gateway: { id: number; mqtt: { client_id: string; username: string; password: string } },
): Promise<{ client: MqttClient; answering: { on: boolean }; publish: (kind: string, payload: unknown, retain?: boolean) => Promise<unknown> }> {
  const presence = `latchkey/v1/gateways/${gateway.id}/presence`;
  const client = mqtt.connect(brokerUrl, {
    clientId: gateway.mqtt.client_id,
    username: gateway.mqtt.username,
    password: gateway.mqtt.password,
    reconnectPeriod: 250,
    connectTimeout: 2000,
    will: { topic: presence, payload: Buffer.from(JSON.stringify({ online: false })), qos: 1, retain: true },
  });
  client.on('error', () => undefined);
  client.on('connect', () => void client.publishAsync(presence, JSON.stringify({ online: true }), { qos: 1, retain: true }).catch(() => undefined));
  const answering = { on: true };
  client.on('message', (_topic, payload) => {
    if (!answering.on) return;
    const command = JSON.parse(payload.toString()) as { id: string };
    void client.publishAsync(`latchkey/v1/gateways/${gateway.id}/commands/result`, JSON.stringify({ id: command.id, ok: true }), { qos: 1 }).catch(() => undefined);
  });
  await new Promise((resolve) => client.once('connect', resolve));
  await client.subscribeAsync(`latchkey/v1/gateways/${gateway.id}/commands`, { qos: 1 });
  cleanups.push(() => client.endAsync(true));
  const publish = (kind: string, payload: unknown, retain = false) =>
    client.publishAsync(`latchkey/v1/gateways/${gateway.id}/${kind}`, JSON.stringify(payload), { qos: 1, retain });
  return { client, answering, publish };
}

// Each test has a Mosquitto, a data store and service processes of its own, and mostly waits (reconnections,
// timeouts): they run side by side, which the file's place after the pool (scripts/test.mjs, SERIAL) leaves room for.
describe('the broker restarts', { concurrency: true }, () => {
  test('the external broker restarts: 502 while it is down, then the service links again, presence follows, events and unlocks flow, nothing stays published', { skip: mosquittoAvailable() ? false : 'mosquitto is not installed', timeout: 90_000 }, async () => {
    const broker: TestBroker = await startMosquitto();
    cleanups.push(() => broker.stop());
    const storage = await processStorage('brokerrestart');
    cleanups.push(storage.cleanup);
    const service: ServiceProcess = await startServiceProcess({
      ...storage.env,
      ADMIN_TOKEN: ADMIN,
      MQTT_URL: broker.url,
      // A persistent session, as in production (the broker here forgets it anyway when it restarts).
      MQTT_SESSION_EXPIRY_SECONDS: '600',
      UNLOCK_TIMEOUT_SECONDS: String(UNLOCK_TIMEOUT_SECONDS),
      LOG_LEVEL: 'error',
    });
    cleanups.push(async () => {
      service.child.kill('SIGKILL');
      await service.exited;
    });
    const call = async <T = Record<string, unknown>>(method: string, path: string, token: string, body?: unknown): Promise<Answer<T>> => {
      const started = Date.now();
      const res = await fetch(service.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as T, ms: Date.now() - started };
    };

    const account = await call<{ root_location: { id: number } }>('POST', '/admin/v1/accounts', ADMIN, { name: 'Broker restart' });
    const locationId = account.body.root_location.id;
    type Gateway = { id: number; mqtt: { client_id: string; username: string; password: string } };
    const g1 = (await call<Gateway>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'g1' })).body;
    const g2 = (await call<Gateway>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'g2' })).body;
    const lock = async (name: string, gatewayId: number) => (await call<{ id: number }>('POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name, gateway_id: gatewayId })).body.id;
    const front = await lock('Front', g1.id);
    const back = await lock('Back', g1.id);
    const side = await lock('Side', g2.id);
    const key = await call<{ token: string }>('POST', '/admin/v1/api_keys', ADMIN, {
      location_id: locationId,
      name: 'k',
      scopes: ['catalog:read', 'events:read', 'locks:control'],
      lock_allowlist: [front, back, side],
    });
    const token = key.body.token;
    const online = async (lockId: number) => (await call<{ online: boolean }>('GET', `/v1/locks/${lockId}`, token)).body.online;
    const command = async (lockId: number, id: string) => (await call<Command>('GET', `/v1/locks/${lockId}/commands/${id}`, token)).body;
    const unlock = (lockId: number) => call<Command & { error?: { code: string } }>('POST', `/v1/locks/${lockId}/unlock`, token);
    const first = await connectGateway(broker.url, g1);
    const second = await connectGateway(broker.url, g2);
    await waitFor(async () => (await online(front)) && (await online(side)), 'both gateways online');
    /** A door event published now is stored, and an unlock is confirmed. */
    const doorEvents = async () => (await call<{ data: unknown[] }>('GET', '/v1/events?limit=200', token)).body.data.length;
    const flows = async (eventId: string) => {
      const before = await doorEvents();
      await first.publish('events', { id: eventId, lock_id: front, type: 'access.denied', occurred_at: new Date().toISOString(), key_id: null, reason: 'unknown_key' });
      await waitFor(async () => (await doorEvents()) === before + 1, `the door event ${eventId} stored`);
      const opened = await unlock(front);
      assert.equal(opened.status, 202, JSON.stringify(opened.body));
      await waitFor(async () => (await command(front, opened.body.id)).status === 'confirmed', `an unlock ${eventId} confirmed`);
    };

    // Before: an unlock is confirmed; another one is left unanswered.
    const confirmed = await unlock(front);
    assert.equal(confirmed.status, 202);
    await waitFor(async () => (await command(front, confirmed.body.id)).status === 'confirmed', 'the first unlock confirmed');
    first.answering.on = false;
    const unanswered = await unlock(back);
    assert.equal(unanswered.status, 202);
    assert.equal(unanswered.body.status, 'published');
    // The second gateway says it goes offline (as its will would), so that only its return can bring it back.
    await second.publish('presence', { online: false }, true);
    await waitFor(async () => !(await online(side)), 'the second gateway offline');

    // The broker crashes: no will reaches the service, the gateways still read online.
    const crashed = broker.process();
    crashed.kill('SIGKILL');
    await new Promise((resolve) => crashed.once('exit', resolve));
    const refused = await unlock(front);
    assert.equal(refused.status, 502, JSON.stringify(refused.body));
    assert.deepEqual(refused.body, { error: { code: 'publish_failed', message: 'The command could not be handed to the device.' } });
    assert.ok(refused.ms < 6000, `${refused.ms} ms`);

    await broker.start();
    first.answering.on = true;
    // Nobody restarts the service or the gateways: they all dial again. The second gateway's "online" can
    // reach the service only once the service has linked and subscribed again.
    await waitFor(async () => await online(side), 'the second gateway online again', 20_000);
    assert.equal(await online(front), true);
    await flows('after-crash');

    // The command published before the crash was never answered: it ends, it does not stay published.
    await waitFor(async () => (await command(back, unanswered.body.id)).status === 'timed_out', 'the unanswered command timed out', (UNLOCK_TIMEOUT_SECONDS + 5) * 1000);
    assert.equal((await command(back, unanswered.body.id)).error?.code, 'timed_out');

    // A graceful restart: Mosquitto may hand the gateways' wills to the service as it stops, so an unlock
    // meanwhile answers 409 lock_offline, or 502 publish_failed; either way in the envelope, and at once.
    await broker.pause();
    const meanwhile = await unlock(front);
    assert.ok(
      (meanwhile.status === 409 && meanwhile.body.error?.code === 'lock_offline') || (meanwhile.status === 502 && meanwhile.body.error?.code === 'publish_failed'),
      JSON.stringify(meanwhile),
    );
    assert.ok(meanwhile.ms < 6000, `${meanwhile.ms} ms`);
    await broker.start();
    await waitFor(async () => (await online(front)) && (await online(side)), 'both gateways online after the graceful restart', 20_000);
    await flows('after-graceful-restart');
  });

  test('a command the broker did not acknowledge in time (502) is never sent later, not even after the service reconnects', { skip: mosquittoAvailable() ? false : 'mosquitto is not installed', timeout: 90_000 }, async () => {
    const broker: TestBroker = await startMosquitto();
    cleanups.push(() => broker.stop());
    const storage = await processStorage('brokerstall');
    cleanups.push(storage.cleanup);
    const service: ServiceProcess = await startServiceProcess({ ...storage.env, ADMIN_TOKEN: ADMIN, MQTT_URL: broker.url, LOG_LEVEL: 'error' });
    cleanups.push(async () => {
      service.child.kill('SIGKILL');
      await service.exited;
    });
    const call = async <T>(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: T }> => {
      const res = await fetch(service.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as T };
    };
    const account = await call<{ root_location: { id: number } }>('POST', '/admin/v1/accounts', ADMIN, { name: 'Stall' });
    const locationId = account.body.root_location.id;
    const gateway = (await call<{ id: number; mqtt: { client_id: string; username: string; password: string } }>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'g' })).body;
    const lock = (await call<{ id: number }>('POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name: 'Door', gateway_id: gateway.id })).body.id;
    const token = (await call<{ token: string }>('POST', '/admin/v1/api_keys', ADMIN, { location_id: locationId, name: 'k', scopes: ['catalog:read', 'locks:control'], lock_allowlist: [lock] })).body.token;
    const device = await connectGateway(broker.url, gateway);
    const received: string[] = [];
    device.client.on('message', (_topic, payload) => received.push((JSON.parse(payload.toString()) as { id: string }).id));
    await waitFor(async () => (await call<{ online: boolean }>('GET', `/v1/locks/${lock}`, token)).body.online, 'online');

    // The broker stalls with the connections open: the command waits in a socket it never reads.
    const stalled = broker.process();
    stalled.kill('SIGSTOP');
    const refused = await call<{ error: { code: string } }>('POST', `/v1/locks/${lock}/unlock`, token);
    assert.equal(refused.status, 502);
    assert.equal(refused.body.error.code, 'publish_failed');
    // It dies with that socket's contents, and comes back empty; gateway and service reconnect by themselves.
    stalled.kill('SIGKILL');
    await new Promise((resolve) => stalled.once('exit', resolve));
    await broker.start();
    // Once a second (the spec allows 10 unlocks a minute per lock) until the service has linked again.
    let opened = 0;
    for (let i = 0; i < 8 && opened !== 202; i++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      opened = (await call('POST', `/v1/locks/${lock}/unlock`, token)).status;
    }
    assert.equal(opened, 202, 'an unlock through the restarted broker');
    await waitFor(() => received.length >= 1, 'the new command at the gateway');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(received.length, 1, `only the new command reached the gateway (got ${received.length})`);
  });

  test('the broker restarts gracefully mid-traffic, keeping its sessions: every door event it acknowledged is stored', { skip: mosquittoAvailable() ? false : 'mosquitto is not installed', timeout: 120_000 }, async () => {
    // Persistence as shipped: the service's session comes back "present" after the restart.
    const broker: TestBroker = await startMosquitto({ persistence: true });
    cleanups.push(() => broker.stop());
    const storage = await processStorage('brokermidtraffic');
    cleanups.push(storage.cleanup);
    const service: ServiceProcess = await startServiceProcess({ ...storage.env, ADMIN_TOKEN: ADMIN, MQTT_URL: broker.url, MQTT_SESSION_EXPIRY_SECONDS: '600', LOG_LEVEL: 'error' });
    cleanups.push(async () => {
      service.child.kill('SIGKILL');
      await service.exited;
    });
    const call = async <T>(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: T }> => {
      const res = await fetch(service.url + path, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as T };
    };
    const account = await call<{ root_location: { id: number } }>('POST', '/admin/v1/accounts', ADMIN, { name: 'Mid-traffic' });
    const locationId = account.body.root_location.id;
    const gateway = (await call<{ id: number; mqtt: { client_id: string; username: string; password: string } }>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'g' })).body;
    const lock = (await call<{ id: number }>('POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name: 'Door', gateway_id: gateway.id })).body.id;
    const token = (await call<{ token: string }>('POST', '/admin/v1/api_keys', ADMIN, { location_id: locationId, name: 'k', scopes: ['events:read'] })).body.token;
    const device = await connectGateway(broker.url, gateway);
    const storedIds = async () => {
      const ids = new Set<string>();
      let cursor: string | null = null;
      do {
        const page: { status: number; body: { data: Array<{ id: string }>; next_cursor: string | null } } = await call('GET', `/v1/events?limit=200${cursor ? `&cursor=${cursor}` : ''}`, token);
        for (const event of page.body.data) ids.add(event.id);
        cursor = page.body.next_cursor;
      } while (cursor);
      return ids.size;
    };

    // The gateway sends an event every 20 ms; the ones the broker acknowledged are counted.
    const acknowledged: string[] = [];
    let sending = true;
    const traffic = (async () => {
      for (let i = 0; sending; i++) {
        const id = `evt-${i}`;
        void device
          .publish('events', { id, lock_id: lock, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null })
          .then(() => acknowledged.push(id), () => undefined);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await waitFor(() => acknowledged.length >= 50, 'traffic before the restart');
    await broker.pause();
    await broker.start();
    const afterRestart = acknowledged.length;
    await waitFor(() => acknowledged.length >= afterRestart + 100, 'traffic after the restart', 20_000);
    sending = false;
    await traffic;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sent = acknowledged.length;
    try {
      await waitFor(async () => (await storedIds()) >= sent, 'every acknowledged event stored', 10_000);
    } catch {
      assert.fail(`${sent} events acknowledged by the broker, ${await storedIds()} stored`);
    }
  });

  test('/readyz and latchkey_mqtt_subscriptions_missing say when the broker refuses the service its subscriptions, and both recover once it allows them', { skip: mosquittoAvailable() ? false : 'mosquitto is not installed', timeout: 120_000 }, async () => {
    const broker: TestBroker = await startMosquitto({ dynsec: true, persistence: true });
    cleanups.push(() => broker.stop());
    const admin = broker.admin as { username: string; password: string };
    const storage = await processStorage('brokersubs');
    cleanups.push(storage.cleanup);
    const serviceUrl = new URL(broker.url);
    serviceUrl.username = 'latchkey';
    serviceUrl.password = 'service-password-0123';
    const service: ServiceProcess = await startServiceProcess({
      ...storage.env,
      ADMIN_TOKEN: ADMIN,
      MQTT_URL: serviceUrl.toString(),
      MQTT_DYNSEC_USERNAME: admin.username,
      MQTT_DYNSEC_PASSWORD: admin.password,
      MQTT_SESSION_EXPIRY_SECONDS: '600',
      METRICS_PORT: '0',
      LOG_LEVEL: 'error',
    });
    cleanups.push(async () => {
      service.child.kill('SIGKILL');
      await service.exited;
    });
    const metricsUrl = /Prometheus metrics on (http:\/\/\S+?\/metrics)/.exec(service.output())?.[1];
    assert.ok(metricsUrl, 'the metrics listener');
    const ready = async () => {
      const res = await fetch(`${service.url}/readyz`);
      return { status: res.status, body: (await res.json()) as { checks: { mqtt: string } } };
    };
    const missing = async () => Number(/^latchkey_mqtt_subscriptions_missing (\d+)/m.exec(await (await fetch(metricsUrl)).text())?.[1]);
    assert.equal((await ready()).status, 200);
    assert.equal(await missing(), 0);

    // The control channel as an operator would use it: the service's role loses its subscribe rights, then
    // the broker restarts (its sessions kept).
    const ctrl = async (...args: string[]) => {
      const { port } = new URL(broker.url);
      await new Promise<void>((resolve, reject) =>
        execFile('mosquitto_ctrl', ['-h', '127.0.0.1', '-p', port, '-u', admin.username, '-P', admin.password, 'dynsec', ...args], (error) => (error ? reject(error) : resolve())),
      );
    };
    const subscribeAcls = ['presence', 'heartbeat', 'events', 'commands/result'].flatMap((kind) => [
      `latchkey/v1/gateways/+/${kind}`,
      `$share/latchkey/latchkey/v1/gateways/+/${kind}`,
    ]);
    for (const topic of subscribeAcls) await ctrl('removeRoleACL', 'latchkey-service', 'subscribePattern', topic);
    await broker.pause();
    await broker.start();
    // Linked again, but without its subscriptions: not ready, and saying why.
    await waitFor(async () => (await ready()).body.checks.mqtt === 'not_subscribed', '/readyz: mqtt not_subscribed', 20_000);
    assert.equal((await ready()).status, 503);
    assert.ok((await missing()) > 0, 'the metric counts the missing subscriptions');

    for (const topic of subscribeAcls) await ctrl('addRoleACL', 'latchkey-service', 'subscribePattern', topic, 'allow');
    await waitFor(async () => (await ready()).status === 200, '/readyz 200 again', 20_000);
    assert.equal(await missing(), 0);
  });
});
