// The console's Controllers page (an account's UHPPOTE boards, /admin/v1/controllers) in a real browser (Debian's
// Chromium), against simulated boards on localhost speaking the real UDP packets: one set up through the form
// (the API's errors at the serial-number field and at a door's lock picker), shown online with its door mapped to
// a lock; reconciliation after a card was added on the board by hand shows it removed with its reason (masked); a
// board that does not answer is said so; delete is refused while doors are mapped, then done once they are not;
// an account on another locking system is told so and can be moved to UHPPOTE in its settings. axe runs on each
// page with its forms and report open; no page scrolls sideways at 375 px.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, test } from 'node:test';
import type { Page } from 'playwright-core';
import { assertCleanPage, axeCheck, describeViolations, openConsoleSignedIn, useBrowser, type WatchedPage } from '../helpers/browser.ts';
import { advanceClock, createAccount, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';

const CARD = 'wiegand26:100:58400';
const CARD_NUMBER = 10058400; // facility × 100000 + card, as the boards number Wiegand-26 cards
const BY_HAND = 31337001;

const boards: SimulatedController[] = [];
let nextSerial = 523187000;
after(async () => {
  for (const board of boards) await board.close();
});

const browser = useBrowser();
const ctx = useTestService(undefined, { CONTROLLER_LISTEN: '127.0.0.1:0', CONTROLLER_POLL_SECONDS: '1', CONTROLLER_TIMEOUT_MS: '150' });

async function board(): Promise<SimulatedController> {
  const simulated = await startSimulatedController({ serial: nextSerial++ });
  boards.push(simulated);
  return simulated;
}

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const answer = await ctx.service.admin<T>(method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${answer.text}`);
  return answer.body;
}

interface Site {
  account: number;
  root: number;
  front: number;
  back: number;
  /** A lock in a department in another time zone than the boards' (they are at the root, in UTC). */
  berlin: number;
  person: string;
}

/** An account on UHPPOTE boards: Front and Back at the root (staff), Berlin office in a Berlin department, a person. */
async function site(): Promise<Site> {
  const account = await createAccount(ctx.service, { name: `Boards ${randomUUID().slice(0, 6)}`, locking_system: 'uhppote' });
  const root = account.rootLocationId;
  await createSecurityGroup(ctx.service, root, 'staff');
  const front = await createLock(ctx.service, root, { name: 'Front door', security_groups: ['staff'] });
  const back = await createLock(ctx.service, root, { name: 'Back door', security_groups: ['staff'] });
  const department = await admin<{ id: number }>('POST', '/admin/v1/locations', { parent_id: root, name: 'Berlin office' });
  await admin('PATCH', `/admin/v1/locations/${department.id}`, { time_zone: 'Europe/Berlin' });
  const berlin = await createLock(ctx.service, department.id, { name: 'Berlin entrance', security_groups: ['staff'] });
  const person = await admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada Lovelace', email: `ada-${randomUUID()}@example.com`, location_id: root });
  return { account: account.id, root, front, back, berlin, person: person.id };
}

interface ControllerView {
  id: number;
  online: boolean;
  door_locks: Array<{ door: number; lock_id: number }>;
}

/** A board set up through the API with door 1 on Front, seen online. */
async function setUp(s: Site, simulated: SimulatedController): Promise<ControllerView> {
  const made = await admin<ControllerView>('POST', '/admin/v1/controllers', {
    location_id: s.root,
    name: 'Hall board',
    serial_number: simulated.serial,
    address: simulated.address.host,
    port: simulated.address.port,
    doors: 2,
    door_locks: [{ door: 1, lock_id: s.front }],
  });
  await waitFor(async () => (await admin<ControllerView>('GET', `/admin/v1/controllers/${made.id}`)).online, 'online from its first poll');
  return made;
}

/** A card key handed over through the operator API, and its card written to the board. */
async function handOver(s: Site, simulated: SimulatedController): Promise<number> {
  const key = await admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: s.person, type: 'card', name: 'Card', security_groups: ['staff'], credential: CARD });
  await waitFor(
    async () => {
      if (simulated.cards.has(CARD_NUMBER)) return true;
      await advanceClock(ctx.service, 0); // the sandbox runs due jobs only when asked
      return false;
    },
    'the card on the board',
    10_000,
  );
  return key.id;
}

const open = (path: string): Promise<WatchedPage> => openConsoleSignedIn(browser, ctx.service.url, ADMIN_TOKEN, path, { bypassCSP: true });
const assertClean = (watched: WatchedPage): void => assertCleanPage(watched, ctx.service.url);

async function assertAxe(page: Page, what: string): Promise<void> {
  const violations = await axeCheck(page);
  assert.equal(violations.length, 0, `${what}\n${describeViolations(violations)}`);
}

/** The problem shown at a field: its control is aria-invalid and described by the words. */
async function fieldError(page: Page, testid: string): Promise<string> {
  const control = page.getByTestId(testid);
  assert.equal(await control.getAttribute('aria-invalid'), 'true', `${testid} is marked invalid`);
  const ids = ((await control.getAttribute('aria-describedby')) ?? '').split(' ').filter((id) => id.endsWith('-error'));
  assert.equal(ids.length, 1, `${testid} is described by its problem`);
  return (await page.locator(`[id="${ids[0]}"]`).textContent()) ?? '';
}

/** Picks a lock in a door's picker (the picker has found the account's locks first). */
async function pickLock(page: Page, picker: string, lockId: number | ''): Promise<void> {
  await page.getByTestId(picker).getByText(/\d+ found/).waitFor();
  await page.getByTestId(`${picker}-select`).selectOption(String(lockId));
}

test('a controller set up through the form: errors at the serial number and at a door, then online with its door mapped to a lock', async () => {
  const s = await site();
  const simulated = await board();
  const watched = await open(`/console/accounts/${s.account}/controllers`);
  const { page } = watched;
  assert.equal(await page.getByTestId('tab-controllers').getAttribute('aria-current'), 'page');
  assert.equal(await page.getByTestId('not-uhppote').count(), 0, 'an account on UHPPOTE is not told it is not');
  await page.getByText('No controllers yet.').waitFor();

  await page.getByTestId('controller-name').fill('Hall board');
  await page.getByTestId('controller-serial').fill('0');
  await page.getByTestId('controller-address').fill(simulated.address.host);
  await page.getByTestId('controller-port').fill(String(simulated.address.port));
  await page.getByTestId('controller-doors').selectOption('2');
  await pickLock(page, 'new-door-1', s.front);
  await pickLock(page, 'new-door-2', s.berlin);
  await page.getByTestId('create-controller').click();
  await page.getByTestId('form-error').waitFor();
  assert.match(await fieldError(page, 'controller-serial'), /\S/, 'the serial number problem is at its field');
  await assertAxe(page, 'controller form with a serial-number problem');

  // A good serial: the service checks the doors; the Berlin lock reads its windows in another zone than the board.
  await page.getByTestId('controller-serial').fill(String(simulated.serial));
  await page.getByTestId('create-controller').click();
  await page.getByTestId('new-door-2-select').and(page.locator('[aria-invalid="true"]')).waitFor();
  assert.match(await fieldError(page, 'new-door-2-select'), /Europe\/Berlin/, "door 2's problem is at its lock picker");
  assert.equal(await page.getByTestId('new-door-1-select').getAttribute('aria-invalid'), null, 'door 1 is fine');
  assert.equal((await admin<{ data: unknown[] }>('GET', `/admin/v1/controllers?account_id=${s.account}`)).data.length, 0, 'nothing was set up');

  await pickLock(page, 'new-door-2', '');
  await page.getByTestId('create-controller').click();
  await page.getByTestId('controller-made').waitFor();
  const [controller] = (await admin<{ data: ControllerView[] }>('GET', `/admin/v1/controllers?account_id=${s.account}`)).data;
  assert.ok(controller);
  assert.deepEqual(controller.door_locks, [{ door: 1, lock_id: s.front }]);
  const row = page.getByTestId(`controller-row-${controller.id}`);
  await row.getByText('online', { exact: true }).waitFor({ timeout: 15_000 });
  const text = (await row.textContent()) ?? '';
  assert.match(text, new RegExp(String(simulated.serial)));
  assert.match(text, new RegExp(`127\\.0\\.0\\.1:${simulated.address.port}`));
  assert.match(text, /UTC/, 'times with their zone');
  const lockLink = row.getByRole('link', { name: 'Front door' });
  assert.equal(await lockLink.getAttribute('href'), `/console/accounts/${s.account}/locks#lock-${s.front}`);
  await assertAxe(page, 'controllers list');
  await lockLink.click();
  await page.getByTestId(`lock-row-${s.front}`).waitFor();
  // And back: the door's lock names its controller as its gateway, linked to the controller's page.
  const onController = page.getByTestId(`lock-gateway-${s.front}`).getByRole('link');
  await onController.filter({ hasText: `(controller ${controller.id})` }).waitFor();
  assert.equal(await onController.getAttribute('href'), `/console/accounts/${s.account}/controllers/${controller.id}`);
  assertClean(watched);
});

test('reconcile now: a card added on the board by hand is shown removed with its reason; a board that does not answer is said so', async () => {
  const s = await site();
  const simulated = await board();
  const controller = await setUp(s, simulated);
  await handOver(s, simulated);
  simulated.cards.set(BY_HAND, { card: BY_HAND, from: '2020-01-01', to: '2099-12-31', doors: [1, 1, 0, 0], pin: 0 });

  const watched = await open(`/console/accounts/${s.account}/controllers/${controller.id}`);
  const { page } = watched;
  await page.getByRole('heading', { name: 'Controller Hall board' }).waitFor();
  await page.getByTestId('reconcile-now').click();
  const report = page.getByTestId('reconciliation');
  await report.getByText(/Reconciled just now/).waitFor();
  const removed = (await page.getByTestId('reconciliation-removed').textContent()) ?? '';
  assert.match(removed, /Removed \(1\)/);
  assert.match(removed, /Card …001: not issued by Latchkey \(added on the controller\)/);
  assert.ok(!((await report.textContent()) ?? '').includes(String(BY_HAND)), 'no card number in clear');
  assert.match((await page.getByTestId('reconciliation-cards').textContent()) ?? '', /^\d+ cards? on the controller/);
  assert.equal(simulated.cards.has(BY_HAND), false, 'the card is gone from the board');
  assert.ok(simulated.cards.has(CARD_NUMBER), 'the handed-over card stays');
  await assertAxe(page, 'controller with a reconciliation report');

  // Seen again later: the last reconciliation, from the controller.
  await page.reload();
  await page.getByTestId('reconciliation').getByText(/Last reconciliation/).waitFor();
  assert.match((await page.getByTestId('reconciliation-removed').textContent()) ?? '', /Card …001/);

  simulated.setReachable(false);
  await page.getByTestId('reconcile-now').click();
  const problem = page.getByTestId('form-error');
  await problem.waitFor({ timeout: 15_000 });
  assert.match((await problem.textContent()) ?? '', /^The controller did not answer/);
  await assertAxe(page, 'controller that did not answer');
  simulated.setReachable(true);
  assertClean(watched);
});

test('delete: refused while a door is mapped (take its doors off first), done once the doors are free; renamed on the way', async () => {
  const s = await site();
  const simulated = await board();
  const controller = await setUp(s, simulated);
  const watched = await open(`/console/accounts/${s.account}/controllers/${controller.id}`);
  const { page } = watched;
  await page.getByRole('heading', { name: 'Controller Hall board' }).waitFor();

  await page.getByTestId('edit-controller-name').fill('Lobby board');
  await page.getByTestId('save-controller').click();
  await page.getByRole('heading', { name: 'Controller Lobby board' }).waitFor();

  await page.getByTestId('delete-controller').click();
  const dialog = page.getByRole('dialog', { name: 'Delete the controller Lobby board?' });
  await dialog.waitFor();
  assert.match((await dialog.textContent()) ?? '', new RegExp(`serial ${simulated.serial}`));
  await assertAxe(page, 'delete confirmation');
  await page.getByTestId('confirm-yes').click();
  const refused = page.getByTestId('form-error');
  await refused.waitFor();
  assert.match((await refused.textContent()) ?? '', /take its doors off first/);
  assert.equal((await ctx.service.admin('GET', `/admin/v1/controllers/${controller.id}`)).status, 200, 'still there');

  // Door 2 onto Back (door 1 stays on Front); then both off, and the delete goes through.
  await pickLock(page, 'door-2', s.back);
  await page.getByTestId('save-controller-doors').click();
  await page.getByTestId(`controller-doors-${controller.id}`).getByRole('link', { name: 'Back door' }).waitFor();
  assert.deepEqual((await admin<ControllerView>('GET', `/admin/v1/controllers/${controller.id}`)).door_locks, [
    { door: 1, lock_id: s.front },
    { door: 2, lock_id: s.back },
  ]);
  await pickLock(page, 'door-1', '');
  await pickLock(page, 'door-2', '');
  await page.getByTestId('save-controller-doors').click();
  await page.getByText('no doors mapped').waitFor();
  await page.getByTestId('delete-controller').click();
  await page.getByTestId('confirm-yes').click();
  await page.getByText('No controllers yet.').waitFor();
  assert.equal(new URL(page.url()).pathname, `/console/accounts/${s.account}/controllers`);
  assert.equal((await ctx.service.admin('GET', `/admin/v1/controllers/${controller.id}`)).status, 404);
  assertClean(watched);
});

test('an account on another locking system is told so, and moved to UHPPOTE controllers in its settings', async () => {
  const account = await createAccount(ctx.service, { name: 'Not on boards' });
  const watched = await open(`/console/accounts/${account.id}/controllers`);
  const { page } = watched;
  const notice = page.getByTestId('not-uhppote');
  await notice.waitFor();
  assert.match((await notice.textContent()) ?? '', /does not use UHPPOTE controllers/);
  assert.equal(await page.getByTestId('create-controller-form').count(), 0, 'no form the service would refuse');
  await assertAxe(page, 'controllers of an account not on UHPPOTE');
  await notice.getByRole('link', { name: 'Settings' }).click();
  await page.getByTestId('locking-system').selectOption({ label: 'UHPPOTE controllers' });
  await page.getByTestId('save-settings').click();
  await page.getByText('Saved.').waitFor();
  assert.equal((await admin<{ locking_system: string | null }>('GET', `/admin/v1/accounts/${account.id}`)).locking_system, 'uhppote');
  await page.getByTestId('tab-controllers').click();
  await page.getByTestId('create-controller-form').waitFor();
  assert.equal(await page.getByTestId('not-uhppote').count(), 0);
  assertClean(watched);
});

test('no sideways scrolling at 375 px: the list with its form, and a controller with its report', async () => {
  const s = await site();
  const simulated = await board();
  const controller = await setUp(s, simulated);
  await admin('PATCH', `/admin/v1/controllers/${controller.id}`, { name: 'A board with a rather long name for a narrow phone screen, LobbyNorthEntranceSecondFloor' });
  simulated.cards.set(BY_HAND, { card: BY_HAND, from: '2020-01-01', to: '2099-12-31', doors: [1, 0, 0, 0], pin: 0 });
  await admin('POST', `/admin/v1/controllers/${controller.id}/reconcile`);
  const watched = await openConsoleSignedIn(browser, ctx.service.url, ADMIN_TOKEN, `/console/accounts/${s.account}/controllers`, { viewport: { width: 375, height: 740 }, bypassCSP: true });
  const { page } = watched;
  const wide: string[] = [];
  const measure = async (what: string) => {
    const size = await page.evaluate(() => {
      const root = document.scrollingElement as Element;
      return { scroll: root.scrollWidth, client: root.clientWidth };
    });
    if (size.scroll > size.client) wide.push(`${what}: ${size.scroll} > ${size.client}`);
  };
  await page.getByTestId(`controller-row-${controller.id}`).waitFor();
  await page.getByTestId('new-door-4').getByText(/\d+ found/).waitFor();
  await measure('list and form');
  await assertAxe(page, 'controllers list at 375 px');
  await page.getByTestId(`open-controller-${controller.id}`).click();
  await page.getByTestId('reconciliation').waitFor();
  await page.getByTestId('door-2').getByText(/\d+ found/).waitFor();
  await measure('a controller');
  await assertAxe(page, 'a controller at 375 px');
  assert.deepEqual(wide, [], 'pages wider than the phone');
  assertClean(watched);
});
