// PostgreSQL restarts under a running service (README: Faults), on a cluster of the test's own (the
// machine's server on 5432 is left alone): requests during the outage answer 503 not_available in the
// envelope with Retry-After, within seconds, and nothing of them is stored under an Idempotency-Key; a door
// event published meanwhile waits and is stored (and acknowledged) once the database is back; the service
// serves again by itself, its webhook deliveries resume, what was acknowledged before is still there, and
// its caches hear of changes again. A hung server (nothing answers) gives the same 503 within
// DATABASE_TIMEOUT_SECONDS. With the embedded database (PGlite, in process) there is nothing to go away.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import pg from 'pg';
import { waitFor, within } from '../helpers/gateways.ts';
import { backend } from '../helpers/database.ts';
import { startServiceProcess, type ServiceProcess } from '../helpers/process.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { clusterUnavailable, startCluster, type TestCluster } from './postgres-cluster.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ADMIN = 'postgres-outage-admin-token-0123';

interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
  ms: number;
}

// Independent of the test backend (a cluster of its own): it runs once, in the embedded pass.
const skip = clusterUnavailable() || (backend === 'postgres' ? 'independent of the test backend (a cluster of its own): runs in the embedded pass' : false);

let cluster: TestCluster | null = null;
let service: ServiceProcess | null = null;
let receiver: Receiver | null = null;
let gateway: MqttClient | null = null;
after(async () => {
  await gateway?.endAsync(true).catch(() => undefined);
  if (service) {
    service.child.kill('SIGKILL');
    await service.exited;
  }
  await receiver?.close();
  await cluster?.destroy();
});

test('PostgreSQL restarts under traffic: 503 in the envelope at once, door events and webhooks wait, the service recovers by itself', { skip, timeout: 90_000 }, async () => {
  cluster = await startCluster();
  const db = cluster;
  receiver = await startReceiver();
  const hooks = receiver;
  service = await startServiceProcess({
    DATABASE_URL: cluster.url,
    ADMIN_TOKEN: ADMIN,
    WEBHOOK_ALLOW_HOSTS: 'localhost',
    DATABASE_TIMEOUT_SECONDS: '2',
    LOG_LEVEL: 'warn',
  });
  const base = service.url;
  const call = async <T = Record<string, unknown>>(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> => {
    const started = Date.now();
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as T, ms: Date.now() - started };
  };
  const sql = async (text: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      return (await client.query(text, params)).rows as Array<Record<string, unknown>>;
    } finally {
      await client.end();
    }
  };

  const account = await call<{ root_location: { id: number } }>('POST', '/admin/v1/accounts', ADMIN, { name: 'Outage' });
  const locationId = account.body.root_location.id;
  const gw = await call<{ id: number; mqtt: { url: string; client_id: string; username: string; password: string } }>('POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: 'gw' });
  const lock = await call<{ id: number }>('POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name: 'Front door', gateway_id: gw.body.id });
  const key = await call<{ token: string }>('POST', '/admin/v1/api_keys', ADMIN, {
    location_id: locationId,
    name: 'k',
    scopes: ['catalog:read', 'events:read', 'people:write', 'webhooks:manage'],
  });
  const token = key.body.token;
  assert.equal((await call('POST', '/v1/webhooks', token, { url: hooks.url('/outage'), events: ['access.denied'] })).status, 201);

  gateway = await mqtt.connectAsync(gw.body.mqtt.url.replace('localhost', '127.0.0.1'), {
    clientId: gw.body.mqtt.client_id,
    username: gw.body.mqtt.username,
    password: gw.body.mqtt.password,
    reconnectPeriod: 200,
  });
  const topic = (kind: string) => `latchkey/v1/gateways/${gw.body.id}/${kind}`;
  const doorEvent = (id: string) =>
    gateway?.publishAsync(topic('events'), JSON.stringify({ id, lock_id: lock.body.id, type: 'access.denied', occurred_at: new Date().toISOString(), key_id: null, reason: 'unknown_key' }), { qos: 1 });
  await gateway.publishAsync(topic('presence'), JSON.stringify({ online: true }), { qos: 1, retain: true });
  await waitFor(async () => (await call<{ online: boolean }>('GET', `/v1/locks/${lock.body.id}`, token)).body.online, 'the lock online');

  // Acknowledged before the outage: a person and a door event (stored: the embedded broker acknowledges after the commit).
  assert.equal((await call('POST', '/v1/people', token, { name: 'Before Outage' })).status, 201);
  await doorEvent('before');
  await waitFor(() => hooks.received.length === 1, 'the webhook of the first door event');

  // The database goes away, as in a crash.
  await db.stop('immediate');
  const forged = `${token.slice(0, -4)}${token.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`; // well-formed, unknown: must be looked up
  const during = [
    await call<ErrorBody>('GET', '/v1/locks', token),
    await call<ErrorBody>('GET', '/v1/events', token),
    await call<ErrorBody>('GET', '/v1/locks', forged),
    await call<ErrorBody>('POST', '/v1/people', token, { name: 'During Outage' }, { 'idempotency-key': 'outage-1' }),
  ];
  for (const answer of during) {
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, 'not_available');
    assert.match(answer.body.error.message, /database/);
    assert.deepEqual(Object.keys(answer.body), ['error']);
    assert.equal(answer.headers.get('retry-after'), '5');
    assert.ok(answer.ms < 5000, `answered within seconds (${answer.ms} ms)`);
  }
  const meanwhile = doorEvent('during');
  let acknowledged = false;
  void meanwhile?.then(() => (acknowledged = true));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(acknowledged, false, 'not acknowledged while it cannot be stored');

  await db.start();
  // Back by itself: no restart of the service.
  await waitFor(async () => (await call('GET', '/v1/locks', token)).status === 200, 'the service answers 200 again', 20_000);
  await within(meanwhile as Promise<unknown>, 20_000, 'the door event published during the outage acknowledged');
  const events = await call<{ data: Array<{ type: string }> }>('GET', '/v1/events', token);
  assert.equal(events.body.data.filter((e) => e.type === 'access.denied').length, 2, 'both door events stored');
  await waitFor(() => hooks.received.length === 2, 'the webhook of the door event published during the outage', 20_000);

  // The 503 was not stored under its Idempotency-Key: the retry runs. What was acknowledged before is there.
  const retried = await call('POST', '/v1/people', token, { name: 'During Outage' }, { 'idempotency-key': 'outage-1' });
  assert.equal(retried.status, 201);
  assert.equal(retried.headers.get('idempotent-replayed'), null);
  const names = (await sql('SELECT name FROM people ORDER BY id')).map((r) => r.name);
  assert.deepEqual(names, ['Before Outage', 'During Outage']);

  // Caches hear of changes again (here a change as another instance would make it: the row and its NOTIFY).
  await sql(`UPDATE locks SET name = 'Renamed' WHERE id = $1`, [lock.body.id]);
  await sql(`SELECT pg_notify('latchkey_public_catalog_changed', '')`);
  await waitFor(async () => (await call<{ name: string }>('GET', `/v1/locks/${lock.body.id}`, token)).body.name === 'Renamed', 'the cached lock dropped', 10_000);

  // A hung server (connections open, nothing answers): 503 within DATABASE_TIMEOUT_SECONDS, then 200 again. Asked
  // for a page not answered before: one it has answered may still come from memory (README: 503 during an outage).
  db.freeze();
  try {
    const hung = await call<ErrorBody>('GET', '/v1/events?limit=7', token);
    assert.equal(hung.status, 503);
    assert.equal(hung.body.error.code, 'not_available');
    assert.ok(hung.ms < 5000, `answered within seconds (${hung.ms} ms)`);
  } finally {
    db.thaw();
  }
  await waitFor(async () => (await call('GET', '/v1/events?limit=7', token)).status === 200, 'the service answers 200 again after the hang', 20_000);
});
