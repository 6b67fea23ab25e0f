// The operator console end to end in a real browser (Debian's Chromium, test/helpers/browser.ts), against a
// listening sandbox service: provisioning through the pages, a simulated gateway bringing a lock online and
// sending door activity that the pages show without a reload, a setup link from the sandbox outbox, a failing
// webhook and a redelivery, the session's end and its CSRF rule, and axe-core on every main page at 1,440 and
// 360 px. The steps run in order and share what they made (a later step skips, saying why, when an earlier
// one failed); each has a browser context of its own. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test, type TestContext } from 'node:test';
import type { BrowserContextOptions, Locator, Page } from 'playwright-core';
import { runSimulatedGateway, type SimulatedGateway } from '../helpers/simulated-gateway.ts';
import { DESKTOP, PHONE, axeCheck, describeViolations, recordRequests, screenshot, useBrowser, watchProblems, type Requests } from '../helpers/browser.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

// The after hooks run in this order: the simulator stops (it says offline through the broker) and the browser
// closes (its event streams with it) before the service does.
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await stopSimulator();
  await receiver?.close();
});
const browser = useBrowser();
// The service as src/main.ts runs it: its background jobs poll (a redelivery is sent by the next poll of the
// webhook job, not on a NOTIFY). localhost: the local HTTPS receiver (its certificate is trusted through
// NODE_EXTRA_CA_CERTS, as npm test sets).
const ctx = useTestService(async (service) => service.latchkey.jobs.start(), { WEBHOOK_ALLOW_HOSTS: 'localhost' });

/** What the steps made, for the steps after them. */
const made: {
  account?: { id: number; name: string; rootLocation: number };
  gateway?: { id: number; password: string; url: string; prefix: string };
  lock?: { id: number; name: string };
  person?: { id: string; name: string; email: string };
  key?: { id: number };
  webhook?: { id: string };
} = {};


// ---------------------------------------------------------------------------------------------------------
// Helpers

interface Watched {
  page: Page;
  /** The session's CSRF token (signed-in pages). */
  csrf: string;
  requests: Requests;
  /** Uncaught exceptions, CSP refusals and other console errors, requests failed in the network. */
  problems: string[];
}

/** A page in a fresh context with its requests and problems recorded. */
async function open(options: BrowserContextOptions = {}): Promise<Watched> {
  const page = await browser.page(options);
  return { page, csrf: '', requests: recordRequests(page), problems: watchProblems(page) };
}

/** Signs the context in through POST /console/session (its cookie is the context's); returns the CSRF token. */
async function signIn(page: Page): Promise<string> {
  const response = await page.request.post(`${ctx.service.url}/console/session`, { data: { token: ADMIN_TOKEN } });
  assert.equal(response.status(), 200, await response.text());
  return ((await response.json()) as { csrf_token: string }).csrf_token;
}

/** A signed-in page at `path` (under /console). */
async function openSignedIn(path: string, options: BrowserContextOptions = {}): Promise<Watched> {
  const watched = await open(options);
  watched.csrf = await signIn(watched.page);
  await watched.page.goto(`${ctx.service.url}${path}`);
  await watched.page.getByTestId('sign-out').waitFor();
  await settled(watched.page);
  return watched;
}

/** Every request on the service's origin, and no page problem. */
function assertClean(watched: Watched): void {
  assert.deepEqual(watched.requests.offOrigin(ctx.service.url), [], 'every request goes to this service');
  assert.deepEqual(watched.problems, [], 'no uncaught error, CSP refusal or console error');
}

/** Marks the document; `stillSame` tells whether no reload or navigation away happened since. */
async function markDocument(page: Page): Promise<() => Promise<boolean>> {
  const mark = randomBytes(6).toString('hex');
  await page.evaluate((value) => ((window as unknown as { __mark?: string }).__mark = value), mark);
  return async () => (await page.evaluate(() => (window as unknown as { __mark?: string }).__mark)) === mark;
}

function needs<K extends keyof typeof made>(t: TestContext, ...keys: K[]): boolean {
  const missing = keys.filter((key) => made[key] === undefined);
  if (missing.length > 0) t.skip(`needs the ${missing.join(', ')} an earlier step makes`);
  return missing.length === 0;
}

const accountPath = (tab: string) => `/console/accounts/${made.account?.id}/${tab}`;

// The simulated gateway (packages/cli's simulator, in this process), fed commands as typed lines.
let simulator: SimulatedGateway | undefined;

async function startSimulator(gateway: NonNullable<typeof made.gateway>): Promise<void> {
  simulator = await runSimulatedGateway(gateway);
}

async function stopSimulator(): Promise<void> {
  await simulator?.stop();
  simulator = undefined;
}

/** The text of a secret shown once (`secret-password`, `secret-token`, `secret-secret`). */
async function shownSecret(page: Page, testId: string): Promise<string> {
  const secret = page.getByTestId('once-secret').getByTestId(testId);
  await secret.waitFor();
  return (await secret.textContent())?.trim() ?? '';
}

/** The page's first heading is shown and nothing says "Loading…" any more. */
async function settled(page: Page): Promise<void> {
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await page.getByText('Loading…').first().waitFor({ state: 'detached' });
}

// ---------------------------------------------------------------------------------------------------------
// Steps

test('the sign-in page refuses a wrong token and lets the operator token in', async () => {
  const watched = await open();
  const { page } = watched;
  await page.goto(`${ctx.service.url}/console`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByTestId('operator-token').fill('not-the-token-0123456789');
  await page.getByTestId('sign-in').click();
  await page.getByTestId('form-error').waitFor();
  assert.equal(await page.getByTestId('sign-out').count(), 0);

  await page.getByLabel('Operator token').fill(ADMIN_TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('sign-out').waitFor();
  await page.getByTestId('overview-counts').waitFor();
  // The session lives in an HttpOnly cookie scoped to /console, never in script-readable storage.
  const cookie = (await page.context().cookies()).find((c) => c.name === 'latchkey_console');
  assert.ok(cookie, 'the session cookie is set');
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.sameSite, 'Strict');
  assert.equal(cookie.path, '/console');
  assert.equal(await page.evaluate(() => document.cookie.includes('latchkey_console')), false);
  await page.getByTestId('live-status').filter({ hasText: /^Live$/ }).waitFor();
  assertClean(watched);
});

test('an account, a department, a gateway, a lock on it and an API key, made in the console', async () => {
  const watched = await openSignedIn('/console');
  const { page } = watched;
  const name = 'Acme Doors';
  await page.getByTestId('account-name').fill(name);
  await page.getByTestId('create-account').click();
  await page.waitForURL(/\/console\/accounts\/\d+$/);
  await page.getByRole('heading', { level: 1, name }).waitFor();
  const id = Number(/\/accounts\/(\d+)$/.exec(page.url())?.[1]);
  const account = await ctx.service.admin<{ name: string; root_location: { id: number } }>('GET', `/admin/v1/accounts/${id}`);
  assert.equal(account.body.name, name);
  made.account = { id, name, rootLocation: account.body.root_location.id };

  await page.getByTestId('department-name').fill('Facilities');
  await page.getByTestId('add-department').click();
  await page.getByTestId('location-tree').getByText('Facilities').waitFor();

  await page.getByTestId('tab-gateways').click();
  await page.getByTestId('gateway-name').fill('Lobby bridge');
  await page.getByTestId('create-gateway').click();
  const password = await shownSecret(page, 'secret-password');
  assert.ok(password.length >= 16, 'the MQTT password is shown once');
  const gateways = await ctx.service.admin<{ data: { id: number; name: string; mqtt: { url: string; topic_prefix: string } }[] }>(
    'GET',
    `/admin/v1/gateways?account_id=${id}`,
  );
  const gateway = gateways.body.data.find((g) => g.name === 'Lobby bridge');
  assert.ok(gateway, 'the gateway exists');
  made.gateway = { id: gateway.id, password, url: gateway.mqtt.url, prefix: gateway.mqtt.topic_prefix };
  await page.getByTestId(`gateway-row-${gateway.id}`).filter({ hasText: /offline/ }).waitFor();
  await page.getByTestId('dismiss-secret').click();
  assert.ok(!(await page.content()).includes(password), 'the password is gone once dismissed');

  await page.getByTestId('tab-locks').click();
  await page.getByTestId('lock-name').fill('Front door');
  await page.getByTestId('create-lock-form').getByTestId('lock-gateway').selectOption(String(gateway.id));
  await page.getByTestId('create-lock').click();
  const row = page.locator('[data-testid^="lock-row-"]').filter({ hasText: 'Front door' });
  await row.filter({ hasText: /offline/ }).waitFor();
  const lockId = Number((await row.getAttribute('data-testid'))?.replace('lock-row-', ''));
  assert.ok(lockId > 0);
  made.lock = { id: lockId, name: 'Front door' };

  await page.getByTestId('tab-api-keys').click();
  await page.getByTestId('api-key-name').fill('Desk');
  await page.getByRole('checkbox', { name: 'events:read', exact: true }).check();
  await page.getByTestId('create-api-key').click();
  const token = await shownSecret(page, 'secret-token');
  assert.match(token, /^lk_/);
  const works = await ctx.service.request('GET', '/v1/events', { token });
  assert.equal(works.status, 200, 'the token shown works');
  const keyRow = page.locator('[data-testid^="api-key-row-"]').filter({ hasText: 'Desk' });
  await keyRow.waitFor();
  // Shown once: neither a reload nor leaving the page and coming back shows it again.
  await page.reload();
  await keyRow.waitFor();
  assert.ok(!(await page.content()).includes(token), 'not after a reload');
  await page.getByTestId('tab-locks').click();
  await row.waitFor();
  await page.goBack();
  await keyRow.waitFor();
  assert.ok(!(await page.content()).includes(token), 'not after navigating away and back');
  assertClean(watched);
});

test("the overview's offline counts lead to the offline gateways, each with its account, and on to its row", async (t) => {
  if (!needs(t, 'account', 'gateway')) return;
  const watched = await openSignedIn('/console');
  const { page } = watched;
  await page.getByTestId('overview-gateways-offline').click();
  await page.waitForURL(/\/console\/gateways\/offline$/);
  const row = page.getByTestId(`offline-gateway-${made.gateway?.id}`);
  await row.filter({ hasText: 'Lobby bridge' }).filter({ hasText: 'Acme Doors' }).filter({ hasText: 'never connected' }).waitFor();
  await row.getByRole('link', { name: 'Lobby bridge' }).click();
  await page.waitForURL(new RegExp(`/console/accounts/${made.account?.id}/gateways#gateway-${made.gateway?.id}$`));
  await page.getByTestId(`gateway-row-${made.gateway?.id}`).waitFor();
  assertClean(watched);
});

test('changing a lock: its form starts with the gateway it is on; a rename leaves it there', async (t) => {
  if (!needs(t, 'account', 'gateway', 'lock')) return;
  const watched = await openSignedIn(accountPath('locks'));
  const { page } = watched;
  await page.getByTestId(`lock-gateway-${made.lock?.id}`).filter({ hasText: `(id ${made.gateway?.id})` }).waitFor();
  await page.getByTestId(`edit-lock-${made.lock?.id}`).click();
  const form = page.getByTestId('edit-lock-form');
  assert.equal(await form.getByTestId('lock-gateway').inputValue(), String(made.gateway?.id));
  await form.getByLabel('Name').fill('Front door');
  await page.getByTestId('save-lock').click();
  await form.waitFor({ state: 'detached' });
  const locks = await ctx.service.admin<{ data: Array<{ name: string; gateway_id: number | null }> }>('GET', `/admin/v1/locks?account_id=${made.account?.id}`);
  assert.equal(locks.status, 200);
  assert.deepEqual(locks.body.data.map((l) => [l.name, l.gateway_id]), [['Front door', made.gateway?.id]]);
  assertClean(watched);
});

test('the lock turns online without a reload when the simulated gateway connects', async (t) => {
  if (!needs(t, 'account', 'gateway', 'lock')) return;
  const watched = await openSignedIn(accountPath('locks'));
  const { page } = watched;
  const row = page.getByTestId(`lock-row-${made.lock?.id}`);
  await row.filter({ hasText: /offline/ }).waitFor();
  await page.getByTestId('live-status').filter({ hasText: /^Live$/ }).waitFor();
  const same = await markDocument(page);
  await startSimulator(made.gateway as NonNullable<typeof made.gateway>);
  await row.getByText('online', { exact: true }).waitFor();
  assert.ok(await same(), 'the page was not reloaded');
  assertClean(watched);
});

test('a person, a key, and its setup link from the sandbox outbox, activated', async (t) => {
  if (!needs(t, 'account')) return;
  const watched = await openSignedIn(accountPath('people'));
  const { page } = watched;
  const person = { name: 'Ada Lovelace', email: 'ada@example.com' };
  await page.getByTestId('person-name').fill(person.name);
  await page.getByTestId('person-email').fill(person.email);
  await page.getByTestId('create-person').click();
  // A new person's page opens.
  await page.waitForURL(/\/people\/[0-9a-f-]{36}$/);
  await page.getByRole('heading', { name: person.name, exact: true }).waitFor();
  const personId = page.url().split('/').pop() as string;
  made.person = { id: personId, ...person };

  await page.getByTestId('issue-key-channel').selectOption('email');
  await page.getByTestId('issue-key').click();
  await page.getByTestId('issue-key-form').getByRole('status').filter({ hasText: /Invitation \d+ sent/ }).waitFor();
  await page.locator('[data-testid^="invitation-row-"]').filter({ hasText: 'pending' }).waitFor();

  // The sandbox page shows the e-mail and its setup link, which opens the activation page.
  await page.getByTestId('nav-sandbox').click();
  const message = page.locator('[data-testid^="outbox-row-"]').filter({ hasText: person.email });
  const href = await message.getByRole('link', { name: /Open the setup link/ }).getAttribute('href');
  assert.ok(href, 'the outbox shows the setup link');
  // A test service's PUBLIC_URL names port 0 (it listens on any free port): open the link's path on it.
  // Without JavaScript the page's form activates with no passkey (the passkey path, which needs PUBLIC_URL's
  // origin and an authenticator, is test/keys/holder.test.ts's).
  const activation = await browser.page({ javaScriptEnabled: false });
  await activation.goto(`${ctx.service.url}${new URL(href).pathname}`);
  await activation.getByRole('heading', { name: 'Activate your phone key' }).waitFor();
  await activation.getByRole('button', { name: 'Activate my key' }).click();
  await activation.getByRole('heading', { name: 'Your key is ready' }).waitFor();
  await activation.close();

  const keys = await consoleGet<{ data: { id: number; state: string }[] }>(page, `/v1/keys?person_id=${personId}`, made.account?.id);
  const key = keys.data.find((k) => k.state === 'handed_over');
  assert.ok(key, 'the key is handed over');
  made.key = { id: key.id };
  await page.goBack();
  await page.getByTestId(`key-row-${key.id}`).filter({ hasText: 'handed over' }).waitFor();
  await page.locator('[data-testid^="invitation-row-"]').filter({ hasText: 'activated' }).waitFor();
  assertClean(watched);
});

test('adding a person whose e-mail someone has says so, and keeps what was typed; nobody is opened in their place', async (t) => {
  if (!needs(t, 'account', 'person')) return;
  const watched = await openSignedIn(accountPath('people'));
  const { page } = watched;
  await page.getByTestId('person-name').fill('Ada Twin');
  await page.getByTestId('person-email').fill(made.person?.email ?? '');
  await page.getByTestId('create-person').click();
  const notice = page.getByTestId('person-exists');
  await notice.waitFor();
  assert.match((await notice.textContent()) ?? '', new RegExp(`Nobody was added: ${made.person?.name} already has this e-mail or phone`));
  assert.ok(page.url().endsWith('/people'), `still the list: ${page.url()}`);
  assert.equal(await page.getByTestId('person-name').inputValue(), 'Ada Twin', 'what was typed is kept');
  assertClean(watched);
});

test('door events from the gateway appear in the live access-log tail without a reload', async (t) => {
  if (!needs(t, 'account', 'gateway', 'lock')) return;
  if (!simulator) return t.skip('needs the simulated gateway of an earlier step');
  const watched = await openSignedIn(accountPath('events'));
  const { page } = watched;
  await page.getByTestId('events-count').waitFor();
  await page.getByTestId('live-status').filter({ hasText: /^Live$/ }).waitFor();
  const same = await markDocument(page);
  const rows = page.locator('[data-testid^="event-row-"]');
  simulator.type(`grant ${made.lock?.id} ${made.key?.id ?? ''}`);
  const granted = rows.filter({ hasText: 'access.granted' }).filter({ hasText: made.lock?.name as string });
  await granted.waitFor();
  if (made.person) await granted.filter({ hasText: made.person.name }).waitFor();
  simulator.type(`close ${made.lock?.id}`);
  const closed = rows.filter({ hasText: 'door.closed' });
  await closed.waitFor();
  // Newest on top, marked fresh.
  assert.match((await rows.first().textContent()) ?? '', /door\.closed/);
  assert.match((await closed.getAttribute('class')) ?? '', /\bfresh\b/);
  assert.ok(await same(), 'the page was not reloaded');
  assertClean(watched);
});

test('a webhook to a failing receiver: failures shown live after the clock moves, one redelivered', async (t) => {
  if (!needs(t, 'account')) return;
  receiver.answer({ status: 500 });
  const watched = await openSignedIn(accountPath('webhooks'));
  const { page } = watched;
  const hookUrl = receiver.url('/console-hook');
  await page.getByTestId('webhook-url').fill(hookUrl);
  await page.getByTestId('create-webhook').click();
  const secret = await shownSecret(page, 'secret-secret');
  assert.ok(secret.length > 0, 'the signing secret is shown once');
  await page.getByTestId('dismiss-secret').click();
  await page.getByRole('link', { name: hookUrl }).click();
  await page.getByRole('heading', { name: hookUrl }).waitFor();
  made.webhook = { id: page.url().split('/').pop() as string };
  await page.getByTestId('live-status').filter({ hasText: /^Live$/ }).waitFor();
  const same = await markDocument(page);

  // Something to deliver: a person made through the operator API (person.created). Its first attempt fails.
  const before = receiver.received.length;
  const person = await ctx.service.admin('POST', '/admin/v1/people', { location_id: made.account?.rootLocation, name: 'Grace Hopper' });
  assert.equal(person.status, 201, person.text);
  await waitFor(() => receiver.received.some((r, i) => i >= before && r.body.type === 'person.created'), 'the first attempt reaches the receiver');
  const delivery = page.locator('[data-testid^="delivery-row-"]').filter({ hasText: 'person.created' });
  await delivery.filter({ hasText: '500' }).waitFor();

  // The sandbox clock moves past the first retry (1 minute), from the sandbox page: the second attempt
  // fails too, and this page shows it without a reload.
  const sandbox = await page.context().newPage();
  await sandbox.goto(`${ctx.service.url}/console/sandbox`);
  await sandbox.getByTestId('advance-seconds').fill('61');
  await sandbox.getByTestId('advance-clock').click();
  await waitFor(() => receiver.received.filter((r, i) => i >= before && r.body.type === 'person.created').length >= 2, 'the retry reaches the receiver');
  await sandbox.locator('[data-testid="advance-clock"]:enabled').waitFor();
  assert.equal(await sandbox.getByTestId('form-error').count(), 0);
  await sandbox.close();
  // Created, event, status, attempts, response, …
  await until(async () => (await cells(delivery.first())).slice(1, 5).join(' ') === 'person.created pending 2 500', 'the second failure is shown');
  await page.getByText('not failing').waitFor({ state: 'detached' });
  assert.ok(await same(), 'the deliveries updated without a reload');

  receiver.answer({ status: 200 });
  const sent = receiver.received.length;
  const deliveryId = (await delivery.first().getAttribute('data-testid'))?.replace('delivery-row-', '');
  await page.getByTestId(`redeliver-${deliveryId}`).click();
  await waitFor(() => receiver.received.length > sent, 'the redelivery reaches the receiver');
  await until(async () => {
    const rows = await page.locator('[data-testid^="delivery-row-"]').all();
    const shown = await Promise.all(rows.map(async (row) => (await cells(row)).slice(1, 5).join(' ')));
    return shown.includes('person.created delivered 1 200');
  }, 'the redelivery is shown delivered');
  assertClean(watched);
});

test('signing out ends the session: the old cookie answers 401; a change without the CSRF token is refused', async () => {
  const watched = await openSignedIn('/console');
  const { page } = watched;
  const url = ctx.service.url;

  // Changes need X-CSRF-Token: none, or another, is 403; the session's own passes.
  const without = await page.request.post(`${url}/console/api/admin/v1/accounts`, { data: { name: 'No CSRF' } });
  assert.equal(without.status(), 403, await without.text());
  assert.equal(((await without.json()) as { error: { code: string } }).error.code, 'forbidden');
  const wrong = await page.request.post(`${url}/console/api/admin/v1/accounts`, { data: { name: 'No CSRF' }, headers: { 'x-csrf-token': 'not-the-token' } });
  assert.equal(wrong.status(), 403);
  const elsewhere = await page.request.post(`${url}/console/api/admin/v1/accounts`, {
    data: { name: 'No CSRF' },
    headers: { 'x-csrf-token': watched.csrf, origin: 'https://elsewhere.example' },
  });
  assert.equal(elsewhere.status(), 403, 'the right token from a page of another host is refused too');
  assert.equal((await page.request.delete(`${url}/console/session`)).status(), 403, 'signing out is a change too');
  const refused = await ctx.service.admin<{ data: unknown[] }>('GET', `/admin/v1/accounts?q=${encodeURIComponent('No CSRF')}`);
  assert.equal(refused.body.data.length, 0, 'nothing refused was made');
  const withToken = await page.request.post(`${url}/console/api/admin/v1/accounts`, { data: { name: 'With CSRF' }, headers: { 'x-csrf-token': watched.csrf } });
  assert.equal(withToken.status(), 201, await withToken.text());

  // A public-API read makes the session's key in the account; signing out revokes it (and only it).
  const consoleKeys = async () => {
    const keys = await ctx.service.admin<{ data: { id: number; name: string; revoked_at: string | null }[] }>('GET', `/admin/v1/api_keys?account_id=${made.account?.id}`);
    return keys.body.data.filter((k) => k.name === 'Operator console' && k.revoked_at === null).map((k) => k.id);
  };
  let liveKeys: number[] = [];
  if (made.account) {
    await consoleGet(page, '/v1/locks', made.account.id);
    liveKeys = await consoleKeys();
    assert.ok(liveKeys.length > 0);
  }
  const session = (await page.context().cookies()).find((c) => c.name === 'latchkey_console');
  assert.ok(session);
  await page.getByTestId('sign-out').click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();

  // The old cookie, replayed, opens nothing.
  const headers = { cookie: `latchkey_console=${session.value}` };
  for (const path of ['/console/api/admin/v1/overview', '/console/session', '/console/live']) {
    const res = await fetch(`${url}${path}`, { headers });
    assert.equal(res.status, 401, path);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unauthenticated', path);
  }
  if (made.account) {
    const res = await fetch(`${url}/console/api/v1/locks`, { headers: { ...headers, 'latchkey-account': String(made.account.id) } });
    assert.equal(res.status, 401);
    const left = await consoleKeys();
    assert.equal(left.length, liveKeys.length - 1, "the session's API key went with it; other sessions' stay");
    assert.ok(left.every((id) => liveKeys.includes(id)));
  }
  assertClean(watched);
});

test('every main page: no serious or critical axe violation at 1,440 and 360 px, and no sideways scrolling at 360 px', async (t) => {
  if (!needs(t, 'account')) return;
  const pages = [
    { name: 'overview', path: '/console' },
    { name: 'account', path: accountPath('locations') },
    { name: 'locks', path: accountPath('locks') },
    { name: 'people', path: accountPath('people') },
    { name: 'person', path: made.person ? `${accountPath('people')}/${made.person.id}` : null },
    { name: 'access-log', path: accountPath('events') },
    { name: 'webhooks', path: accountPath('webhooks') },
    { name: 'webhook', path: made.webhook ? `${accountPath('webhooks')}/${made.webhook.id}` : null },
    { name: 'sandbox', path: '/console/sandbox' },
  ];
  const failures: string[] = [];
  for (const viewport of [DESKTOP, PHONE]) {
    // axe-core is injected as an inline script, which the console's CSP refuses: these contexts bypass it.
    const { page } = await openSignedIn('/console', { viewport, bypassCSP: true });
    for (const { name, path } of pages) {
      if (!path) continue;
      await page.goto(`${ctx.service.url}${path}`);
      await settled(page);
      const violations = await axeCheck(page);
      if (violations.length > 0) failures.push(`${name} at ${viewport.width} px:\n${describeViolations(violations)}`);
      // Reflow (WCAG 1.4.10): nothing scrolls sideways on a phone; wide tables scroll inside their own region.
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      if (width > viewport.width) failures.push(`${name} at ${viewport.width} px: the page is ${width} px wide`);
      await screenshot(page, viewport === DESKTOP ? `console-${name}` : `console-${name}-phone`, { fullPage: viewport === DESKTOP });
    }
  }
  assert.deepEqual(failures, [], failures.join('\n\n'));
});

// ---------------------------------------------------------------------------------------------------------

/** The visible text of each cell of a table row. */
async function cells(row: Locator): Promise<string[]> {
  return (await row.locator('td').allInnerTexts()).map((text) => text.trim());
}

/** Polls `check` until it holds; fails after 10 s, like a locator's wait. */
function until(check: () => Promise<boolean>, what: string): Promise<void> {
  return waitFor(check, what, 10_000);
}

/** A read through the console's own proxy with the page's session (`/v1` paths act in `account`). */
async function consoleGet<T>(page: Page, path: string, account?: number): Promise<T> {
  const headers: Record<string, string> = account === undefined ? {} : { 'latchkey-account': String(account) };
  const response = await page.request.get(`${ctx.service.url}/console/api${path}`, { headers });
  assert.equal(response.status(), 200, `${path}: ${await response.text()}`);
  return (await response.json()) as T;
}
