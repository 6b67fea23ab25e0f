// The console for a real site (issue 27, items 3 and 9), in a real browser (Debian's Chromium, as in
// browser.test.ts): key forms that start with the account's default security groups ticked; a person edited
// (the API's field errors at the field) and deleted after a confirmation naming them; times with their time zone;
// CSV export of the access log and of people (quoted, formula-safe); person and lock pickers in the access
// log's filters; sortable tables (aria-sort); a webhook delivery's payload; no sideways scrolling at 375 px.
// axe runs on each page with its forms open. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, test, type TestContext } from 'node:test';
import mqtt from 'mqtt';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { assertCleanPage, axeCheck, describeViolations, openConsoleSignedIn, useBrowser, type WatchedPage } from '../helpers/browser.ts';
import { createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { runSimulatedGateway, type SimulatedGateway } from '../helpers/simulated-gateway.ts';
import { createGateway, waitFor, type GatewayCredentials } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

let receiver: Receiver | undefined;
after(async () => {
  await stopSimulator();
  await receiver?.close();
});
const browser = useBrowser();
const ctx = useTestService(async (service) => {
  const account = await createAccount(service, { name: 'Site' });
  // The doors' location reads times in Berlin; the browser of the access-log test is in New York.
  const zoned = await service.admin('PATCH', `/admin/v1/locations/${account.rootLocationId}`, { time_zone: 'Europe/Berlin' });
  assert.equal(zoned.status, 200, zoned.text);
  const gateway = await createGateway(service, account.rootLocationId);
  await createSecurityGroup(service, account.rootLocationId, 'staff', { title: 'Staff', is_default: true });
  await createSecurityGroup(service, account.rootLocationId, 'lab', { title: 'Lab' });
  const front = await createLock(service, account.rootLocationId, { name: 'Front door', gateway_id: gateway.id });
  const back = await createLock(service, account.rootLocationId, { name: 'Back door', gateway_id: gateway.id });
  const person = async (body: Record<string, unknown>) => {
    const answer = await service.admin<{ id: string }>('POST', '/admin/v1/people', { location_id: account.rootLocationId, ...body });
    assert.equal(answer.status, 201, answer.text);
    return answer.body.id;
  };
  const ana = await person({ name: 'Ana Alves', email: 'ana@example.com' });
  const bo = await person({ name: '=Bo "the boss", Berg', email: 'bo@example.com', phone: '+4915112345678' });
  const card = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: bo, type: 'card', name: 'Bo card', security_groups: ['staff'] });
  assert.equal(card.status, 201, card.text);
  // A subscription to a local HTTPS receiver (its certificate trusted through NODE_EXTRA_CA_CERTS) that answers 500.
  receiver = await startReceiver();
  receiver.answer({ status: 500 });
  const hooks = await createApiKey(service, account.rootLocationId, ['webhooks:manage'], { name: 'Hooks' });
  const hook = await service.request<{ id: string }>('POST', '/v1/webhooks', { token: hooks.token, body: { url: receiver.url('/site-hook'), events: ['*'] } });
  assert.equal(hook.status, 201, hook.text);
  site = { account: account.id, root: account.rootLocationId, gateway, front, back, ana, bo, card: card.body.id, hook: hook.body.id };
}, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

let site: { account: number; root: number; gateway: GatewayCredentials; front: number; back: number; ana: string; bo: string; card: number; hook: string } | undefined;

let simulator: SimulatedGateway | undefined;

async function startSimulator(gateway: GatewayCredentials): Promise<void> {
  simulator = await runSimulatedGateway({ url: gateway.mqtt.url, id: gateway.id, password: gateway.mqtt.password, prefix: gateway.mqtt.topic_prefix });
}

async function stopSimulator(): Promise<void> {
  await simulator?.stop();
  simulator = undefined;
}

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

test('a person edited: the fields saved, the API\'s field errors shown at the field', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn(`/console/accounts/${s.account}/people/${s.ana}`, { bypassCSP: true });
  const { page } = watched;
  await page.getByTestId('edit-person').click();
  await page.getByTestId('edit-person-language').fill('not a language');
  await page.getByTestId('edit-person-phone').fill('');
  await page.getByTestId('save-person').click();
  const language = page.getByTestId('edit-person-language');
  await page.locator('[data-testid="edit-person-language"][aria-invalid="true"]').waitFor();
  const described = (await language.getAttribute('aria-describedby')) ?? '';
  const errorId = described.split(' ').find((id) => id.endsWith('-error'));
  assert.ok(errorId, 'the language field is described by its error');
  assert.notEqual((await page.locator(`#${errorId}`).textContent())?.trim(), '');
  await assertAxe(page, 'person page with the edit form showing an error');
  await language.fill('pt-BR');
  await page.getByTestId('edit-person-name').fill('Ana Alves Souza');
  await page.getByTestId('edit-person-company').fill('Acme');
  await page.getByTestId('edit-person-title').fill('Engineer');
  await page.getByTestId('edit-person-email').fill('ana.souza@example.com');
  await page.getByTestId('save-person').click();
  await page.getByTestId('edit-person-panel').waitFor({ state: 'detached' });
  await page.getByRole('heading', { name: 'Ana Alves Souza' }).waitFor();
  const held = await ctx.service.admin<{ data: { id: string; name: string; email: string; company_name: string; title: string; language: string }[] }>(
    'GET',
    `/admin/v1/people?account_id=${s.account}&q=Souza`,
  );
  const ana = held.body.data.find((p) => p.id === s.ana);
  assert.deepEqual(
    { name: ana?.name, email: ana?.email, company_name: ana?.company_name, title: ana?.title, language: ana?.language },
    { name: 'Ana Alves Souza', email: 'ana.souza@example.com', company_name: 'Acme', title: 'Engineer', language: 'pt-BR' },
  );
  assertClean(watched);
});

test('people: sortable by a header (aria-sort), exported as CSV that a spreadsheet reads as text', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn(`/console/accounts/${s.account}/people`, { bypassCSP: true, acceptDownloads: true });
  const { page } = watched;
  const names = async () => (await page.getByTestId('people-rows').locator('tr td:first-child').allTextContents()).map((n) => n.trim());
  await page.getByTestId('people-rows').waitFor();
  await page.getByTestId('sort-name').click();
  const header = page.getByRole('columnheader', { name: /Name/ });
  assert.equal(await header.getAttribute('aria-sort'), 'ascending');
  const up = await names();
  assert.deepEqual(up, up.slice().sort((a, b) => a.localeCompare(b, undefined, { sensitivity: 'base' })));
  await page.getByTestId('sort-name').click();
  assert.equal(await header.getAttribute('aria-sort'), 'descending');
  assert.deepEqual(await names(), up.slice().reverse());
  await assertAxe(page, 'people list sorted');

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('people-export').click()]);
  assert.match(download.suggestedFilename(), /^people-\d+-\d{4}-\d{2}-\d{2}\.csv$/);
  const text = (await readFile((await download.path()) as string, 'utf8')).replace(/^\uFEFF/, '');
  const lines = text.split('\r\n');
  assert.equal(lines[0], 'id,name,email,phone,company,title,language,location');
  // A name starting with = is a formula to a spreadsheet: prefixed with ', then quoted for its quotes and comma.
  assert.ok(lines.includes(`${s.bo},"'=Bo ""the boss"", Berg",bo@example.com,'+4915112345678,,,,Site`), text);
  // Only what the search shows.
  await page.getByTestId('people-search').fill('bo@example');
  await page.getByTestId('people-search-form').getByRole('button', { name: 'Find' }).click();
  await page.getByTestId(`person-link-${s.ana}`).waitFor({ state: 'detached' });
  const [found] = await Promise.all([page.waitForEvent('download'), page.getByTestId('people-export').click()]);
  const foundLines = (await readFile((await found.path()) as string, 'utf8')).trim().split('\r\n');
  assert.equal(foundLines.length, 2, foundLines.join('\n'));
  assertClean(watched);
});

test('a person deleted after a confirmation that names them and what goes', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const victim = await admin<{ id: string }>('POST', '/admin/v1/people', { location_id: s.root, name: 'Cy Cole' });
  await admin('POST', '/admin/v1/keys', { person_id: victim.id, type: 'fob', name: 'Fob C' });
  const watched = await openSignedIn(`/console/accounts/${s.account}/people/${victim.id}`, { bypassCSP: true });
  const { page } = watched;
  await page.getByRole('cell', { name: 'Fob C', exact: true }).waitFor();
  await page.getByTestId('delete-person').click();
  const dialog = page.getByRole('dialog', { name: 'Delete Cy Cole?' });
  await dialog.waitFor();
  assert.match((await dialog.textContent()) ?? '', /Fob C/);
  await assertAxe(page, 'the delete confirmation');
  // Cancel keeps the person.
  await page.getByTestId('confirm-cancel').click();
  await dialog.waitFor({ state: 'detached' });
  assert.equal((await ctx.service.admin('GET', `/admin/v1/people?account_id=${s.account}&q=Cy%20Cole`)).text.includes(victim.id), true);
  await page.getByTestId('delete-person').click();
  await page.getByTestId('confirm-yes').click();
  await page.getByTestId('person-deleted').waitFor();
  assert.equal((await ctx.service.admin('GET', `/admin/v1/people?account_id=${s.account}&q=Cy%20Cole`)).text.includes(victim.id), false);
  assertClean(watched);
});

test("access log: times in the zone of the lock's location, person and lock pickers, sortable, CSV of what the filters show", async (t) => {
  const s = needsSite(t);
  if (!s) return;
  await startSimulator(s.gateway);
  simulator?.type(`grant ${s.front} ${s.card}`);
  simulator?.type(`grant ${s.back} ${s.card}`);
  simulator?.type(`close ${s.front}`);
  // A card nobody holds: denied, naming no person.
  simulator?.type(`deny ${s.front}`);
  const watched = await openSignedIn(`/console/accounts/${s.account}/events`, { bypassCSP: true, acceptDownloads: true, timezoneId: 'America/New_York' });
  const { page } = watched;
  const rows = page.locator('[data-testid^="event-row-"]');
  await rows.filter({ hasText: 'door.closed' }).waitFor({ timeout: 15_000 });
  await rows.filter({ hasText: 'Back door' }).waitFor();
  await rows.filter({ hasText: 'access.denied' }).waitFor();
  // The lock's location is in Berlin: its times read CET/CEST (or GMT+1/+2 in an English locale without those names).
  const when = (await page.locator('[data-testid^="event-time-"]').first().textContent()) ?? '';
  assert.match(when, /(CET|CEST|GMT\+1|GMT\+2)$/, when);
  assert.match((await page.getByTestId('events-zone').textContent()) ?? '', /America\/New_York/);

  // Sort by lock: aria-sort on its header, rows in that order.
  await page.getByTestId('sort-lock').click();
  assert.equal(await page.getByRole('columnheader', { name: /Lock/ }).getAttribute('aria-sort'), 'ascending');
  const locks = (await rows.locator('td:nth-child(4) a:first-child').allTextContents()).map((x) => x.trim());
  assert.deepEqual(locks, locks.slice().sort());
  await assertAxe(page, 'access log sorted');

  // Pick the lock by name: only its rows.
  await page.getByTestId('events-lock-search').fill('back');
  await page.getByTestId('events-lock-select').locator('option', { hasText: 'Back door' }).waitFor({ state: 'attached' });
  await page.getByTestId('events-lock-select').selectOption({ label: 'Back door (Site)' });
  await page.getByTestId('events-apply').click();
  await waitFor(async () => (await rows.filter({ hasText: 'Front door' }).count()) === 0 && (await rows.count()) > 0, 'only the back door');
  // And the person by e-mail.
  await page.getByTestId('events-lock-select').selectOption('');
  await page.getByTestId('events-person-search').fill('bo@ex');
  await page.getByTestId('events-person-select').locator('option', { hasText: 'bo@example.com' }).waitFor({ state: 'attached' });
  await page.getByTestId('events-person-select').selectOption(s.bo);
  await page.getByTestId('events-apply').click();
  await waitFor(async () => (await rows.filter({ hasText: 'access.denied' }).count()) === 0 && (await rows.count()) === 3, 'only the rows naming Bo').catch(async (error: Error) => {
    throw new Error(`${error.message}: ${(await rows.allTextContents()).join('\n')}`);
  });
  await assertAxe(page, 'access log filtered with the pickers');

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('events-export').click()]);
  assert.match(download.suggestedFilename(), /^access-log-\d+-\d{4}-\d{2}-\d{2}\.csv$/);
  const lines = (await readFile((await download.path()) as string, 'utf8')).replace(/^\uFEFF/, '').trim().split('\r\n');
  assert.match(lines[0] ?? '', /^id,occurred_at,local_time,type,result,reason,source,lock_id,lock,/);
  assert.equal(lines.length, 4, lines.join('\n'));
  for (const line of lines.slice(1)) assert.ok(line.includes(`,${s.bo},"'=Bo ""the boss"", Berg",bo@example.com,${s.card},Bo card,`), line);
  assertClean(watched);
});

test('a webhook delivery: its payload and the receiver\'s answer', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn(`/console/accounts/${s.account}/webhooks/${s.hook}`, { bypassCSP: true });
  const { page } = watched;
  await page.getByTestId('ping-webhook').click();
  // The ping's own row: the list may still show the site's earlier deliveries first.
  const row = page.locator('[data-testid^="delivery-row-"]', { hasText: 'ping' }).first();
  await row.waitFor();
  await row.getByRole('button', { name: /^Details/ }).click();
  const detail = page.getByTestId('delivery-detail');
  await detail.waitFor();
  assert.equal((await page.getByTestId('delivery-answer').textContent())?.trim(), 'HTTP 500');
  const payload = JSON.parse((await page.getByTestId('delivery-payload').textContent()) ?? 'null') as unknown;
  const sent = receiver?.received.filter((r) => r.body.type === 'ping').at(-1)?.body.data;
  assert.deepEqual(payload, sent, 'the payload shown is the data the receiver got');
  await assertAxe(page, 'webhook page with a delivery open');
  await page.getByTestId('close-delivery').click();
  await detail.waitFor({ state: 'detached' });
  assertClean(watched);
});

test('no sideways scrolling on a 375 px wide phone, on every console page', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn('/console', { viewport: { width: 375, height: 740 }, bypassCSP: true });
  const { page } = watched;
  const base = `/console/accounts/${s.account}`;
  const pages: { path: string; open?: string }[] = [
    { path: '/console' },
    { path: '/console/gateways/offline' },
    ...['locations', 'locks', 'security-groups', 'gateways', 'api-keys', 'users', 'people', 'events', 'webhooks', 'settings'].map((tab) => ({ path: `${base}/${tab}` })),
    { path: `${base}/people/${s.bo}`, open: 'edit-person' },
    { path: `${base}/webhooks/${s.hook}` },
  ];
  const wide: string[] = [];
  for (const { path, open } of pages) {
    await page.goto(`${ctx.service.url}${path}`);
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await page.getByText('Loading…').first().waitFor({ state: 'detached' });
    if (open) await page.getByTestId(open).click();
    // The pickers have found what they offer (a long name in a select must not widen the page).
    if (path.endsWith('/events')) await page.getByTestId('events-person').getByText(/\d+ found/).waitFor();
    // A delivery's payload (pinged by the webhook step, when it ran) wraps inside the page.
    if (path.includes('/webhooks/')) {
      await page.getByTestId('ping-webhook').click();
      await page.locator('[data-testid^="show-delivery-"]').first().click();
      await page.getByTestId('delivery-payload').waitFor();
    }
    const size = await page.evaluate(() => {
      const root = document.scrollingElement as Element;
      return { scroll: root.scrollWidth, client: root.clientWidth };
    });
    if (size.scroll > size.client) wide.push(`${path}: ${size.scroll} > ${size.client}`);
  }
  assert.deepEqual(wide, [], 'pages wider than the phone');
  assertClean(watched);
});

test('a gateway deleted and an API key revoked, each after a dialog naming it; a gateway in use refused in the service\'s words', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const spare = await createGateway(ctx.service, s.root);
  const key = await createApiKey(ctx.service, s.root, ['events:read'], { name: 'Old reader' });
  // A device dialling as the spare with a password that is not its own: the row says so.
  const login = { clientId: spare.mqtt.client_id, username: spare.mqtt.username, password: 'an-old-password', reconnectPeriod: 0 };
  await assert.rejects(mqtt.connectAsync(spare.mqtt.url.replace('localhost', '127.0.0.1'), login), /bad user ?name or password/i);
  await waitFor(async () => (await ctx.service.admin<{ last_refused_at: string | null }>('GET', `/admin/v1/gateways/${spare.id}`)).body.last_refused_at !== null, 'the refusal recorded');
  const watched = await openSignedIn(`/console/accounts/${s.account}/gateways`, { bypassCSP: true });
  const { page } = watched;
  await page.getByTestId(`gateway-refused-${spare.id}`).filter({ hasText: /A login as this gateway was refused at .*a wrong password/ }).waitFor();
  assert.equal(await page.getByTestId(`gateway-refused-${s.gateway.id}`).count(), 0, 'none for a gateway nobody tried');
  // In use (its locks point to it): the service refuses and the page says why.
  await page.getByTestId(`delete-gateway-${s.gateway.id}`).click();
  await page.getByRole('dialog', { name: /^Delete the gateway/ }).waitFor();
  await assertAxe(page, 'gateway delete confirmation');
  await page.getByTestId('confirm-yes').click();
  await page.getByTestId('form-error').waitFor();
  assert.equal((await ctx.service.admin('GET', `/admin/v1/gateways/${s.gateway.id}`)).status, 200);
  // Unused: gone after the confirmation.
  await page.getByTestId(`delete-gateway-${spare.id}`).click();
  const dialog = page.getByRole('dialog', { name: /^Delete the gateway/ });
  assert.match((await dialog.textContent()) ?? '', new RegExp(`id ${spare.id}`));
  await page.getByTestId('confirm-yes').click();
  await page.getByTestId(`gateway-row-${spare.id}`).waitFor({ state: 'detached' });
  assert.equal((await ctx.service.admin('GET', `/admin/v1/gateways/${spare.id}`)).status, 404);

  await page.getByTestId('tab-api-keys').click();
  await page.getByTestId(`revoke-api-key-${key.id}`).click();
  const revoke = page.getByRole('dialog', { name: 'Revoke the API key Old reader?' });
  await revoke.waitFor();
  await page.keyboard.press('Escape');
  await revoke.waitFor({ state: 'detached' });
  assert.equal((await ctx.service.request('GET', '/v1/events', { token: key.token })).status, 200, 'Escape keeps the key');
  await page.getByTestId(`revoke-api-key-${key.id}`).click();
  await page.getByTestId('confirm-yes').click();
  await page.getByTestId(`revoke-api-key-${key.id}`).waitFor({ state: 'detached' });
  assert.equal((await ctx.service.request('GET', '/v1/events', { token: key.token })).status, 401);
  assertClean(watched);
});

test('locks sortable by a header: aria-sort follows, keyboard works', async (t) => {
  const s = needsSite(t);
  if (!s) return;
  const watched = await openSignedIn(`/console/accounts/${s.account}/locks`, { bypassCSP: true });
  const { page } = watched;
  const names = async () => (await page.locator('[data-testid^="lock-row-"] td:first-child').allTextContents()).map((n) => n.trim());
  await page.getByTestId(`lock-row-${s.front}`).waitFor();
  const header = page.getByRole('columnheader', { name: /^Name/ });
  assert.equal(await header.getAttribute('aria-sort'), null, 'not sorted by name until asked');
  await page.getByTestId('sort-name').focus();
  await page.keyboard.press('Enter');
  assert.equal(await header.getAttribute('aria-sort'), 'ascending');
  assert.deepEqual(await names(), ['Back door', 'Front door']);
  await page.keyboard.press('Enter');
  assert.equal(await header.getAttribute('aria-sort'), 'descending');
  assert.deepEqual(await names(), ['Front door', 'Back door']);
  await page.getByTestId('sort-id').click();
  assert.equal(await header.getAttribute('aria-sort'), null, 'one column sorts at a time');
  assert.equal(await page.getByRole('columnheader', { name: /^ID/ }).getAttribute('aria-sort'), 'ascending');
  await assertAxe(page, 'locks sorted');
  assertClean(watched);
});
