// A service process with gateways, to be killed (SIGKILL) and restarted by the tests of "no acknowledged
// gateway message lost": through the embedded broker, or through a Mosquitto of the test's own.
import assert from 'node:assert/strict';
import { after } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import { openPglite } from '../../src/platform/db/pglite.ts';
import pg from 'pg';
import { backend, testDatabaseUrl } from './database.ts';
import { freePort, startMosquitto } from './mosquitto.ts';
import { processStorage, startServiceProcess, type ServiceProcess } from './process.ts';
import type { Page } from './types.ts';

export const ADMIN = 'gateway-crash-admin-token-0123';
export const GATEWAYS = 3;
export const EVENTS = 10_000;

export const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

export async function call<T>(base: string, method: string, pathname: string, token: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(base + pathname, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

export async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`timed out: ${what}`);
}

/** Counts rows once the service has stopped (the embedded database belongs to one process at a time). */
export async function countRows(env: Record<string, string>, sql: string): Promise<number> {
  if (backend === 'postgres') {
    const url = env.DATABASE_URL ?? testDatabaseUrl();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return Number((await client.query<{ n: string }>(sql)).rows[0]?.n);
    } finally {
      await client.end();
    }
  }
  const db = await openPglite({ dataDir: `${env.DATA_DIR}/pg` });
  try {
    return Number((await db.query<{ n: string }>(sql))[0]?.n);
  } finally {
    await db.close();
  }
}

/** Door events readable through GET /events, page by page. */
export async function countEvents(base: string, token: string): Promise<number> {
  let count = 0;
  let cursor: string | null = null;
  do {
    const page: { body: Page<unknown> } = await call(base, 'GET', `/v1/events?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, token);
    count += page.body.data.length;
    cursor = page.body.next_cursor;
  } while (cursor);
  return count;
}

export interface Setup {
  env: Record<string, string>;
  service: ServiceProcess;
  brokerUrl: string;
  gateways: Array<{ id: number; lock: number; mqtt: { client_id: string; username: string; password: string } }>;
  token: string;
  locationId: number;
}

export async function setUp(name: string, external: boolean): Promise<Setup> {
  const storage = await processStorage(name);
  cleanups.push(storage.cleanup);
  let brokerEnv: Record<string, string>;
  let brokerUrl: string;
  if (external) {
    const broker = await startMosquitto();
    cleanups.push(() => broker.stop());
    brokerUrl = broker.url;
    // A persistent session under one client id: what the killed process had not acknowledged waits there.
    brokerEnv = { MQTT_URL: broker.url, MQTT_CLIENT_ID: `latchkey-crash-${process.pid}`, MQTT_SESSION_EXPIRY_SECONDS: '600' };
  } else {
    // A fixed port, so that the gateways find the restarted service where they left it.
    const port = await freePort();
    brokerUrl = `mqtt://127.0.0.1:${port}`;
    brokerEnv = { MQTT_PORT: String(port) };
  }
  const env = { ...storage.env, ...brokerEnv, ADMIN_TOKEN: ADMIN, SANDBOX: 'true', LOG_LEVEL: 'error', API_RATE_LIMIT_PER_MINUTE: '1000000' };
  const service = await startServiceProcess(env);
  const account = await call<{ root_location: { id: number } }>(service.url, 'POST', '/admin/v1/accounts', ADMIN, { name: 'Crash' });
  const locationId = account.body.root_location.id;
  const gateways: Setup['gateways'] = [];
  for (let i = 0; i < GATEWAYS; i++) {
    const gateway = await call<{ id: number; mqtt: { client_id: string; username: string; password: string } }>(service.url, 'POST', '/admin/v1/gateways', ADMIN, { location_id: locationId, name: `gw${i}` });
    const lock = await call<{ id: number }>(service.url, 'POST', '/admin/v1/locks', ADMIN, { location_id: locationId, name: `Door ${i}`, gateway_id: gateway.body.id });
    gateways.push({ id: gateway.body.id, lock: lock.body.id, mqtt: gateway.body.mqtt });
  }
  const key = await call<{ token: string }>(service.url, 'POST', '/admin/v1/api_keys', ADMIN, { location_id: locationId, name: 'k', scopes: ['events:read'] });
  return { env, service, brokerUrl, gateways, token: key.body.token, locationId };
}

/** A gateway that reconnects on its own and resends what was not acknowledged (mqtt.js keeps it in its store). */
export async function connectGateway(brokerUrl: string, gateway: Setup['gateways'][number]): Promise<MqttClient> {
  const client = await mqtt.connectAsync(brokerUrl, {
    clientId: gateway.mqtt.client_id,
    username: gateway.mqtt.username,
    password: gateway.mqtt.password,
    reconnectPeriod: 100,
    connectTimeout: 2000,
  });
  // end() of a client already ended may never call back.
  cleanups.push(() => Promise.race([client.endAsync(true), new Promise((resolve) => setTimeout(resolve, 1000))]));
  return client;
}

