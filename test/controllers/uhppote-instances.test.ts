// UHPPOTE boards with two service instances on one PostgreSQL (README "Real controllers"): the board pushes its
// events to the instance at CONTROLLER_EVENT_ADDRESS, the other reads them by polling; whichever instance a key
// change goes through writes the board; every swipe is in the access log once, whoever read it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import { backend } from '../helpers/database.ts';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor as waitUpTo } from '../helpers/gateways.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import { freeUdpPort, startSimulatedController } from '../helpers/uhppote-simulator.ts';

/** Background work (polls, queued writes, deliveries) on a loaded machine: a generous bound, not a timing claim. */
const waitFor = (check: () => boolean | Promise<boolean>, what: string) => waitUpTo(check, what, 15_000);

const skip = backend !== 'postgres' ? 'needs PostgreSQL (LATCHKEY_TEST_BACKEND=postgres)' : false;
const ctx = useTestService();
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

test('two instances: writes through either reach the board, pushed and polled events are stored once', { skip }, async () => {
  const listen = `127.0.0.1:${await freeUdpPort()}`;
  const common = { CONTROLLER_EVENT_ADDRESS: listen, CONTROLLER_POLL_SECONDS: '1', CONTROLLER_TIMEOUT_MS: '150' };
  const a: TestService = await startService(await ctx.database.openAnother(), { ...common, CONTROLLER_LISTEN: listen });
  closers.push(() => a.close());
  const b: TestService = await startService(await ctx.database.openAnother(), common);
  closers.push(() => b.close());
  const simulated = await startSimulatedController({ serial: 515151515 });
  closers.push(() => simulated.close());

  const account = await createAccount(a, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  await createSecurityGroup(a, root, 'staff');
  const front = await createLock(a, root, { name: 'Front', security_groups: ['staff'] });
  const controller = await b.admin<{ id: number }>('POST', '/admin/v1/controllers', {
    location_id: root, name: 'Board', serial_number: simulated.serial, address: '127.0.0.1', port: simulated.address.port, door_locks: [{ door: 1, lock_id: front }],
  });
  assert.equal(controller.status, 201, controller.text);
  assert.deepEqual(simulated.listener, { address: '127.0.0.1', port: Number(listen.split(':')[1]) });
  const token = (await createApiKey(b, root, ['keys:read', 'keys:write', 'events:read'])).token;
  const person = await a.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', email: `ada-${randomUUID()}@example.com`, location_id: root });
  const key = await b.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential: 'wiegand26:5:4321' });
  assert.equal(key.status, 201, key.text);
  await waitFor(() => simulated.cards.has(504321), 'the card, written after a change through B');

  const log = async () => (await a.request<{ data: Array<{ type: string; key: { id: number } | null }> }>('GET', '/v1/events?limit=100', { token })).body.data;
  for (let i = 0; i < 5; i++) simulated.swipe(504321, 1); // pushed to A
  await waitFor(async () => (await log()).length === 5, 'five pushed swipes');
  simulated.dropPushes(true);
  for (let i = 0; i < 3; i++) simulated.swipe(504321, 1); // only a poll finds these
  await advanceClock(b, 0); // B polls (its lease), fetches the three
  await advanceClock(a, 0);
  await waitFor(async () => {
    await advanceClock(b, 1.1);
    return (await log()).length === 8;
  }, 'the missed swipes, read by polling');
  simulated.dropPushes(false);
  simulated.swipe(504321, 1);
  await waitFor(async () => (await log()).length === 9, 'the next push');
  await advanceClock(a, 1.1);
  await advanceClock(b, 1.1);
  const entries = await log();
  assert.equal(entries.length, 9, 'each swipe once');
  assert.ok(entries.every((e) => e.type === "access.granted" && e.key?.id === key.body.id), JSON.stringify(entries));

  const revoked = await a.request('DELETE', `/v1/keys/${key.body.id}`, { token });
  assert.equal(revoked.status, 204);
  await waitFor(() => !simulated.cards.has(504321), 'the card deleted after a revocation through A');
});

test('two instances writing new schedules to one board at once never give one profile id two schedules', { skip }, async () => {
  const common = { CONTROLLER_POLL_SECONDS: '60', CONTROLLER_TIMEOUT_MS: '1000' };
  const a: TestService = await startService(await ctx.database.openAnother(), common);
  closers.push(() => a.close());
  const b: TestService = await startService(await ctx.database.openAnother(), common);
  closers.push(() => b.close());
  const simulated = await startSimulatedController({ serial: 515151616 });
  closers.push(() => simulated.close());
  // A slow board: each instance's write of a new profile is still on its way when the other picks an id. The two
  // writes race only when each instance claims one (most runs on an idle machine; on a loaded one a single
  // instance may claim both and run them in turn, and the test then passes without the race).
  simulated.delayAnswers(300);

  const account = await createAccount(a, { locking_system: 'uhppote' });
  const root = account.rootLocationId;
  const every = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
  await createSecurityGroup(a, root, 'early', { windows: [{ days: every, start: '06:00', end: '08:00' }] });
  await createSecurityGroup(a, root, 'late', { windows: [{ days: every, start: '18:00', end: '20:00' }] });
  const front = await createLock(a, root, { name: 'Front', security_groups: ['early', 'late'] });
  const controller = await a.admin<{ id: number }>('POST', '/admin/v1/controllers', {
    location_id: root, name: 'Board', serial_number: simulated.serial, address: '127.0.0.1', port: simulated.address.port, door_locks: [{ door: 1, lock_id: front }],
  });
  assert.equal(controller.status, 201, controller.text);
  // Reconciled now: the hourly reconciliation (which would repair a mixed-up profile) is not what is tried here.
  assert.equal((await a.admin('POST', `/admin/v1/controllers/${controller.body.id}/reconcile`)).status, 200);
  const person = await a.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Shift', email: `shift-${randomUUID()}@example.com`, location_id: root });
  const card = (service: TestService, group: string, credential: string) =>
    service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: group, security_groups: [group], credential });
  const [early, late] = await Promise.all([card(a, 'early', 'wiegand26:6:1001'), card(b, 'late', 'wiegand26:6:1002')]);
  assert.equal(early.status, 201, early.text);
  assert.equal(late.status, 201, late.text);
  // A write that timed out on a loaded machine is tried again by the jobs.
  await waitFor(async () => {
    await advanceClock(a, 1);
    await advanceClock(b, 1);
    return simulated.cards.has(601001) && simulated.cards.has(601002);
  }, 'both cards on the board');

  // Each card's door 1 names a profile holding its own group's window (the board's ends are inclusive).
  const segmentsOf = (cardNumber: number) => simulated.profiles.get(simulated.cards.get(cardNumber)?.doors[0] ?? -1)?.segments;
  assert.deepEqual(segmentsOf(601001)?.filter((s) => s.start !== '00:00' || s.end !== '00:00'), [{ start: '06:00', end: '07:59' }]);
  assert.deepEqual(segmentsOf(601002)?.filter((s) => s.start !== '00:00' || s.end !== '00:00'), [{ start: '18:00', end: '19:59' }]);
});
