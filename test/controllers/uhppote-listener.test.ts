// The UHPPOTE event listener takes unauthenticated UDP (README "Real controllers"): a packet whose serial is not a
// board's, or that does not come from the address that board was set up with, is dropped before any database work,
// and the boards it knows follow the controllers as they are set up and moved while the service runs. Every
// statement the service sends is counted (test/helpers/database.ts withFaults) while such packets arrive.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { after, before, test } from 'node:test';
import { encodeResponse, type ControllerEvent, type ControllerStatus } from '../../src/modules/controllers/uhppote/codec.ts';
import { createTestDatabase, withFaults, type Statement, type TestDatabase } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { waitFor as waitUpTo } from '../helpers/gateways.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';

/** Background work on a loaded machine: a generous bound, not a timing claim. */
const waitFor = (check: () => boolean | Promise<boolean>, what: string) => waitUpTo(check, what, 15_000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let database: TestDatabase;
let service: TestService;
const boards: SimulatedController[] = [];
/** The statements sent while `counting` (null: not counting). */
let counted: Statement[] | null = null;

before(async () => {
  database = await createTestDatabase();
  const db = withFaults(database.db, (statement) => {
    counted?.push(statement);
    return undefined;
  });
  service = await startService(db, { CONTROLLER_LISTEN: '127.0.0.1:0', CONTROLLER_POLL_SECONDS: '1', CONTROLLER_TIMEOUT_MS: '150' });
});
after(async () => {
  await service?.close();
  await database?.close();
  for (const board of boards) await board.close();
});

/**
 * What the service sent while `send` ran and for a while after (its reading runs after the event loop's I/O), by
 * prepared name or the start of the SQL; the request log of the test's own earlier calls, flushed on a timer, aside.
 */
async function statementsDuring(send: () => Promise<void>): Promise<string[]> {
  counted = [];
  try {
    await send();
    await sleep(500);
    return counted.filter((s) => s.text !== 'appendRows request_log').map((s) => s.name ?? s.text.slice(0, 60));
  } finally {
    counted = null;
  }
}

/** A board set up (the service already running), its door 1 a lock; an API key to read the log. */
async function boardSetUp(serial: number): Promise<{ board: SimulatedController; controllerId: number; log: () => Promise<Array<{ type: string }>> }> {
  const board = await startSimulatedController({ serial });
  boards.push(board);
  const account = await createAccount(service, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  const lock = await createLock(service, root, { name: 'Front' });
  const res = await service.admin<{ id: number }>('POST', '/admin/v1/controllers', {
    location_id: root, name: 'Board', serial_number: serial, address: '127.0.0.1', port: board.address.port, door_locks: [{ door: 1, lock_id: lock }],
  });
  assert.equal(res.status, 201, res.text);
  await waitFor(async () => (await service.admin<{ clock_set_at: string | null }>('GET', `/admin/v1/controllers/${res.body.id}`)).body.clock_set_at !== null, 'first contact recorded');
  const { token } = await createApiKey(service, root, ['events:read']);
  const log = async () => (await service.request<{ data: Array<{ type: string }> }>('GET', '/v1/events?limit=100', { token })).body.data;
  return { board, controllerId: res.body.id, log };
}

/** An event packet for `serial`, sent from `host`. */
async function push(socket: dgram.Socket, to: { address: string; port: number }, serial: number, index: number): Promise<void> {
  const event: ControllerEvent = { index, type: 1, granted: true, door: 1, direction: 1, card: 10058400, reason: 1, timestamp: '2026-01-01 12:00:00' };
  const status: ControllerStatus = {
    serial, systemTime: '2026-01-01 12:00:00', doorsOpen: [false, false, false, false], buttons: [false, false, false, false],
    relays: 0, inputs: 0, systemError: 0, specialInfo: 0, sequence: index, event,
  };
  const packet = encodeResponse(serial, { fn: 'get-status', serial, status });
  await new Promise<void>((resolve) => socket.send(packet, to.port, to.address, () => resolve()));
}

async function socketOn(host: string): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, () => resolve()));
  return socket;
}

test("packets of serials no board has, and a board's serial from another address, cause no database work; the board's own push is read", async () => {
  const { board, log } = await boardSetUp(423190001);
  assert.ok(board.listener, 'the board was told where to push');
  const to = board.listener;
  const local = await socketOn('127.0.0.1');
  const elsewhere = await socketOn('127.0.0.2');
  try {
    await sleep(300); // the set-up's background writes settle
    const statements = await statementsDuring(async () => {
      for (let i = 0; i < 300; i++) await push(local, to, 1_000_000 + i * 7919, 1); // serials nobody set up
      for (let i = 1; i <= 100; i++) await push(elsewhere, to, board.serial, i); // the board's serial, not from its address
    });
    assert.deepEqual(statements, []);
    assert.equal((await log()).length, 0);

    board.swipe(12345678, 1); // the board's own event, pushed from its address
    await waitFor(async () => (await log()).length === 1, "the board's pushed event");
  } finally {
    local.close();
    elsewhere.close();
  }
});

test('the listener follows the controllers: a board moved to another address is not heard from its old one, and is again once moved back', async () => {
  const { board, controllerId, log } = await boardSetUp(423190002);
  board.swipe(12345678, 1);
  await waitFor(async () => (await log()).length === 1, 'a push from the board set up while the service runs');

  const moved = await service.admin('PATCH', `/admin/v1/controllers/${controllerId}`, { address: '127.0.0.3' });
  assert.equal(moved.status, 200, moved.text);
  await sleep(300); // the change's background work settles
  const statements = await statementsDuring(async () => {
    board.swipe(12345678, 1); // pushed from 127.0.0.1, no longer the board's address
  });
  assert.deepEqual(statements, []);
  assert.equal((await log()).length, 1);

  const back = await service.admin('PATCH', `/admin/v1/controllers/${controllerId}`, { address: '127.0.0.1' });
  assert.equal(back.status, 200, back.text);
  board.swipe(12345678, 1); // its push reads this one and the one before it, by index
  await waitFor(async () => (await log()).length === 3, 'both swipes, once the board is back at its address');
});
