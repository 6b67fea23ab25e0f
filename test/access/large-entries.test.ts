// A key whose list entry is larger than a packet (its windows repeat for every lock it opens on the gateway),
// behind Mosquitto with the shipped configuration (max_packet_size 65536): the entry reaches the reference
// gateway in pieces, the copy decides right at every door (inside a window and outside it), and a card
// returned afterwards leaves the copy. Before, the oversized message never arrived, Mosquitto dropped the
// service's connection for it, and every later change, the return included, stayed behind it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { after, before, test } from 'node:test';
import { simulateGateway } from '../../packages/cli/src/gateway-simulator.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { advanceClock, createAccount, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, waitFor } from '../helpers/gateways.ts';
import { mosquittoAvailable, startMosquitto, type TestBroker } from '../helpers/mosquitto.ts';
import { startService, type TestService } from '../helpers/service.ts';

let broker: TestBroker;
let database: TestDatabase;
let service: TestService;
before(async () => {
  broker = await startMosquitto();
  database = await createTestDatabase();
  service = await startService(database.db, { MQTT_URL: broker.url });
});
after(async () => {
  await service?.close();
  await database?.close();
  await broker?.stop();
});

const DOORS = 40;
const hhmm = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
/** 28 windows (a group's most), every day, 20 minutes from each 50th minute of the day: none merge. */
const ROSTER = Array.from({ length: 28 }, (_, i) => ({ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hhmm(i * 50), end: hhmm(i * 50 + 20) }));

async function serviceNow(): Promise<Date> {
  return new Date((await service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
}

test('an entry larger than a packet reaches the gateway in pieces: the copy decides right at every door, and a later return leaves it', { skip: mosquittoAvailable() ? false : 'no mosquitto binary' }, async () => {
  const root = (await createAccount(service)).rootLocationId;
  await createSecurityGroup(service, root, 'roster', { windows: ROSTER });
  await createSecurityGroup(service, root, 'plain');
  const gateway = await createGateway(service, root);
  const doors: number[] = [];
  for (let i = 0; i < DOORS; i++) doors.push(await createLock(service, root, { name: `Door ${i}`, gateway_id: gateway.id, security_groups: ['roster', 'plain'] }));
  const person = await service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Shift Worker', email: `shift-${randomUUID()}@example.com`, location_id: root });
  const card = async (name: string, group: string, credential: string) => {
    const made = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name, security_groups: [group], credential });
    assert.equal(made.status, 201, made.text);
    return made.body.id;
  };
  const plain = await card('plain card', 'plain', 'wiegand26:1:1');

  // The reference gateway, its clock on the service's sandbox clock.
  let offset = (await serviceNow()).getTime() - Date.now();
  const input = new PassThrough();
  const records: Array<Record<string, unknown>> = [];
  const done = simulateGateway({
    url: gateway.mqtt.url.replace('localhost', '127.0.0.1'),
    id: String(gateway.id),
    password: gateway.mqtt.password,
    prefix: gateway.mqtt.topic_prefix,
    answer: 'ok',
    error: 'device_error',
    locks: [],
    key: null,
    randomPerMinute: 0,
    input,
    log: (_line, record) => records.push(record),
    offline: false,
    now: () => new Date(Date.now() + offset),
  });
  after(async () => {
    input.write('quit\n');
    await done;
  });
  const applied = () => records.filter((r) => r.type === 'list_applied').length;
  const decisions = () => records.filter((r) => r.type === 'decision');
  const swipe = async (lockId: number, credential: string) => {
    const before = decisions().length;
    input.write(`swipe ${lockId} ${credential}\n`);
    await waitFor(() => decisions().length > before, `the decision at lock ${lockId}`);
    return decisions()[before] as { granted: boolean; reason: string | null; source: string };
  };
  await waitFor(() => applied() > 0, 'the whole list applied', 15_000);

  // Counted before the card is made: its change may be pushed and applied before the call returns.
  const appliedBefore = applied();
  const roster = await card('roster card', 'roster', 'wiegand26:2:2');
  await waitFor(() => applied() > appliedBefore, 'the roster card applied (a message in parts)', 15_000);

  // Five minutes into the next window that starts at least two minutes from now.
  const now = await serviceNow();
  const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
  const next = ROSTER.map((_, i) => i * 50).find((start) => start >= minute + 2) ?? 24 * 60;
  await advanceClock(service, (next - minute + 5) * 60 - now.getUTCSeconds());
  offset = (await serviceNow()).getTime() - Date.now();
  for (const door of [doors[0] as number, doors[DOORS - 1] as number]) {
    const inside = await swipe(door, 'wiegand26:2:2');
    assert.deepEqual([inside.granted, inside.source], [true, 'copy'], `door ${door} inside a window`);
  }
  // Twenty minutes on: past the window's end, before the next one.
  await advanceClock(service, 20 * 60);
  offset = (await serviceNow()).getTime() - Date.now();
  const outside = await swipe(doors[DOORS - 1] as number, 'wiegand26:2:2');
  assert.deepEqual([outside.granted, outside.reason, outside.source], [false, 'outside_time_window', 'copy']);

  // A change made after the large entry reaches the copy: the plain card, returned, opens nothing.
  assert.equal((await swipe(doors[0] as number, 'wiegand26:1:1')).granted, true);
  const beforeReturn = applied();
  assert.equal((await service.admin('POST', `/admin/v1/keys/${plain}/return`)).status, 200);
  await waitFor(() => applied() > beforeReturn, 'the return applied', 15_000);
  const returned = await swipe(doors[0] as number, 'wiegand26:1:1');
  assert.equal(returned.granted, false);
  assert.equal((await service.admin<{ access_list: { applied_version: number; version: number } }>('GET', `/admin/v1/gateways/${gateway.id}`)).body.access_list.applied_version > 0, true);
  assert.equal((broker.output().match(/oversize packet/g) ?? []).length, 0, 'no packet over the limit reached the broker');
  assert.ok(roster > 0);
});
