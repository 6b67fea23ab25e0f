// The console's pages for running a site's access rules, in a real browser (Debian's Chromium, as in
// browser.test.ts): cards and fobs handed over with their credential, the credential shown and changed on the
// person page (a duplicate refused with the service's message), security groups' weekly windows in words and
// edited, location time zones, and the account's offline access limit. Each step works through the pages and
// then reads what the operator API holds. axe-core and the 360 px reflow check run on every page these touch,
// with their forms open. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { BrowserContextOptions, Locator, Page } from 'playwright-core';
import { DESKTOP, PHONE, assertCleanPage, axeCheck, describeViolations, openConsoleSignedIn, useBrowser, type WatchedPage } from '../helpers/browser.ts';
import { waitFor } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

const browser = useBrowser();
const ctx = useTestService();

/** The account the steps work in, made through the operator API by the first step. */
let site: { account: number; root: number; department: number; person: string } | undefined;

type Watched = WatchedPage;
const openSignedIn = (path: string, options: BrowserContextOptions = {}): Promise<Watched> => openConsoleSignedIn(browser, ctx.service.url, ADMIN_TOKEN, path, options);
const assertClean = (watched: Watched): void => assertCleanPage(watched, ctx.service.url);

function needsSite(t: TestContext): typeof site {
  if (!site) t.skip('needs the account the first step makes');
  return site;
}

const accountPath = (tab: string) => `/console/accounts/${site?.account}/${tab}`;

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const answer = await ctx.service.admin<T>(method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${answer.text}`);
  return answer.body;
}

/** Polls `check` until it holds; fails after 10 s, like a locator's wait. */
function until(check: () => Promise<boolean>, what: string): Promise<void> {
  return waitFor(check, what, 10_000);
}

interface OperatorKey {
  id: number;
  name: string;
  state: string;
  credential: string | null;
}
interface Group {
  id: number;
  code: string;
  title: string;
  windows: { days: string[]; start: string; end: string }[] | null;
}
interface Location {
  id: number;
  name: string;
  time_zone: string | null;
  effective_time_zone: string;
}

const groupsHeld = async () => (await admin<{ data: Group[] }>('GET', `/admin/v1/security_groups?account_id=${site?.account}&limit=200`)).data;
const locationHeld = async (id: number) => {
  const page = await admin<{ data: Location[] }>('GET', `/admin/v1/locations?account_id=${site?.account}&limit=200`);
  const found = page.data.find((l) => l.id === id);
  assert.ok(found, `location ${id} is listed`);
  return found;
};

/** The key of the person named `name`, read through the operator API (its id from the person's key list). */
async function keyNamed(page: Page, name: string): Promise<OperatorKey | undefined> {
  const row = page.locator('[data-testid^="key-row-"]').filter({ hasText: name });
  if ((await row.count()) === 0) return undefined;
  const id = Number((await row.first().getAttribute('data-testid'))?.replace('key-row-', ''));
  return admin<OperatorKey>('GET', `/admin/v1/keys/${id}`);
}

/** The names of the person's keys as the API holds them (the public list, through the console's session). */
async function keyNames(page: Page): Promise<string[]> {
  const response = await page.request.get(`${ctx.service.url}/console/api/v1/keys?person_id=${site?.person}`, { headers: { 'latchkey-account': String(site?.account) } });
  assert.equal(response.status(), 200, await response.text());
  return ((await response.json()) as { data: { name: string }[] }).data.map((k) => k.name).sort();
}

/** The field error under a control of `form`, in words. */
function fieldError(form: Locator): Locator {
  return form.locator('.field-error');
}

// ---------------------------------------------------------------------------------------------------------

test('a site to run: an account with a department and a person, made through the operator API', async () => {
  const account = await admin<{ id: number; root_location: { id: number } }>('POST', '/admin/v1/accounts', { name: 'Harbour Works' });
  const department = await admin<{ id: number }>('POST', '/admin/v1/locations', { parent_id: account.root_location.id, name: 'Workshop' });
  const person = await admin<{ id: string }>('POST', '/admin/v1/people', { location_id: account.root_location.id, name: 'Lin Yu', email: 'lin@example.com' });
  site = { account: account.id, root: account.root_location.id, department: department.id, person: person.id };
});

test('a card handed over with its credential: shown on the person page, changed and removed there; a duplicate is refused with the service message', async (t) => {
  if (!needsSite(t)) return;
  const watched = await openSignedIn(`${accountPath('people')}/${site?.person}`);
  const { page } = watched;
  const handOver = page.getByTestId('hand-over-form');
  // The field says which forms it takes.
  await handOver.getByText('wiegand26:<facility>:<card>', { exact: false }).waitFor();

  // Typed loosely, held normalised.
  await handOver.getByTestId('hand-over-type').selectOption('card');
  await handOver.getByTestId('hand-over-name').fill('Badge 1');
  await handOver.getByLabel('Credential').fill(' W26:012:34567 ');
  await handOver.getByTestId('hand-over').click();
  const badgeRow = page.locator('[data-testid^="key-row-"]').filter({ hasText: 'Badge 1' });
  await badgeRow.getByText('wiegand26:12:34567', { exact: true }).waitFor();
  const badge = await keyNamed(page, 'Badge 1');
  assert.ok(badge);
  assert.equal(badge.credential, 'wiegand26:12:34567');
  await until(async () => (await handOver.getByTestId('hand-over-credential').inputValue()) === '', 'the hand-over form is cleared');

  // Another key with the same credential: the service refuses it, the form says why, nothing is made.
  await handOver.getByTestId('hand-over-type').selectOption('fob');
  await handOver.getByTestId('hand-over-name').fill('Fob 2');
  await handOver.getByTestId('hand-over-credential').fill('wiegand26:12:34567');
  await handOver.getByTestId('hand-over').click();
  await handOver.getByTestId('form-error').waitFor();
  await fieldError(handOver).filter({ hasText: 'already presents this credential' }).waitFor();
  assert.equal(await handOver.getByTestId('hand-over-credential').getAttribute('aria-invalid'), 'true');
  assert.deepEqual(await keyNames(page), ['Badge 1'], 'no key was handed over');

  // A raw UID instead: accepted.
  await handOver.getByTestId('hand-over-credential').fill('uid:04A1B2C3');
  await handOver.getByTestId('hand-over').click();
  const fobRow = page.locator('[data-testid^="key-row-"]').filter({ hasText: 'Fob 2' });
  await fobRow.getByText('uid:04a1b2c3', { exact: true }).waitFor();
  assert.equal((await keyNamed(page, 'Fob 2'))?.credential, 'uid:04a1b2c3');

  // Changed later from the key's row (PATCH /admin/v1/keys/{id}).
  await page.getByTestId(`edit-credential-${badge.id}`).click();
  const edit = page.getByTestId('edit-credential-form');
  assert.equal(await edit.getByTestId('credential-input').inputValue(), 'wiegand26:12:34567', 'the form starts from the key credential');
  await edit.getByTestId('credential-input').fill('wiegand34:300:1');
  await edit.getByTestId('save-credential').click();
  await edit.waitFor({ state: 'detached' });
  await page.getByTestId(`key-credential-${badge.id}`).getByText('wiegand34:300:1', { exact: true }).waitFor();
  assert.equal((await admin<OperatorKey>('GET', `/admin/v1/keys/${badge.id}`)).credential, 'wiegand34:300:1');

  // To the fob's credential: refused with the service's message, the key keeps its own.
  await page.getByTestId(`edit-credential-${badge.id}`).click();
  await edit.getByTestId('credential-input').fill('UID:04a1b2c3');
  await edit.getByTestId('save-credential').click();
  await edit.getByTestId('form-error').waitFor();
  await fieldError(edit).filter({ hasText: 'already presents this credential' }).waitFor();
  assert.equal((await admin<OperatorKey>('GET', `/admin/v1/keys/${badge.id}`)).credential, 'wiegand34:300:1');
  // A malformed one: the service's words on the accepted forms.
  await edit.getByTestId('credential-input').fill('12345');
  await edit.getByTestId('save-credential').click();
  await fieldError(edit).filter({ hasText: 'Unknown credential format' }).waitFor();

  // Removed: the key presents none.
  await edit.getByTestId('remove-credential').click();
  await edit.waitFor({ state: 'detached' });
  await page.getByTestId(`key-credential-${badge.id}`).getByText('none', { exact: true }).waitFor();
  assert.equal((await admin<OperatorKey>('GET', `/admin/v1/keys/${badge.id}`)).credential, null);
  // Its old credential is free again: the fob can take it.
  const fob = await keyNamed(page, 'Fob 2');
  assert.ok(fob);
  await page.getByTestId(`edit-credential-${fob.id}`).click();
  await edit.getByTestId('credential-input').fill('wiegand34:300:1');
  await edit.getByTestId('save-credential').click();
  await page.getByTestId(`key-credential-${fob.id}`).getByText('wiegand34:300:1', { exact: true }).waitFor();
  assert.equal((await admin<OperatorKey>('GET', `/admin/v1/keys/${fob.id}`)).credential, 'wiegand34:300:1');
  assertClean(watched);
});

test('security groups: created with weekly windows and at any time, shown in words, windows changed, a bad time refused, set back to any time', async (t) => {
  if (!needsSite(t)) return;
  const watched = await openSignedIn(accountPath('security-groups'));
  const { page } = watched;
  const create = page.getByTestId('create-security-group-form');

  // Office hours on weekdays (the new row's default) and Saturday and Sunday mornings.
  await create.getByTestId('group-code').fill('staff');
  await create.getByTestId('group-title').fill('Staff');
  await create.getByTestId('windows-limited').check();
  await create.getByTestId('add-window').click();
  for (const day of ['mon', 'tue', 'wed', 'thu', 'fri']) await create.getByTestId(`window-1-${day}`).uncheck();
  await create.getByTestId('window-1-sat').check();
  await create.getByTestId('window-1-sun').check();
  await create.getByTestId('window-1-start').fill('09:00');
  await create.getByTestId('window-1-end').fill('13:00');
  await create.getByTestId('create-security-group').click();
  const staffRow = page.locator('[data-testid^="group-row-"]').filter({ hasText: 'staff' });
  await staffRow.getByText('Mon–Fri 07:00–19:00; Sat, Sun 09:00–13:00', { exact: true }).waitFor();
  let staff = (await groupsHeld()).find((g) => g.code === 'staff');
  assert.ok(staff);
  assert.deepEqual(staff.windows, [
    { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '19:00' },
    { days: ['sat', 'sun'], start: '09:00', end: '13:00' },
  ]);

  // The form starts afresh: "only in these" shows the new row, not the staff group's windows (kept before).
  await create.getByTestId('windows-limited').check();
  assert.equal(await create.getByTestId('window-1-start').count(), 0, "not the last group's second window");
  await create.getByTestId('windows-any').check();

  // A group without windows opens at any time.
  await create.getByTestId('group-code').fill('cleaners');
  await create.getByTestId('group-title').fill('Cleaners');
  await create.getByTestId('create-security-group').click();
  const cleanersRow = page.locator('[data-testid^="group-row-"]').filter({ hasText: 'cleaners' });
  await cleanersRow.getByText('At any time', { exact: true }).waitFor();
  const cleaners = (await groupsHeld()).find((g) => g.code === 'cleaners');
  assert.ok(cleaners);
  assert.equal(cleaners.windows, null);

  // Cleaners: every night, past midnight.
  await page.getByTestId(`edit-group-${cleaners.id}`).click();
  const edit = page.getByTestId('edit-group-form');
  await edit.getByTestId('windows-limited').check();
  await edit.getByTestId('window-0-sat').check();
  await edit.getByTestId('window-0-sun').check();
  await edit.getByTestId('window-0-start').fill('22:00');
  await edit.getByTestId('window-0-end').fill('06:00');
  await edit.getByTestId('save-group').click();
  await edit.waitFor({ state: 'detached' });
  await page.getByTestId(`group-windows-${cleaners.id}`).getByText('Every day 22:00–06:00 (into the next day)', { exact: true }).waitFor();
  assert.deepEqual((await groupsHeld()).find((g) => g.id === cleaners.id)?.windows, [
    { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '22:00', end: '06:00' },
  ]);

  // Staff: the weekend row removed, the title changed, weekdays until midnight (24:00).
  await page.getByTestId(`edit-group-${staff.id}`).click();
  assert.equal(await edit.getByTestId('window-1-start').inputValue(), '09:00', 'the form starts from the group windows');
  await edit.getByTestId('remove-window-1').click();
  assert.equal(await edit.getByTestId('window-1').count(), 0);
  await edit.getByTestId('edit-group-title').fill('Staff (weekdays)');
  await edit.getByTestId('window-0-end').fill('24:00');
  await edit.getByTestId('save-group').click();
  await edit.waitFor({ state: 'detached' });
  await page.getByTestId(`group-windows-${staff.id}`).getByText('Mon–Fri 07:00–24:00', { exact: true }).waitFor();
  staff = (await groupsHeld()).find((g) => g.id === staff?.id);
  assert.equal(staff?.title, 'Staff (weekdays)');
  assert.deepEqual(staff?.windows, [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '24:00' }]);

  // A time that is not one: the service refuses, the row says so, nothing changes.
  await page.getByTestId(`edit-group-${staff?.id}`).click();
  await edit.getByTestId('window-0-start').fill('25:00');
  await edit.getByTestId('save-group').click();
  await edit.getByTestId('form-error').waitFor();
  await edit.getByTestId('window-0').locator('.field-error').filter({ hasText: 'windows[0].start' }).waitFor();
  assert.deepEqual((await groupsHeld()).find((g) => g.id === staff?.id)?.windows, staff?.windows);

  // Back to any time.
  await edit.getByTestId('windows-any').check();
  assert.equal(await edit.getByTestId('window-0').count(), 0);
  await edit.getByTestId('save-group').click();
  await edit.waitFor({ state: 'detached' });
  await page.getByTestId(`group-windows-${staff?.id}`).getByText('At any time', { exact: true }).waitFor();
  assert.equal((await groupsHeld()).find((g) => g.id === staff?.id)?.windows, null);
  assertClean(watched);
});

test("time zones: the root's and a department's set, the effective one shown in the tree, an unknown name refused, a cleared one inherited", async (t) => {
  if (!needsSite(t)) return;
  const watched = await openSignedIn(accountPath('locations'));
  const { page } = watched;
  const root = page.getByTestId(`location-zone-${site?.root}`);
  const department = page.getByTestId(`location-zone-${site?.department}`);
  await root.filter({ hasText: 'time zone UTC (default)' }).waitFor();
  await department.filter({ hasText: 'time zone UTC (from above)' }).waitFor();
  const form = page.getByTestId('time-zone-form');
  // The field suggests the browser's IANA names.
  assert.equal(await page.locator('#time-zone-names option[value="Europe/Berlin"]').count(), 1);
  assert.equal(await form.getByTestId('zone-input').getAttribute('list'), 'time-zone-names');

  // The root (the form's first choice): its doors and the department's read Berlin time.
  await form.getByTestId('zone-input').fill('Europe/Berlin');
  await form.getByTestId('save-time-zone').click();
  await form.getByRole('status').waitFor();
  await root.filter({ hasText: 'time zone Europe/Berlin (set here)' }).waitFor();
  await department.filter({ hasText: 'time zone Europe/Berlin (from above)' }).waitFor();
  const rootHeld = await locationHeld(site?.root as number);
  assert.equal(rootHeld.time_zone, 'Europe/Berlin');
  assert.equal(rootHeld.effective_time_zone, 'Europe/Berlin');
  const inherited = await locationHeld(site?.department as number);
  assert.equal(inherited.time_zone, null);
  assert.equal(inherited.effective_time_zone, 'Europe/Berlin');

  // The department its own.
  await form.getByTestId('zone-location').selectOption(String(site?.department));
  assert.equal(await form.getByTestId('zone-input').inputValue(), '', 'the field shows the department own zone: none');
  await form.getByTestId('zone-input').fill('America/New_York');
  await form.getByTestId('save-time-zone').click();
  await department.filter({ hasText: 'time zone America/New_York (set here)' }).waitFor();
  const own = await locationHeld(site?.department as number);
  assert.equal(own.time_zone, 'America/New_York');
  assert.equal(own.effective_time_zone, 'America/New_York');

  // Not an IANA name: refused in the service's words, nothing changes.
  await form.getByTestId('zone-input').fill('Mars/Olympus_Mons');
  await form.getByTestId('save-time-zone').click();
  await form.locator('.field-error').filter({ hasText: 'is not an IANA time-zone name' }).waitFor();
  assert.equal((await locationHeld(site?.department as number)).time_zone, 'America/New_York');

  // Cleared: the department reads the root's again.
  await form.getByTestId('zone-input').fill('');
  await form.getByTestId('save-time-zone').click();
  await department.filter({ hasText: 'time zone Europe/Berlin (from above)' }).waitFor();
  const cleared = await locationHeld(site?.department as number);
  assert.equal(cleared.time_zone, null);
  assert.equal(cleared.effective_time_zone, 'Europe/Berlin');
  assertClean(watched);
});

test('a department renamed: the form shows its name, the tree and the API read the new one; the crumbs name the account', async (t) => {
  if (!needsSite(t)) return;
  const watched = await openSignedIn(accountPath('locations'));
  const { page } = watched;
  assert.match((await page.locator('.crumbs').textContent()) ?? '', new RegExp(`^Overview / Harbour Works \\(account ${site?.account}\\) / Locations$`));
  const form = page.getByTestId('rename-location-form');
  await form.getByTestId('rename-location').selectOption(String(site?.department));
  assert.equal(await form.getByTestId('rename-location-name').inputValue(), 'Workshop', 'the field starts with its name');
  await form.getByTestId('rename-location-name').fill('Boat shed');
  await form.getByTestId('save-location-name').click();
  await form.getByRole('status').filter({ hasText: 'Workshop is now Boat shed' }).waitFor();
  await page.getByTestId(`location-${site?.department}`).filter({ hasText: 'Boat shed' }).waitFor();
  assert.equal((await locationHeld(site?.department as number)).name, 'Boat shed');
  // Spaces only: refused in the service's words, the name stays.
  await form.getByTestId('rename-location-name').fill('   ');
  await form.getByTestId('save-location-name').click();
  await fieldError(form).waitFor();
  assert.equal((await locationHeld(site?.department as number)).name, 'Boat shed');
  assertClean(watched);
});

test('a key that reads "sent" says what it waits for: its gateways, named, linked, offline; one that has applied it drops out', async (t) => {
  if (!needsSite(t)) return;
  const gateway = await admin<{ id: number; name: string }>('POST', '/admin/v1/gateways', { location_id: site?.root, name: 'Yard gateway' });
  const shed = await admin<{ id: number; name: string }>('POST', '/admin/v1/gateways', { location_id: site?.root, name: 'Shed gateway' });
  await admin('POST', '/admin/v1/security_groups', { location_id: site?.root, code: 'yard', title: 'Yard' });
  await admin('POST', '/admin/v1/locks', { location_id: site?.root, name: 'Yard gate', gateway_id: gateway.id, security_groups: ['yard'] });
  await admin('POST', '/admin/v1/locks', { location_id: site?.root, name: 'Shed door', gateway_id: shed.id, security_groups: ['yard'] });
  const card = await admin<{ id: number; state: string }>('POST', '/admin/v1/keys', { person_id: site?.person, type: 'card', name: 'Yard badge', security_groups: ['yard'], credential: 'uid:0badcafe' });
  // A new credential: the gateways, never connected, have not applied it.
  const changed = await admin<{ state: string; waiting_for_gateways: number[] }>('PATCH', `/admin/v1/keys/${card.id}`, { credential: 'uid:0badcaff' });
  assert.equal(changed.state, 'sent');
  assert.deepEqual(changed.waiting_for_gateways, [gateway.id, shed.id]);
  const watched = await openSignedIn(`${accountPath('people')}/${site?.person}`);
  const { page } = watched;
  const waiting = page.getByTestId(`key-waiting-${card.id}`);
  const offline = '(offline: it gets the change when it is back)';
  await waiting.filter({ hasText: `Waiting for the gateways Yard gateway ${offline}, Shed gateway ${offline} to apply the change.` }).waitFor();
  assert.equal(await waiting.getByRole('link', { name: 'Yard gateway' }).getAttribute('href'), `${accountPath('gateways')}#gateway-${gateway.id}`);
  // The shed's gateway has applied it (as an instance records it): the key still reads sent, and the page names
  // only the gateway still waiting, without a reload.
  await ctx.database.db.query('DELETE FROM gateway_access_pending WHERE key_id = $1 AND gateway_id = $2', [card.id, shed.id]);
  await waiting.filter({ hasText: `Waiting for the gateway Yard gateway ${offline} to apply the change.` }).waitFor({ timeout: 15_000 });
  assertClean(watched);
});

test('settings: the offline access limit in days, held in seconds', async (t) => {
  if (!needsSite(t)) return;
  const watched = await openSignedIn(accountPath('settings'));
  const { page } = watched;
  const days = page.getByTestId('offline-access-days');
  assert.equal(await days.inputValue(), '7', 'the default, 604800 s, in days');
  await days.fill('2.5');
  await page.getByTestId('save-settings').click();
  await page.getByTestId('account-settings-form').getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  assert.equal((await admin<{ offline_access_seconds: number }>('GET', `/admin/v1/accounts/${site?.account}`)).offline_access_seconds, 216_000);

  // Over the service's limit (90 days): the field's own range check stops it, nothing is saved.
  await days.fill('120');
  await page.getByTestId('save-settings').click();
  assert.equal(await days.evaluate((input) => (input as HTMLInputElement).validity.valid), false, 'the field says 90 days at most');
  assert.equal((await admin<{ offline_access_seconds: number }>('GET', `/admin/v1/accounts/${site?.account}`)).offline_access_seconds, 216_000, 'nothing saved');

  // A limit set in seconds elsewhere is shown in days and kept when other settings are saved.
  await admin('PATCH', `/admin/v1/accounts/${site?.account}`, { offline_access_seconds: 3600 });
  await page.reload();
  await days.waitFor();
  assert.equal(await days.inputValue(), '0.0417');
  await page.getByTestId('phone-key-allowance').fill('5');
  await page.getByTestId('save-settings').click();
  await page.getByTestId('account-settings-form').getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
  const account = await admin<{ offline_access_seconds: number; phone_key_allowance: number }>('GET', `/admin/v1/accounts/${site?.account}`);
  assert.equal(account.phone_key_allowance, 5);
  assert.equal(account.offline_access_seconds, 3600, 'not rounded to what the form shows');
  assertClean(watched);
});

test('the access pages with their forms open: no serious or critical axe violation at 1,440 and 360 px, no sideways scrolling at 360 px', async (t) => {
  if (!needsSite(t)) return;
  const failures: string[] = [];
  for (const viewport of [DESKTOP, PHONE]) {
    // axe-core is injected as an inline script, which the console's CSP refuses: these contexts bypass it.
    const { page } = await openSignedIn('/console', { viewport, bypassCSP: true });
    const check = async (name: string) => {
      await page.getByText('Loading…').first().waitFor({ state: 'detached' });
      const violations = await axeCheck(page);
      if (violations.length > 0) failures.push(`${name} at ${viewport.width} px:\n${describeViolations(violations)}`);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      if (width > viewport.width) failures.push(`${name} at ${viewport.width} px: the page is ${width} px wide`);
    };

    await page.goto(`${ctx.service.url}${accountPath('people')}/${site?.person}`);
    const edit = page.locator('[data-testid^="edit-credential-"]').first();
    await edit.click();
    await page.getByTestId('edit-credential-form').waitFor();
    await check('person, a credential being changed');

    await page.goto(`${ctx.service.url}${accountPath('security-groups')}`);
    const group = page.locator('[data-testid^="edit-group-"]').first();
    await group.click();
    const form = page.getByTestId('edit-group-form');
    await form.getByTestId('windows-limited').check();
    await form.getByTestId('add-window').click();
    await page.getByTestId('create-security-group-form').getByTestId('windows-limited').check();
    await check('security groups, windows being edited');

    await page.goto(`${ctx.service.url}${accountPath('locations')}`);
    await page.getByTestId('time-zone-form').waitFor();
    await check('locations and time zones');

    await page.goto(`${ctx.service.url}${accountPath('settings')}`);
    await page.getByTestId('offline-access-days').waitFor();
    await check('settings');
  }
  assert.deepEqual(failures, [], failures.join('\n\n'));
});
