// A service restart is a gap like a lost packet (README "Real controllers"): what a board recorded while no
// service ran is read by index when one starts again, from where the last one stopped, none twice; a write queued
// for a board that was away is applied by the next service.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor as waitUpTo } from '../helpers/gateways.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';

/** Background work (polls, queued writes, deliveries) on a loaded machine: a generous bound, not a timing claim. */
const waitFor = (check: () => boolean | Promise<boolean>, what: string) => waitUpTo(check, what, 15_000);

const env = { CONTROLLER_LISTEN: '127.0.0.1:0', CONTROLLER_POLL_SECONDS: '1', CONTROLLER_TIMEOUT_MS: '150' };
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

test('events recorded while the service was down are read when it starts again; a write queued for a board that was away reaches it', async () => {
  const database: TestDatabase = await createTestDatabase();
  closers.push(() => database.close());
  const board: SimulatedController = await startSimulatedController({ serial: 606060606 });
  closers.push(() => board.close());

  let service: TestService = await startService(database.db, env);
  const account = await createAccount(service, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  await createSecurityGroup(service, root, 'staff');
  await createSecurityGroup(service, root, 'lab');
  const front = await createLock(service, root, { name: 'Front', security_groups: ['staff'] });
  const lab = await createLock(service, root, { name: 'Lab', security_groups: ['lab'] });
  const controller = await service.admin<{ id: number }>('POST', '/admin/v1/controllers', {
    location_id: root, name: 'Board', serial_number: board.serial, address: '127.0.0.1', port: board.address.port,
    door_locks: [{ door: 1, lock_id: front }, { door: 2, lock_id: lab }],
  });
  assert.equal(controller.status, 201, controller.text);
  const token = (await createApiKey(service, root, ['events:read', 'keys:read', 'keys:write'])).token;
  const person = await service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', email: `ada-${randomUUID()}@example.com`, location_id: root });
  const key = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential: 'wiegand26:9:999' });
  await waitFor(() => board.cards.has(900999), 'the card');
  const log = async () => (await service.request<{ data: Array<{ type: string }> }>('GET', '/v1/events?limit=100', { token })).body.data;
  board.swipe(900999, 1);
  await waitFor(async () => (await log()).length === 1, 'the first swipe');

  // The board goes away (its polls say so), a change is queued for it, the service stops.
  board.setReachable(false);
  await waitFor(async () => {
    await advanceClock(service, 1.1);
    return !(await service.admin<{ online: boolean }>('GET', `/admin/v1/controllers/${controller.body.id}`)).body.online;
  }, 'the board offline');
  const changed = await service.request<{ state: string }>('PATCH', `/v1/keys/${key.body.id}`, { token, body: { security_groups: ['staff', 'lab'] } });
  assert.equal(changed.body.state, 'sent');
  await service.close();

  // Meanwhile at the door: three swipes nobody hears.
  board.setReachable(true);
  for (let i = 0; i < 3; i++) board.swipe(900999, 1);

  service = await startService(database.db, env);
  closers.push(() => service.close());
  await waitFor(async () => {
    await advanceClock(service, 0); // polls (the sandbox runs jobs when told)
    return (await log()).length === 4;
  }, 'the three swipes made while the service was down');
  // Its first poll finds the board back: what waits for it is written at once, not at the retry's rung.
  await waitFor(async () => {
    await advanceClock(service, 0);
    return (await service.request<{ state: string }>('GET', `/v1/keys/${key.body.id}`, { token })).body.state === 'handed_over';
  }, 'the queued change applied by the new service');
  assert.deepEqual(board.cards.get(900999)?.doors, [1, 1, 0, 0]);
  await advanceClock(service, 1.1);
  assert.equal((await log()).length, 4, 'none twice');
});

test('a service stopped while it writes to a board that is away waits for the write to end: its task is left scheduled for a retry, not claimed for the 2 minutes of its lease', async () => {
  const database: TestDatabase = await createTestDatabase();
  closers.push(() => database.close());
  const board: SimulatedController = await startSimulatedController({ serial: 707070707 });
  closers.push(() => board.close());
  // A long answer timeout, so that the write is still going when the service is told to stop.
  const service: TestService = await startService(database.db, { ...env, CONTROLLER_TIMEOUT_MS: '700' });
  const account = await createAccount(service, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  await createSecurityGroup(service, root, 'staff');
  const front = await createLock(service, root, { name: 'Front', security_groups: ['staff'] });
  const controller = await service.admin<{ id: number }>('POST', '/admin/v1/controllers', {
    location_id: root, name: 'Board', serial_number: board.serial, address: '127.0.0.1', port: board.address.port, door_locks: [{ door: 1, lock_id: front }],
  });
  assert.equal(controller.status, 201, controller.text);
  const person = await service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', email: `ada-${randomUUID()}@example.com`, location_id: root });
  board.setReachable(false);
  const key = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential: 'wiegand26:9:998' });
  assert.equal(key.status, 201, key.text);

  const tasks = () => database.db.query<{ claimed_until: Date | null; last_error: string | null }>("SELECT claimed_until, last_error FROM locking_system_tasks WHERE status = 'pending'");
  await waitFor(async () => (await tasks()).some((task) => task.claimed_until !== null), 'the write under way');
  await service.close();
  const left = await tasks();
  assert.ok(left.length > 0);
  for (const task of left) {
    assert.equal(task.claimed_until, null, 'not left claimed');
    assert.ok(task.last_error, 'its failure recorded, a retry scheduled'); // the board was away, or its client closed under it
  }
});
