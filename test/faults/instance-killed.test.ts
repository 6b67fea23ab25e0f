// An instance dies (kill -9) among three on one PostgreSQL and one Mosquitto (README: Faults): what the
// broker acknowledged to a gateway reaches the store through the instances still alive, within seconds,
// whether the dead one comes back or not. Its persistent session (the default hour) must hold nothing
// the others need.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import mqtt from 'mqtt';
import pg from 'pg';
import { backend } from '../helpers/database.ts';
import { waitFor } from '../helpers/gateways.ts';
import { mosquittoAvailable, startMosquitto } from '../helpers/mosquitto.ts';
import { processStorage, startServiceProcess, type ServiceProcess } from '../helpers/process.ts';

const ADMIN = 'instance-killed-admin-token-0123';
const skip = !mosquittoAvailable() ? 'mosquitto is not installed' : backend !== 'postgres' ? 'needs PostgreSQL (instances share one database)' : false;

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

test('after kill -9 of one of three instances, 30 door events, 10 command results and a presence change are all stored within 5 s, and again while it stays dead', { skip, timeout: 120_000 }, async (t) => {
  const broker = await startMosquitto();
  cleanups.push(() => broker.stop());
  const storage = await processStorage('instancekilled');
  cleanups.push(storage.cleanup);
  const env = {
    ...storage.env,
    ADMIN_TOKEN: ADMIN,
    MQTT_URL: broker.url,
    // The default: a killed instance's session outlives it by an hour.
    MQTT_SESSION_EXPIRY_SECONDS: '3600',
    UNLOCK_TIMEOUT_SECONDS: '120',
    LOG_LEVEL: 'error',
  };
  const instances: ServiceProcess[] = [];
  for (let i = 0; i < 3; i++) {
    // One after the other: the first applies the migrations.
    const instance = await startServiceProcess({ ...env, MQTT_CLIENT_ID: `latchkey-killed-${i}-${process.pid}` });
    instances.push(instance);
    cleanups.push(async () => {
      instance.child.kill('SIGKILL');
      await instance.exited;
    });
  }
  const [survivor, other, victim] = instances as [ServiceProcess, ServiceProcess, ServiceProcess];
  const db = new pg.Client({ connectionString: storage.env.DATABASE_URL });
  await db.connect();
  cleanups.push(() => db.end());

  const call = async <T>(method: string, path: string, token: string, body?: unknown, via = survivor): Promise<{ status: number; body: T }> => {
    const res = await fetch(via.url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  const account = await call<{ root_location: { id: number } }>('POST', '/admin/v1/accounts', ADMIN, { name: 'Killed' });
  const locationId = account.body.root_location.id;
  const gateway = (await call<{ id: number; mqtt: { client_id: string } }>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'g' })).body;
  // Ten locks: one command in flight per lock.
  const locks: number[] = [];
  for (let i = 0; i < 10; i++) locks.push((await call<{ id: number }>('POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name: `Door ${i}`, gateway_id: gateway.id })).body.id);
  const token = (await call<{ token: string }>('POST', '/admin/v1/api_keys', ADMIN, { location_id: locationId, name: 'k', scopes: ['catalog:read', 'locks:control'], lock_allowlist: locks })).body.token;

  const base = `latchkey/v1/gateways/${gateway.id}`;
  const device = await mqtt.connectAsync(broker.url, { clientId: gateway.mqtt.client_id, reconnectPeriod: 0 });
  cleanups.push(() => device.endAsync(true));
  const commands: string[] = [];
  device.on('message', (_topic, payload) => commands.push((JSON.parse(payload.toString()) as { id: string }).id));
  await device.subscribeAsync(`${base}/commands`, { qos: 1 });
  const online = async () => (await db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gateway.id])).rows[0]?.online;
  await device.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1, retain: true });
  await waitFor(async () => (await online()) === true, 'the gateway online');
  const stored = async () => Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM access_events WHERE gateway_id = $1', [gateway.id])).rows[0]?.n);
  const confirmed = async (ids: string[]) =>
    Number((await db.query<{ n: string }>("SELECT count(*) AS n FROM lock_commands WHERE id = ANY($1::uuid[]) AND status = 'confirmed'", [ids])).rows[0]?.n);

  /** 30 door events and the results of 10 unlocks, each acknowledged by the broker, all stored within 5 s. */
  const round = async (name: string, presence: boolean) => {
    const before = commands.length;
    const unlocked: string[] = [];
    for (const lock of locks) {
      // Through the live instances only.
      const answer = await call<{ id: string }>('POST', `/v1/locks/${lock}/unlock`, token, undefined, unlocked.length % 2 === 0 ? survivor : other);
      assert.equal(answer.status, 202, JSON.stringify(answer.body));
      unlocked.push(answer.body.id);
    }
    await waitFor(() => commands.length >= before + 10, `${name}: the 10 commands at the gateway`);
    const storedBefore = await stored();
    for (let i = 0; i < 30; i++) {
      const event = { id: `${name}-${i}`, lock_id: locks[i % 10], type: 'access.denied', occurred_at: new Date().toISOString(), key_id: null, reason: 'unknown_key' };
      await device.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
    }
    for (const id of unlocked) await device.publishAsync(`${base}/commands/result`, JSON.stringify({ id, ok: true }), { qos: 1 });
    if (presence) await device.publishAsync(`${base}/presence`, '{"online":false}', { qos: 1, retain: true });
    // Each of these went to the broker and was acknowledged by it; the live instances have 5 s.
    let seen = '';
    const published = Date.now();
    try {
      await waitFor(async () => {
        const [events, results] = [(await stored()) - storedBefore, await confirmed(unlocked)];
        seen = `${events} of 30 events, ${results} of 10 results`;
        return events === 30 && results === 10;
      }, `${name}: every event and result stored`, 5000);
    } catch {
      assert.fail(`${name}: within 5 s only ${seen} were stored`);
    }
    t.diagnostic(`${name}: all stored ${Date.now() - published} ms after the last publish`);
    if (presence) await waitFor(async () => (await online()) === false, `${name}: the gateway offline`, 5000);
  };

  victim.child.kill('SIGKILL');
  await victim.exited;
  await round('just-killed', false);
  // It never comes back: still nothing waits for it.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await round('still-dead', true);
  await device.publishAsync(`${base}/presence`, '', { qos: 1, retain: true });
});
