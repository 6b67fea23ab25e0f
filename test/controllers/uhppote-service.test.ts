// UHPPOTE controllers as a locking system (README "Real controllers"), end to end against simulated boards on
// localhost speaking the real UDP packets: cards appear and vanish as keys are issued, changed and revoked,
// swipes decided on the board reach the access log and webhooks once, remote unlock is open-door, a board that
// goes away keeps its writes queued and its events are fetched when it is back, and reconciliation repairs a
// card added by hand. Every rule that grants is tried where it must not.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { DateTime } from 'luxon';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor as waitUpTo } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { useTestService } from '../helpers/service.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';
import { encodeResponse, type ControllerEvent } from '../../src/modules/controllers/uhppote/codec.ts';
import dgram from 'node:dgram';

/** Background work (polls, queued writes, deliveries) on a loaded machine: a generous bound, not a timing claim. */
const waitFor = (check: () => boolean | Promise<boolean>, what: string) => waitUpTo(check, what, 15_000);

const ZONE = 'Europe/Berlin';
const CARD = 'wiegand26:100:58400';
const CARD_NUMBER = 10058400; // facility × 100000 + card, as the boards number Wiegand-26 cards

let receiver: Receiver;
const boards: SimulatedController[] = [];
let nextSerial = 423187000;
before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await receiver?.close();
  for (const board of boards) await board.close();
});

const ctx = useTestService(undefined, {
  CONTROLLER_LISTEN: '127.0.0.1:0',
  CONTROLLER_POLL_SECONDS: '1',
  CONTROLLER_TIMEOUT_MS: '150',
  WEBHOOK_ALLOW_HOSTS: 'localhost',
});

/** Runs the due jobs (the sandbox does not run them by itself): polls, queued writes, webhook deliveries. */
const runJobs = () => advanceClock(ctx.service, 0);

/** The key's queued write runs again until it has deleted the card from the board and the key is confirmed. */
async function cardDeletedByQueuedWrite(s: Site, keyId: number, simulated: SimulatedController): Promise<void> {
  await waitFor(async () => {
    await advanceClock(ctx.service, 60); // the queued write's next attempt
    const read = await ctx.service.request<{ state: string }>('GET', `/v1/keys/${keyId}`, { token: s.token });
    return read.body.state === 'handed_over' && !simulated.cards.has(CARD_NUMBER);
  }, "the key's card deleted and the key confirmed");
}

/** The board's first contact is recorded, and its first event after it (a swipe) reaches the access log alone. */
async function firstContactThenFirstEvent(simulated: SimulatedController, s: Site, controllerId: number): Promise<void> {
  await waitFor(async () => {
    await runJobs();
    return (await controllerView(controllerId)).clock_set_at !== null;
  }, 'first contact recorded');
  simulated.swipe(99999999, 1);
  await waitFor(async () => {
    await runJobs();
    return (await accessLog(s)).length === 1;
  }, "the board's first event after the contact");
}

/** Until the board has answered get-status `n` more times (each a poll, run by the jobs). */
async function polls(simulated: SimulatedController, n: number): Promise<void> {
  const target = (simulated.requests.get('get-status') ?? 0) + n;
  await waitFor(async () => {
    await runJobs();
    return (simulated.requests.get('get-status') ?? 0) >= target;
  }, `${n} polls`);
}

async function board(): Promise<SimulatedController> {
  const simulated = await startSimulatedController({ serial: nextSerial++ });
  boards.push(simulated);
  return simulated;
}

interface Site {
  accountId: number;
  root: number;
  front: number;
  lab: number;
  personId: string;
  token: string;
}

interface ControllerView {
  id: number;
  online: boolean;
  clock_set_at: string | null;
  listener_set_at: string | null;
  last_error: string | null;
  door_locks: Array<{ door: number; lock_id: number }>;
  reconciliation: null | { removed: Array<{ card: string; key_id: number | null; reason: string }>; added: unknown[]; profiles_rewritten: number[] };
}

/** An account on UHPPOTE boards in Berlin: Front (staff, any time) and Lab (lab, with windows), a person, a public key. */
async function site(labWindows: unknown = null): Promise<Site> {
  const account = await createAccount(ctx.service, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  const zone = await ctx.service.admin('PATCH', `/admin/v1/locations/${root}`, { time_zone: ZONE });
  assert.equal(zone.status, 200, zone.text);
  await createSecurityGroup(ctx.service, root, 'staff');
  await createSecurityGroup(ctx.service, root, 'lab', { windows: labWindows });
  const front = await createLock(ctx.service, root, { name: 'Front', security_groups: ['staff'] });
  const lab = await createLock(ctx.service, root, { name: 'Lab', security_groups: ['lab'] });
  const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada Lovelace', email: `ada-${randomUUID()}@example.com`, location_id: root });
  assert.equal(person.status, 201, person.text);
  const user = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops', email: `ops-${randomUUID()}@example.com` });
  const key = await createApiKey(ctx.service, root, ['events:read', 'keys:read', 'keys:write', 'catalog:read', 'locks:control', 'webhooks:manage'], {
    created_by_user_id: user.body.id,
    lock_allowlist: [front, lab],
  });
  return { accountId: account.id, root, front, lab, personId: person.body.id, token: key.token };
}

async function setUp(s: Site, simulated: SimulatedController, doorLocks = [{ door: 1, lock_id: s.front }, { door: 2, lock_id: s.lab }], extra: Record<string, unknown> = {}) {
  const res = await ctx.service.admin<ControllerView>('POST', '/admin/v1/controllers', {
    ...extra,
    location_id: s.root,
    name: 'Hall board',
    serial_number: simulated.serial,
    address: simulated.address.host,
    port: simulated.address.port,
    door_locks: doorLocks,
  });
  assert.equal(res.status, 201, res.text);
  // Its first poll happened before the answer; the presence it brought is written in the background. On a
  // loaded machine that poll may time out and the next one makes the first contact: until it is recorded
  // (clock_set_at, after the log's start is set), a board's events would predate the log's start.
  await waitFor(async () => {
    const view = await controllerView(res.body.id);
    return view.online && view.clock_set_at !== null;
  }, 'online and first contact recorded');
  return res.body;
}

async function handOver(s: Site, body: Record<string, unknown> = {}) {
  const res = await ctx.service.admin<{ id: number; state: string }>('POST', '/admin/v1/keys', {
    person_id: s.personId,
    type: 'card',
    name: 'Card',
    security_groups: ['staff'],
    credential: CARD,
    ...body,
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** A site whose board is set up and holds the card of one key handed over. */
async function cardOnBoard(): Promise<{ s: Site; simulated: SimulatedController }> {
  const s = await site();
  const simulated = await board();
  await setUp(s, simulated);
  await handOver(s);
  await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
  return { s, simulated };
}

interface EventRow {
  id: number;
  type: string;
  reason: string | null;
  lock: { id: number };
  person: { id: string } | null;
  key: { id: number } | null;
  occurred_at: string;
}

async function accessLog(s: Site): Promise<EventRow[]> {
  const res = await ctx.service.request<{ data: EventRow[] }>('GET', '/v1/events?limit=200', { token: s.token });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function controllerView(id: number): Promise<ControllerView> {
  return (await ctx.service.admin<ControllerView>('GET', `/admin/v1/controllers/${id}`)).body;
}

describe('set-up', () => {
  test('a controller is polled at once: online, its clock set to the wall time of its location, told where to send events', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    assert.ok(controller.clock_set_at);
    assert.ok(controller.listener_set_at);
    const berlin = DateTime.now().setZone(ZONE);
    const boardTime = DateTime.fromFormat(simulated.time(), 'yyyy-MM-dd HH:mm:ss', { zone: ZONE });
    assert.ok(Math.abs(boardTime.diff(berlin, 'seconds').seconds) < 5, `board at ${simulated.time()}, Berlin at ${berlin.toISO()}`);
    assert.equal(simulated.listener?.address, '127.0.0.1');
    // It is no MQTT gateway: the gateways of the operator API neither list nor take it.
    const gateways = await ctx.service.admin<{ data: Array<{ id: number }> }>('GET', `/admin/v1/gateways?account_id=${s.accountId}`);
    assert.equal(gateways.status, 200, gateways.text);
    assert.deepEqual(gateways.body.data, []);
    assert.equal((await ctx.service.admin('GET', `/admin/v1/gateways/${controller.id}`)).status, 404);
    assert.equal((await ctx.service.admin('POST', `/admin/v1/gateways/${controller.id}/rotate_password`)).status, 404);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/gateways/${controller.id}`)).status, 404);
    // The lock is a door of the controller: it is remote, and its gateway changes only through the controller.
    const moved = await ctx.service.admin('PATCH', `/admin/v1/locks/${s.front}`, { gateway_id: null });
    assert.equal(moved.status, 422, moved.text);
  });

  test('refuses an account that does not use UHPPOTE, a serial already set up, a door the board lacks and a lock of another account', async () => {
    const other = await createAccount(ctx.service);
    const simulated = await board();
    const plain = await ctx.service.admin('POST', '/admin/v1/controllers', {
      location_id: other.rootLocationId, name: 'x', serial_number: simulated.serial, address: '127.0.0.1', port: simulated.address.port,
    });
    assert.equal(plain.status, 422, plain.text);
    const s = await site();
    await setUp(s, simulated);
    const again = await ctx.service.admin('POST', '/admin/v1/controllers', { location_id: s.root, name: 'x', serial_number: simulated.serial, address: '127.0.0.1' });
    assert.equal(again.status, 422, again.text);
    const second = await board();
    const otherLock = await createLock(ctx.service, other.rootLocationId, { name: 'Elsewhere' });
    const bad = await ctx.service.admin<{ error: { details: Array<{ field: string }> } }>('POST', '/admin/v1/controllers', {
      location_id: s.root, name: 'x', serial_number: second.serial, address: '127.0.0.1', port: second.address.port, doors: 2,
      door_locks: [{ door: 4, lock_id: s.front }, { door: 1, lock_id: otherLock }],
    });
    assert.equal(bad.status, 422, bad.text);
    assert.deepEqual(bad.body.error.details.map((d) => d.field).sort(), ['door_locks[0].door', 'door_locks[0].lock_id', 'door_locks[1].lock_id']);
  });

  test('a board set up with transport tcp is spoken to over TCP only: polled, its cards written', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated, undefined, { transport: 'tcp' });
    await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card, over TCP');
    assert.deepEqual([...simulated.transports], ['tcp']);
  });

  test('an account with controllers cannot stop using UHPPOTE until they are deleted', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated, []);
    const refused = await ctx.service.admin('PATCH', `/admin/v1/accounts/${s.accountId}`, { locking_system: null });
    assert.equal(refused.status, 422, refused.text);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}`)).status, 204);
    const allowed = await ctx.service.admin('PATCH', `/admin/v1/accounts/${s.accountId}`, { locking_system: null });
    assert.equal(allowed.status, 200, allowed.text);
  });

  test('a window a board cannot hold exactly (the single minute 00:00) is refused on a UHPPOTE account', async () => {
    const s = await site();
    const res = await ctx.service.admin('POST', '/admin/v1/security_groups', {
      location_id: s.root, code: 'midnight', title: 'Midnight', windows: [{ days: ['mon'], start: '00:00', end: '00:01' }],
    });
    assert.equal(res.status, 422, res.text);
    assert.match(res.text, /00:00/);
  });
});

describe('keys become cards', () => {
  test('a card key is put on the board for the doors its groups open, and only those; revoking it deletes the card', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card on the board');
    const record = simulated.cards.get(CARD_NUMBER)!;
    assert.deepEqual(record.doors, [1, 0, 0, 0]); // Front at any time; Lab is not one of its groups
    assert.equal(record.to, '2099-12-31');

    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, true);
    assert.equal(simulated.swipe(CARD_NUMBER, 2).granted, false); // the lab: no access
    assert.equal(simulated.swipe(12345678, 1).granted, false); // nobody's card

    const revoked = await ctx.service.request('DELETE', `/v1/keys/${key.id}`, { token: s.token });
    assert.equal(revoked.status, 204, revoked.text);
    await waitFor(() => !simulated.cards.has(CARD_NUMBER), 'the card deleted from the board');
    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, false);
  });

  test('a key that starts later is not on the board before it starts; an expiring key is valid on the board through its last day only', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    await handOver(s, { starts_at: later });
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(simulated.cards.has(CARD_NUMBER), false);
    const other = await handOver(s, { credential: 'wiegand26:7:1', expires_at: '2031-03-01T00:00:00Z' });
    await waitFor(() => simulated.cards.has(700001), 'the expiring card');
    // 2031-03-01T00:00Z is 01:00 in Berlin: the card's last day on the board is 1 March.
    assert.equal(simulated.cards.get(700001)?.to, '2031-03-01');
    assert.ok(other.id);
  });

  test('a change is written to the board first: a full card list refuses it (409) and nothing changes; accepted, it is on the board', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.refuseWrites(true);
    const refused = await ctx.service.request<{ error: { code: string } }>('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['staff', 'lab'] } });
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, 'lockingsystem_rejected');
    const unchanged = await ctx.service.request<{ security_groups: string[]; state: string }>('GET', `/v1/keys/${key.id}`, { token: s.token });
    assert.deepEqual(unchanged.body.security_groups, ['staff']);
    assert.deepEqual(simulated.cards.get(CARD_NUMBER)?.doors, [1, 0, 0, 0]);

    simulated.refuseWrites(false);
    const changed = await ctx.service.request<{ security_groups: string[]; state: string }>('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['staff', 'lab'] } });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.state, 'handed_over'); // every board holds it already
    assert.deepEqual(simulated.cards.get(CARD_NUMBER)?.doors, [1, 1, 0, 0]);
  });

  test('group windows become time profiles: the board opens inside them and not outside, in the wall time of its location', async () => {
    const berlin = DateTime.now().setZone(ZONE);
    const hour = (h: number) => `${String(((h % 24) + 24) % 24).padStart(2, '0')}:00`;
    // Lab opens three hours from now until four hours from now, every day: not now.
    const s = await site([{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hour(berlin.hour + 3), end: hour(berlin.hour + 4) }]);
    const simulated = await board();
    await setUp(s, simulated);
    await handOver(s, { security_groups: ['staff', 'lab'] });
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    const labPermission = simulated.cards.get(CARD_NUMBER)!.doors[1];
    assert.ok(labPermission >= 2, `a profile on the lab door, got ${labPermission}`);
    const profile = simulated.profiles.get(labPermission)!;
    assert.deepEqual(profile.segments, [{ start: hour(berlin.hour + 3), end: `${hour(berlin.hour + 3).slice(0, 2)}:59` }]);
    assert.equal(simulated.swipe(CARD_NUMBER, 2).granted, false, 'outside the window');
    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, true, 'the front door at any time');

    // The window moved to cover now: the same profile chain is written anew and the lab opens.
    const groups = await ctx.service.admin<{ data: Array<{ id: number; code: string }> }>('GET', `/admin/v1/security_groups?account_id=${s.accountId}`);
    const lab = groups.body.data.find((g) => g.code === 'lab')!;
    const now = await ctx.service.admin('PATCH', `/admin/v1/security_groups/${lab.id}`, {
      windows: [{ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: hour(berlin.hour - 1), end: hour(berlin.hour + 2) }],
    });
    assert.equal(now.status, 200, now.text);
    await waitFor(() => simulated.swipe(CARD_NUMBER, 2).granted, 'the lab opening inside its new window');
  });
});

describe('credentials a board cannot hold', () => {
  test('a card that is not Wiegand-26 is refused at the field; a phone key works beside the boards without a card on them', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const uid = await ctx.service.admin<{ error: { details: Array<{ field: string; message: string }> } }>('POST', '/admin/v1/keys', {
      person_id: s.personId, type: 'card', name: 'MIFARE', security_groups: ['staff'], credential: 'uid:04a1b2c3',
    });
    assert.equal(uid.status, 422, uid.text);
    assert.equal(uid.body.error.details[0]?.field, 'credential');
    assert.match(uid.body.error.details[0]?.message ?? '', /Wiegand-26/);

    const phone = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: s.personId, type: 'digital', name: 'Phone', security_groups: ['staff'] });
    assert.equal(phone.status, 201, phone.text);
    const changed = await ctx.service.request<{ state: string }>('PATCH', `/v1/keys/${phone.body.id}`, { token: s.token, body: { security_groups: ['staff', 'lab'] } });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.state, 'handed_over');
    assert.equal(simulated.cards.size, 0);
  });
});

describe('events', () => {
  test('swipes decided on the board reach the access log once, with person, key and reason, and a webhook', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token: s.token, body: { url: receiver.url(`/uhppote-${s.accountId}`), events: ['access.granted', 'access.denied'] } });
    assert.equal(sub.status, 201, sub.text);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.swipe(CARD_NUMBER, 1);
    simulated.swipe(CARD_NUMBER, 2);
    simulated.swipe(99999999, 1);
    await waitFor(async () => (await accessLog(s)).length === 3, 'three entries');
    const [granted, denied, unknown] = await accessLog(s);
    assert.deepEqual([granted?.type, granted?.lock.id, granted?.person?.id, granted?.key?.id], ['access.granted', s.front, s.personId, key.id]);
    assert.deepEqual([denied?.type, denied?.reason, denied?.lock.id, denied?.key?.id], ['access.denied', 'no_access', s.lab, key.id]);
    assert.deepEqual([unknown?.type, unknown?.reason, unknown?.person], ['access.denied', 'unknown_key', null]);
    await waitFor(async () => {
      await runJobs();
      return receiver.received.filter((r) => r.path === `/uhppote-${s.accountId}`).length === 3;
    }, 'three webhooks');
  });

  test('events the listener missed are fetched by index, and none is stored twice', async () => {
    const { s, simulated } = await cardOnBoard();
    simulated.dropPushes(true); // lost UDP packets
    for (let i = 0; i < 3; i++) simulated.swipe(CARD_NUMBER, 1);
    simulated.dropPushes(false);
    simulated.swipe(CARD_NUMBER, 1); // its push shows the gap
    await waitFor(async () => (await accessLog(s)).length === 4, 'four entries');
    // The next polls see the same latest index: nothing more.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await runJobs();
    assert.equal((await accessLog(s)).length, 4);
  });
});

describe('forged pushes', () => {
  /** Sends an event packet as if from the board, from `host` (UDP says nothing of who really sent it). */
  async function forge(simulated: SimulatedController, host: string, event: ControllerEvent): Promise<void> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
    const status = {
      serial: simulated.serial, systemTime: simulated.time(), doorsOpen: [false, false, false, false] as [boolean, boolean, boolean, boolean],
      buttons: [false, false, false, false] as [boolean, boolean, boolean, boolean], relays: 0, inputs: 0, systemError: 0, specialInfo: 0, sequence: 1, event,
    };
    const packet = encodeResponse(simulated.serial, { fn: 'get-status', serial: simulated.serial, status });
    await new Promise<void>((resolve) => socket.send(packet, simulated.listener!.port, simulated.listener!.address, () => resolve()));
    await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  test('a push from another address is ignored; a claimed index the board does not have makes nothing skipped', async () => {
    const { s, simulated } = await cardOnBoard();
    const fake = (index: number): ControllerEvent => ({ index, type: 1, granted: true, door: 1, direction: 1, card: CARD_NUMBER, timestamp: simulated.time(), reason: 1 });
    await forge(simulated, '127.0.0.2', fake(1)); // another host on the network
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await accessLog(s)).length, 0);

    await forge(simulated, '127.0.0.1', fake(1_000_000)); // the board's address, an index it never recorded
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await accessLog(s)).length, 0);
    simulated.swipe(CARD_NUMBER, 1); // the board's real next event (index 1) is not skipped
    await waitFor(async () => (await accessLog(s)).length === 1, 'the real swipe');
  });

  test("a push from the board's address only wakes the reading: what is stored is the board's own event at each index", async () => {
    const { s, simulated } = await cardOnBoard();
    simulated.swipe(CARD_NUMBER, 1); // index 1
    await waitFor(async () => (await accessLog(s)).length === 1, 'the real swipe');
    const granted = (index: number): ControllerEvent => ({ index, type: 1, granted: true, door: 1, direction: 1, card: CARD_NUMBER, timestamp: simulated.time(), reason: 1 });

    // The next index, before the board has recorded it: nothing is stored, and the read index does not move past it.
    await forge(simulated, '127.0.0.1', granted(2));
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await accessLog(s)).length, 1, 'the forged event was stored');
    simulated.swipe(99999999, 1); // the board's own index 2: nobody's card, refused
    await waitFor(async () => (await accessLog(s)).length === 2, "the board's own event at index 2");

    // An index the board has (its push lost), claimed with other content: the board's record is what is stored.
    simulated.dropPushes(true);
    simulated.swipe(99999999, 1); // index 3
    simulated.dropPushes(false);
    await forge(simulated, '127.0.0.1', granted(3));
    await waitFor(async () => (await accessLog(s)).length === 3, "the board's own event at index 3");
    await new Promise((resolve) => setTimeout(resolve, 300)); // a second entry for an index would show here
    assert.deepEqual(
      (await accessLog(s)).map((e) => [e.type, e.reason]),
      [['access.granted', null], ['access.denied', 'unknown_key'], ['access.denied', 'unknown_key']],
    );
  });
});

describe('forged statuses', () => {
  test("an event in a poll's status is not stored as such: what is stored is the board's own event at that index", async () => {
    const { s, simulated } = await cardOnBoard();
    const next = simulated.events.length + 1;
    simulated.forgeStatusEvent({ index: next, type: 1, granted: true, door: 1, direction: 1, card: CARD_NUMBER, timestamp: simulated.time(), reason: 1 });
    await polls(simulated, 2);
    simulated.forgeStatusEvent(undefined);
    assert.equal((await accessLog(s)).length, 0, 'the forged event was stored');
    simulated.swipe(99999999, 1); // the board's own event at that index: nobody's card, refused
    await waitFor(async () => (await accessLog(s)).length === 1, "the board's own event");
    assert.deepEqual((await accessLog(s)).map((e) => [e.type, e.reason]), [['access.denied', 'unknown_key']]);
  });

  test("a first contact's status claiming an index the board does not have does not start the log past the board's events", async () => {
    const s = await site();
    const simulated = await board();
    simulated.forgeStatusEvent({ index: 1_000_000, type: 1, granted: true, door: 1, direction: 1, card: CARD_NUMBER, timestamp: simulated.time(), reason: 1 });
    const res = await ctx.service.admin<ControllerView>('POST', '/admin/v1/controllers', {
      location_id: s.root, name: 'Hall board', serial_number: simulated.serial, address: simulated.address.host, port: simulated.address.port,
      door_locks: [{ door: 1, lock_id: s.front }],
    });
    assert.equal(res.status, 201, res.text);
    await polls(simulated, 2);
    assert.equal((await controllerView(res.body.id)).clock_set_at, null, 'first contact recorded on a status the board did not confirm');
    simulated.forgeStatusEvent(undefined);
    await firstContactThenFirstEvent(simulated, s, res.body.id);
  });
});

describe('remote unlock and presence', () => {
  test('remote unlock is open-door on the board, confirmed by its answer, in the log once', async () => {
    const s = await site();
    const simulated = await board();
    await setUp(s, simulated);
    const command = await ctx.service.request<{ id: string; status: string }>('POST', `/v1/locks/${s.front}/unlock`, { token: s.token });
    assert.equal(command.status, 202, command.text);
    await waitFor(async () => {
      const polled = await ctx.service.request<{ status: string }>('GET', `/v1/locks/${s.front}/commands/${command.body.id}`, { token: s.token });
      return polled.body.status === 'confirmed';
    }, 'the command confirmed');
    assert.equal(simulated.requests.get('open-door'), 1);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the board's own remote-open event is not a second entry
    const log = await accessLog(s);
    assert.deepEqual(log.map((e) => e.type), ['access.granted']);
  });

  test("a door taken off a board is no longer remote at once in GET /v1/locks/{id}, whose lock this instance had cached", async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const lockOnline = async () => (await ctx.service.request<{ online: boolean | null }>('GET', `/v1/locks/${s.front}`, { token: s.token })).body.online;
    await waitFor(async () => (await lockOnline()) === true, 'the door online, and its lock cached');
    const moved = await ctx.service.admin('PATCH', `/admin/v1/controllers/${controller.id}`, { door_locks: [{ door: 2, lock_id: s.lab }] });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(await lockOnline(), null, 'not remote now: on no gateway');
    const unlock = await ctx.service.request<{ error: { code: string } }>('POST', `/v1/locks/${s.front}/unlock`, { token: s.token });
    assert.equal(unlock.body.error.code, 'lock_not_remote', unlock.text);
  });

  test('a board that goes away reads offline; its writes wait (key sent) and reach it when it is back, with the events it kept', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.setReachable(false);
    await waitFor(async () => {
      await runJobs();
      return !(await controllerView(controller.id)).online;
    }, 'offline');
    const locks = await ctx.service.request<{ data: Array<{ id: number; online: boolean }> }>('GET', '/v1/locks', { token: s.token });
    assert.equal(locks.body.data.find((l) => l.id === s.front)?.online, false);
    const unlock = await ctx.service.request<{ error: { code: string } }>('POST', `/v1/locks/${s.front}/unlock`, { token: s.token });
    assert.equal(unlock.status, 409);
    assert.equal(unlock.body.error.code, 'lock_offline');

    const changed = await ctx.service.request<{ state: string }>('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['staff', 'lab'] } });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.state, 'sent');
    simulated.swipe(CARD_NUMBER, 1); // at the door while the service cannot reach the board
    simulated.setReachable(true);
    await waitFor(async () => {
      await runJobs();
      const read = await ctx.service.request<{ state: string }>('GET', `/v1/keys/${key.id}`, { token: s.token });
      return read.body.state === 'handed_over';
    }, 'the key confirmed once the board holds it');
    assert.deepEqual(simulated.cards.get(CARD_NUMBER)?.doors, [1, 1, 0, 0]);
    await waitFor(async () => (await accessLog(s)).length === 1, 'the swipe made meanwhile, fetched');
    // Online again once the poll hears it (a loaded machine can deliver the writes and events before that poll).
    await waitFor(async () => {
      await runJobs();
      return (await controllerView(controller.id)).online;
    }, 'online again');
  });
});

describe('an edge of validity the board missed', () => {
  test('a key expiring while its board does not answer comes off the board when it is back, not at the next reconciliation', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    await handOver(s, { expires_at: new Date(now.getTime() + 20_000).toISOString() });
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    // Reconciled now, so that the hourly reconciliation (which removes cards that should not be there) is not what repairs it.
    assert.equal((await ctx.service.admin('POST', `/admin/v1/controllers/${controller.id}/reconcile`)).status, 200);
    simulated.setReachable(false);
    await advanceClock(ctx.service, 45); // the key expires; the validity job's write finds the board away
    assert.ok(simulated.cards.has(CARD_NUMBER), 'still on the board while it is away');
    simulated.setReachable(true);
    await waitFor(async () => {
      await runJobs();
      return !simulated.cards.has(CARD_NUMBER);
    }, 'the expired card off the board once it answers');
    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, false);
  });
});

describe('a new time profile the board did not take', () => {
  test('written while the board is away, it is written again when the board is back: the card never names a profile the board lacks', async () => {
    const s = await site([{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '18:00' }]);
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    // Reconciled now, so that the hourly reconciliation (which rewrites missing profiles) is not what repairs it.
    assert.equal((await ctx.service.admin('POST', `/admin/v1/controllers/${controller.id}/reconcile`)).status, 200);
    simulated.setReachable(false);
    // The lab's windows need a profile: its write to the board fails (unreachable) and is tried again.
    const changed = await ctx.service.request('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['staff', 'lab'] } });
    assert.equal(changed.status, 200, changed.text);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await runJobs();
    simulated.setReachable(true);
    await waitFor(async () => {
      await runJobs();
      return (await ctx.service.request<{ state: string }>('GET', `/v1/keys/${key.id}`, { token: s.token })).body.state === 'handed_over';
    }, 'the key confirmed once the board holds it');
    const labProfile = simulated.cards.get(CARD_NUMBER)?.doors[1] as number;
    assert.ok(labProfile > 1, `door 2 follows a profile (${labProfile})`);
    assert.deepEqual(simulated.profiles.get(labProfile)?.segments.filter((segment) => segment.start !== '00:00' || segment.end !== '00:00'), [{ start: '08:00', end: '17:59' }]);
  });
});

describe('reconciliation', () => {
  test('a card added on the board by hand is found and removed; a card deleted by hand is put back; a cleared time profile is rewritten', async () => {
    const s = await site([{ days: ['sat'], start: '10:00', end: '12:00' }]);
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s, { security_groups: ['staff', 'lab'] });
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    const profileId = simulated.cards.get(CARD_NUMBER)!.doors[1];
    simulated.cards.set(31337001, { card: 31337001, from: '2020-01-01', to: '2099-12-31', doors: [1, 1, 1, 1], pin: 0 });
    simulated.cards.delete(CARD_NUMBER);
    simulated.profiles.delete(profileId);
    const res = await ctx.service.admin<{ removed: Array<{ card: string; key_id: number | null; reason: string }>; added: Array<{ key_id: number }>; profiles_rewritten: number[] }>(
      'POST',
      `/admin/v1/controllers/${controller.id}/reconcile`,
    );
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.removed, [{ card: '…001', key_id: null, reason: 'not issued by Latchkey (added on the controller)' }]);
    assert.deepEqual(res.body.added.map((a) => a.key_id), [key.id]);
    assert.deepEqual(res.body.profiles_rewritten, [profileId]);
    assert.equal(simulated.cards.has(31337001), false);
    assert.equal(simulated.swipe(31337001, 1).granted, false);
    assert.ok(simulated.cards.has(CARD_NUMBER));
    assert.ok(simulated.profiles.has(profileId));
    assert.ok(!res.text.includes('31337001'), 'no card number in clear');
    assert.equal((await controllerView(controller.id)).reconciliation?.removed.length, 1);
  });

  test('a card put on the board by hand after a deletion sits past the count of cards, and is found and removed all the same', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.cards.set(31337002, { card: 31337002, from: '2020-01-01', to: '2099-12-31', doors: [1, 1, 1, 1], pin: 0 });
    assert.equal((await ctx.service.admin('POST', `/admin/v1/keys/${key.id}/return`)).status, 200);
    await waitFor(() => !simulated.cards.has(CARD_NUMBER), 'the returned card off the board');
    // The board keeps the returned card's slot as a hole: one card counted, and it is in the second slot.
    const res = await ctx.service.admin<{ cards_on_controller: number; removed: Array<{ card: string; key_id: number | null }> }>(
      'POST',
      `/admin/v1/controllers/${controller.id}/reconcile`,
    );
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.cards_on_controller, 1);
    // Before, only the first slot was read (a hole): the card was not seen, and went on opening every door.
    assert.deepEqual(res.body.removed.map((r) => [r.card, r.key_id]), [['…002', null]]);
    assert.equal(simulated.swipe(31337002, 1).granted, false);
  });

  test('a count of cards gone stale while the list is read ends the read at the end of the list, not 100,000 slots on', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.forgeCardCount(3); // two cards deleted by hand while the list was being read
    const before = simulated.requests.get('get-card-by-index') ?? 0;
    const res = await ctx.service.admin<{ cards_on_controller: number }>('POST', `/admin/v1/controllers/${controller.id}/reconcile`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.cards_on_controller, 1);
    assert.equal((simulated.requests.get('get-card-by-index') ?? 0) - before, 2, 'the card, then the end of the list');
  });

  test('reconciling a board that does not answer is a 503, and a controller with doors cannot be deleted', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    simulated.setReachable(false);
    const res = await ctx.service.admin<{ error: { code: string } }>('POST', `/admin/v1/controllers/${controller.id}/reconcile`);
    assert.equal(res.status, 503, res.text);
    const deleted = await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}`);
    assert.equal(deleted.status, 409, deleted.text);
    const emptied = await ctx.service.admin('PATCH', `/admin/v1/controllers/${controller.id}`, { door_locks: [] });
    assert.equal(emptied.status, 200, emptied.text);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}`)).status, 204);
  });
});

describe('deleting a controller', () => {
  /** A board holding a key's card that went away, and whose doors were emptied meanwhile: the card is still on it. */
  async function emptiedWhileAway() {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.setReachable(false);
    const emptied = await ctx.service.admin('PATCH', `/admin/v1/controllers/${controller.id}`, { door_locks: [] });
    assert.equal(emptied.status, 200, emptied.text);
    assert.ok(simulated.cards.has(CARD_NUMBER), 'the board did not hear it');
    return { simulated, controller };
  }

  test('is refused while cards Latchkey wrote are still on its board (it did not answer when its doors were emptied); they come off when it answers', async () => {
    const { simulated, controller } = await emptiedWhileAway();
    // Before, this answered 204 and forgot the card: the board, back, went on opening door 1 to it for good.
    const refused = await ctx.service.admin<{ error: { code: string; message: string } }>('DELETE', `/admin/v1/controllers/${controller.id}`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, 'gateway_in_use');
    assert.match(refused.body.error.message, /^1 card Latchkey wrote is still on this controller, not yet taken off its board/);
    simulated.setReachable(true);
    await waitFor(async () => {
      await runJobs();
      return !simulated.cards.has(CARD_NUMBER);
    }, 'the card off the board once it answers');
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}`)).status, 204);
  });

  test('with force=true, a board gone for good is deleted with the cards it may still hold', async () => {
    const { controller } = await emptiedWhileAway();
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}`)).status, 409);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/controllers/${controller.id}?force=true`)).status, 204);
    assert.equal((await ctx.service.admin('GET', `/admin/v1/controllers/${controller.id}`)).status, 404);
  });
});

describe('a delete the board did not take', () => {
  test('a revocation a board left unanswered while it answered its polls is written again at its next answered poll, not a rung later', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    // Reconciled now, so that the hourly reconciliation (which removes cards that should not be there) is not what repairs it.
    assert.equal((await ctx.service.admin('POST', `/admin/v1/controllers/${controller.id}/reconcile`)).status, 200);
    simulated.dropAnswersTo(['delete-card', 'get-card-by-id']); // lost packets: its status still answers
    assert.equal((await ctx.service.admin('POST', `/admin/v1/keys/${key.id}/return`)).status, 200);
    assert.ok(simulated.cards.has(CARD_NUMBER), 'still on the board while its answers are lost');
    // The jobs run while the answers are still lost: the queued removal's first try, the job writing validity edges
    // (a return is one) and the removal it queues again all find the board silent (two packets each). Answers come
    // back after them, so that nothing but the next answered poll can write the removal before the queue's next rung.
    const deletes = () => simulated.requests.get('delete-card') ?? 0;
    const before = deletes();
    const running = runJobs();
    await waitFor(() => deletes() >= before + 6, 'three writes tried while the answers are lost');
    simulated.dropAnswersTo([]);
    await running;
    assert.equal((await controllerView(controller.id)).online, true, 'the board answered its polls all along');
    // Before, the queued removal waited for its rung (a minute of the service clock, then 5, then 30): this stays
    // within seconds of real time and moves the clock by nothing.
    await waitFor(async () => {
      await runJobs();
      return !simulated.cards.has(CARD_NUMBER);
    }, 'the returned card off the board at its next answered poll');
    assert.equal(simulated.swipe(CARD_NUMBER, 1).granted, false);
  });

  test('a card the board answers "no" to deleting (and still holds) keeps the key sent, and is deleted when the board takes it', async () => {
    const s = await site();
    await createSecurityGroup(ctx.service, s.root, 'visitors'); // opens no door of the board
    const simulated = await board();
    await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.refuseDeletes(true);
    const moved = await ctx.service.request<{ state: string }>('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['visitors'] } });
    assert.equal(moved.status, 200, moved.text);
    assert.ok(simulated.cards.has(CARD_NUMBER), 'the board kept the card');
    assert.equal(moved.body.state, 'sent', 'confirmed although the board still holds the card');

    simulated.refuseDeletes(false);
    await cardDeletedByQueuedWrite(s, key.id, simulated);
  });

  test("a card the board refuses to delete at a reconciliation is not reported removed and stays recorded: the key's queued write or the next reconciliation removes it", async () => {
    const s = await site();
    await createSecurityGroup(ctx.service, s.root, 'visitors'); // opens no door of the board
    const simulated = await board();
    const controller = await setUp(s, simulated);
    const key = await handOver(s);
    await waitFor(() => simulated.cards.has(CARD_NUMBER), 'the card');
    simulated.cards.set(31337001, { card: 31337001, from: '2020-01-01', to: '2099-12-31', doors: [1, 1, 1, 1], pin: 0 });
    simulated.refuseDeletes(true);
    const moved = await ctx.service.request<{ state: string }>('PATCH', `/v1/keys/${key.id}`, { token: s.token, body: { security_groups: ['visitors'] } });
    assert.equal(moved.body.state, 'sent', moved.text);

    type Report = { removed: Array<{ card: string; key_id: number | null }>; problems: string[] };
    const refused = await ctx.service.admin<Report>('POST', `/admin/v1/controllers/${controller.id}/reconcile`);
    assert.equal(refused.status, 200, refused.text);
    assert.deepEqual(refused.body.removed, [], 'reported removed although the board kept them');
    assert.equal(refused.body.problems.filter((p) => p.includes('refused to delete')).length, 2, refused.text);
    assert.ok(simulated.cards.has(CARD_NUMBER) && simulated.cards.has(31337001));

    simulated.refuseDeletes(false);
    // The key's card is still recorded as its card: the key's queued write deletes it.
    await cardDeletedByQueuedWrite(s, key.id, simulated);
    const taken = await ctx.service.admin<Report>('POST', `/admin/v1/controllers/${controller.id}/reconcile`);
    assert.equal(taken.status, 200, taken.text);
    assert.deepEqual(taken.body.removed.map((r) => [r.card, r.key_id]), [['…001', null]]);
    assert.ok(!simulated.cards.has(CARD_NUMBER) && !simulated.cards.has(31337001));
  });
});

describe('an event read the board did not answer', () => {
  test('at a first contact, a get-event left unanswered does not take a board whose status answered offline; the contact is made at a later poll', async () => {
    const s = await site();
    const simulated = await board();
    simulated.swipe(99999999, 1); // an event before set-up: the first contact reads the status's index back by get-event
    simulated.dropAnswersTo(['get-event']);
    const res = await ctx.service.admin<ControllerView>('POST', '/admin/v1/controllers', {
      location_id: s.root, name: 'Hall board', serial_number: simulated.serial, address: simulated.address.host, port: simulated.address.port,
      door_locks: [{ door: 1, lock_id: s.front }],
    });
    assert.equal(res.status, 201, res.text);
    await waitFor(async () => (await controllerView(res.body.id)).online, 'online');
    await polls(simulated, 3);
    const waiting = await controllerView(res.body.id);
    assert.equal(waiting.clock_set_at, null, 'first contact recorded before get-event answered');
    assert.match(waiting.last_error ?? '', /get-event/);

    simulated.dropAnswersTo([]);
    await firstContactThenFirstEvent(simulated, s, res.body.id);
    const offline = await ctx.database.db.query("SELECT id FROM domain_events WHERE account_id = $1 AND type = 'lock.offline'", [s.accountId]);
    assert.equal(offline.length, 0, 'lock.offline for a board whose status answered every poll');
    assert.equal((await controllerView(res.body.id)).online, true);
  });

  test('after the first contact, a get-event left unanswered does not take a board whose status answered offline; the event is read at a later poll', async () => {
    const s = await site();
    const simulated = await board();
    const controller = await setUp(s, simulated);
    simulated.dropPushes(true); // read by the polls only
    simulated.dropAnswersTo(['get-event']);
    simulated.swipe(99999999, 1);
    await polls(simulated, 3);
    const waiting = await controllerView(controller.id);
    assert.match(waiting.last_error ?? '', /get-event/);
    assert.equal((await accessLog(s)).length, 0);

    simulated.dropAnswersTo([]);
    await waitFor(async () => {
      await runJobs();
      return (await accessLog(s)).length === 1;
    }, 'the event, read at a later poll');
    const offline = await ctx.database.db.query("SELECT id FROM domain_events WHERE account_id = $1 AND type = 'lock.offline'", [s.accountId]);
    assert.equal(offline.length, 0, 'lock.offline for a board whose status answered every poll');
    assert.equal((await controllerView(controller.id)).online, true);
  });
});
