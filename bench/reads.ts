// The reads clients make most, authenticated, at 50 connections: one lock, and a page of 50 of locks,
// events, people and keys. The service runs in its own process (pinned to core 0 in pinned mode) and this
// process generates the load (on core 1).
import mqtt from 'mqtt';
import { gatewayTopicPrefix } from '../src/modules/devices/topics.ts';
import { admin, load, pin, PINNED, rssMiB, startBenchService, stop, type Measured } from './common.ts';

/** Rows of each list: more than a page, so every page is full. */
const ROWS = 60;

export interface Seeded {
  token: string;
  lockId: number;
  locks: number[];
  /** A card key per person, in the people's order. */
  cards: number[];
  people: string[];
  gateway: { id: number; mqtt: { url: string; client_id: string; username: string; password: string } };
}

/**
 * An account with ROWS locks on one gateway, ROWS people with a card each, and ROWS door events published
 * by the gateway over MQTT (so they are stored the way gateways store them, on either database).
 */
export async function seed(url: string): Promise<Seeded> {
  const account = await admin<{ root_location: { id: number } }>(url, 'POST', '/admin/v1/accounts', { name: 'Bench' });
  const location = account.root_location.id;
  await admin(url, 'POST', '/admin/v1/security_groups', { location_id: location, code: 'staff', title: 'Staff' });
  const gateway = await admin<{ id: number; mqtt: { url: string; client_id: string; username: string; password: string } }>(url, 'POST', '/admin/v1/gateways', {
    location_id: location,
    name: 'Bench gateway',
  });
  const locks: number[] = [];
  for (let i = 0; i < ROWS; i++) {
    const lock = await admin<{ id: number }>(url, 'POST', '/admin/v1/locks', {
      location_id: location,
      name: `Door ${i}`,
      place: 'Floor 1',
      security_groups: ['staff'],
      gateway_id: gateway.id,
    });
    locks.push(lock.id);
  }
  const cards: number[] = [];
  const people: string[] = [];
  for (let i = 0; i < ROWS; i++) {
    const person = await admin<{ id: string }>(url, 'POST', '/admin/v1/people', { name: `Person ${i}`, email: `person${i}@example.com`, location_id: location });
    people.push(person.id);
    cards.push((await admin<{ id: number }>(url, 'POST', '/admin/v1/keys', { person_id: person.id, type: 'card', name: `Badge ${i}` })).id);
  }
  const key = await admin<{ token: string }>(url, 'POST', '/admin/v1/api_keys', {
    location_id: location,
    name: 'bench',
    // The writes are for the live-site section (people and keys changing while clients read).
    scopes: ['catalog:read', 'events:read', 'people:read', 'keys:read', 'people:write', 'keys:write'],
  });
  const c = await mqtt.connectAsync(gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
    clientId: gateway.mqtt.client_id,
    username: gateway.mqtt.username,
    password: gateway.mqtt.password,
  });
  try {
    for (let i = 0; i < ROWS; i++) {
      const event = { id: `seed-${i}`, lock_id: locks[i], type: 'access.granted', occurred_at: new Date().toISOString(), key_id: cards[i], reason: null };
      await c.publishAsync(`${gatewayTopicPrefix(gateway.id)}events`, JSON.stringify(event), { qos: 1 });
    }
  } finally {
    await c.endAsync();
  }
  let stored = 0;
  for (let tries = 0; stored < ROWS && tries < 100; tries++) {
    const page = (await (await fetch(`${url}/v1/events?limit=200`, { headers: { authorization: `Bearer ${key.token}` } })).json()) as { data: unknown[] };
    stored = page.data.length;
    if (stored < ROWS) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (stored < ROWS) throw new Error(`only ${stored} of ${ROWS} seeded door events were stored`);
  return { token: key.token, lockId: locks[30] as number, locks, cards, people, gateway };
}

export interface ReadFigures {
  one: Measured;
  locks: Measured;
  events: Measured;
  people: Measured;
  keys: Measured;
  /** The single lock's body and a page of 50 locks', which the bare route serves. */
  body: string;
  pageBody: string;
  /** The service's resident memory after start and seeding, before any load, MiB. */
  idleRssMiB: number;
}

export async function serviceRuns(label: string, env: Record<string, string>): Promise<ReadFigures> {
  const server = await startBenchService(env);
  const pid = server.child.pid as number;
  try {
    const { token, lockId } = await seed(server.url);
    const read = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).text();
    const body = await read(`/v1/locks/${lockId}`);
    const pageBody = await read('/v1/locks?limit=50');
    if (PINNED) {
      pin(pid, 0);
      pin(process.pid, 1);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idleRssMiB = rssMiB(pid);
    const run = (name: string, path: string) => load(`${label}: ${name}`, `${server.url}${path}`, token, pid);
    return {
      one: await run('GET /v1/locks/{id}', `/v1/locks/${lockId}`),
      locks: await run('GET /v1/locks?limit=50', '/v1/locks?limit=50'),
      events: await run('GET /v1/events?limit=50', '/v1/events?limit=50'),
      people: await run('GET /v1/people?limit=50', '/v1/people?limit=50'),
      keys: await run('GET /v1/keys?limit=50', '/v1/keys?limit=50'),
      body,
      pageBody,
      idleRssMiB,
    };
  } finally {
    if (PINNED) pin(process.pid, '0-1');
    await stop(server);
  }
}
