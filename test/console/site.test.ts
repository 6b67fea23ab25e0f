// The console for a real site (issue 27, items 3 and 9), in a real browser (Debian's Chromium, as in
// browser.test.ts): key forms that start with the account's default security groups ticked; a person edited
// (the API's field errors at the field) and deleted after a confirmation naming them; times with their time zone;
// CSV export of the access log and of people (quoted, formula-safe); person and lock pickers in the access
// log's filters; sortable tables (aria-sort); a webhook delivery's payload; no sideways scrolling at 375 px.
// axe runs on each page with its forms open. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test, type TestContext } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { assertCleanPage, axeCheck, describeViolations, openConsoleSignedIn, useBrowser, type WatchedPage } from '../helpers/browser.ts';
import { createAccount, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

const browser = useBrowser();
const ctx = useTestService(async (service) => {
  const account = await createAccount(service, { name: 'Site' });
  await createSecurityGroup(service, account.rootLocationId, 'staff', { title: 'Staff', is_default: true });
  await createSecurityGroup(service, account.rootLocationId, 'lab', { title: 'Lab' });
  const front = await createLock(service, account.rootLocationId, { name: 'Front door' });
  const back = await createLock(service, account.rootLocationId, { name: 'Back door' });
  const person = async (body: Record<string, unknown>) => {
    const answer = await service.admin<{ id: string }>('POST', '/admin/v1/people', { location_id: account.rootLocationId, ...body });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  };
  const ana = await person({ name: 'Ana Alves', email: 'ana@example.com' });
  const bo = await person({ name: '=Bo "the boss", Berg', email: 'bo@example.com', phone: '+4915112345678' });
  site = { account: account.id, root: account.rootLocationId, front, back, ana, bo };
});

let site: { account: number; root: number; front: number; back: number; ana: string; bo: string } | undefined;

const openSignedIn = (path: string, options: BrowserContextOptions = {}): Promise<WatchedPage> => openConsoleSignedIn(browser, ctx.service.url, ADMIN_TOKEN, path, options);
const assertClean = (watched: WatchedPage): void => assertCleanPage(watched, ctx.service.url);

function needsSite(t: TestContext): NonNullable<typeof site> | undefined {
  if (!site) t.skip('needs the account the setup makes');
  return site;
}

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const answer = await ctx.service.admin<T>(method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${answer.text}`);
  return answer.body;
}

async function assertAxe(page: Page, what: string): Promise<void> {
  const violations = await axeCheck(page);
  assert.equal(violations.length, 0, `${what}\n${describeViolations(violations)}`);
}

const checked = (page: Page, testid: string, label: RegExp) => page.getByTestId(testid).getByRole('checkbox', { name: label }).isChecked();

test('key forms start with the default security groups ticked, and say so', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn(`/console/accounts/${s.account}/people/${s.ana}`, { bypassCSP: true });
  const { page } = watched;
  await page.getByTestId('hand-over-groups').getByRole('checkbox', { name: /Staff/ }).waitFor();
  for (const form of ['issue-key-groups', 'hand-over-groups']) {
    assert.equal(await checked(page, form, /Staff/), true, `${form}: the default group is ticked`);
    assert.equal(await checked(page, form, /Lab/), false, `${form}: another group is not`);
    assert.match((await page.getByTestId(form).textContent()) ?? '', /Default groups are ticked; untick to leave them out/);
  }
  await page.getByTestId('hand-over-name').fill('Badge A');
  await page.getByTestId('hand-over').click();
  await page.getByRole('cell', { name: 'Badge A', exact: true }).waitFor();
  // The key's row (read back from the API) has the default group, as ticked.
  const row = page.locator('tr', { hasText: 'Badge A' });
  assert.match((await row.textContent()) ?? '', /staff/);
  assert.doesNotMatch((await row.textContent()) ?? '', /lab/);
  // Unticked, a default group is left out.
  await page.getByTestId('hand-over-groups').getByRole('checkbox', { name: /Staff/ }).uncheck();
  await page.getByTestId('hand-over-name').fill('Badge B');
  await page.getByTestId('hand-over').click();
  const rowB = page.locator('tr', { hasText: 'Badge B' });
  await rowB.waitFor();
  assert.doesNotMatch((await rowB.textContent()) ?? '', /staff/);
  // Changing a key starts from its own groups.
  await page.locator('tr', { hasText: 'Badge A' }).getByRole('button', { name: /^Change key/ }).click();
  assert.equal(await checked(page, 'change-key-groups', /Staff/), true);
  assert.equal(await checked(page, 'change-key-groups', /Lab/), false);
  await page.getByTestId('change-key-groups').getByRole('checkbox', { name: /Lab/ }).check();
  await assertAxe(page, 'person page with the key forms open');
  await page.getByTestId('save-key').click();
  await page.getByTestId('change-key').waitFor({ state: 'detached' });
  await waitFor(async () => /lab/.test((await page.locator('tr', { hasText: 'Badge A' }).textContent()) ?? ''), 'the changed groups show');
  assertClean(watched);
});
