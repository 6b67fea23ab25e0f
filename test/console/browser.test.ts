// The operator console end to end in a real browser (Debian's Chromium, test/helpers/browser.ts), against a
// listening sandbox service: provisioning through the pages, a simulated gateway bringing a lock online and
// sending door activity that the pages show without a reload, a setup link from the sandbox outbox, a failing
// webhook and a redelivery, the session's end and its CSRF rule, and axe-core on every main page at 1,440 and
// 360 px. The steps run in order and share what they made (a later step skips, saying why, when an earlier
// one failed); each has a browser context of its own. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { after, before, test, type TestContext } from 'node:test';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { simulateGateway } from '../../packages/cli/src/gateway-simulator.ts';
import { DESKTOP, PHONE, axeCheck, describeViolations, recordRequests, screenshot, useBrowser, type Requests } from '../helpers/browser.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

// localhost: the local HTTPS receiver (its certificate is trusted through NODE_EXTRA_CA_CERTS, as npm test sets).
const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });
const browser = useBrowser();

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => {
  await stopSimulator();
  await receiver?.close();
});

/** What the steps made, for the steps after them. */
const made: {
  account?: { id: number; name: string; rootLocation: number };
  gateway?: { id: number; password: string; url: string; prefix: string };
  lock?: { id: number; name: string };
  person?: { id: string; name: string; email: string };
  key?: { id: number };
  webhook?: { id: string };
} = {};

const suffix = randomBytes(3).toString('hex');

// ---------------------------------------------------------------------------------------------------------
// Helpers

interface Watched {
  page: Page;
  requests: Requests;
  /** Uncaught exceptions, CSP refusals and other console errors, failed requests. */
  problems: string[];
}

/** A page in a fresh context with its requests and problems recorded. */
async function open(options: BrowserContextOptions = {}): Promise<Watched> {
  const page = await browser.page(options);
  const requests = recordRequests(page);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    // Chromium logs every 4xx/5xx answer as "Failed to load resource"; the app shows those itself.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(`console: ${message.text()}`);
  });
  return { page, requests, problems };
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
  await signIn(watched.page);
  await watched.page.goto(`${ctx.service.url}${path}`);
  await watched.page.getByTestId('sign-out').waitFor();
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
let simulator: { input: PassThrough; done: Promise<void>; log: string[] } | undefined;

async function startSimulator(gateway: NonNullable<typeof made.gateway>): Promise<void> {
  const input = new PassThrough();
  const log: string[] = [];
  const done = simulateGateway({
    url: gateway.url.replace('localhost', '127.0.0.1'),
    id: String(gateway.id),
    password: gateway.password,
    prefix: gateway.prefix,
    answer: 'ok',
    error: 'device_error',
    locks: [],
    key: null,
    randomPerMinute: 0,
    input,
    log: (line) => log.push(line),
  });
  simulator = { input, done, log };
  await waitFor(() => log.some((line) => line.includes('online at')), 'the simulated gateway is online');
}

async function stopSimulator(): Promise<void> {
  if (!simulator) return;
  simulator.input.write('quit\n');
  await simulator.done.catch(() => undefined);
  simulator = undefined;
}

/** The text of the secret shown once whose test id matches. */
async function shownSecret(page: Page, testId: RegExp): Promise<string> {
  const secret = page.getByTestId('once-secret').getByTestId(testId).first();
  await secret.waitFor();
  return (await secret.textContent())?.trim() ?? '';
}

// ---------------------------------------------------------------------------------------------------------
// Steps

test('the sign-in page refuses a wrong token and lets the operator token in', async () => {
  const watched = await open();
  const { page } = watched;
  await page.goto(`${ctx.service.url}/console`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Operator token').fill('not-the-token-0123456789');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('alert').filter({ hasText: /./ }).first().waitFor();
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
  const name = `Acme Doors ${suffix}`;
  await page.getByTestId('account-name').fill(name);
  await page.getByTestId('create-account').click();
  const found = await waitForValue(async () => {
    const res = await ctx.service.admin<{ data: { id: number; root_location: { id: number } }[] }>('GET', `/admin/v1/accounts?q=${encodeURIComponent(name)}`);
    return res.body.data[0];
  }, 'the account is created');
  made.account = { id: found.id, name, rootLocation: found.root_location.id };

  // The new account is listed (or opened); its page has the sections as tabs.
  await page.goto(`${ctx.service.url}${accountPath('locations')}`);
  await page.getByRole('heading', { level: 1, name }).waitFor();

  await page.getByTestId('department-name').fill('Facilities');
  await page.getByTestId('add-department').click();
  await page.getByTestId('location-tree').getByText('Facilities').waitFor();

  await page.getByTestId('tab-gateways').click();
  await page.getByTestId('gateway-name').fill('Lobby bridge');
  await page.getByTestId('create-gateway').click();
  const password = await shownSecret(page, /^secret-.*password/);
  assert.ok(password.length >= 16, 'the MQTT password is shown once');
  const gateways = await ctx.service.admin<{ data: { id: number; name: string; mqtt: { url: string; topic_prefix: string } }[] }>(
    'GET',
    `/admin/v1/gateways?account_id=${made.account.id}`,
  );
  const gateway = gateways.body.data.find((g) => g.name === 'Lobby bridge');
  assert.ok(gateway, 'the gateway exists');
  made.gateway = { id: gateway.id, password, url: gateway.mqtt.url, prefix: gateway.mqtt.topic_prefix };
  await page.getByTestId('dismiss-secret').click();
  assert.equal(await page.getByText(password).count(), 0, 'the password is gone once dismissed');

  await page.getByTestId('tab-locks').click();
  await page.getByTestId('lock-name').fill('Front door');
  await page.getByTestId('lock-gateway').selectOption({ label: 'Lobby bridge' });
  await page.getByTestId('create-lock').click();
  const row = page.getByRole('row').filter({ hasText: 'Front door' });
  await row.filter({ hasText: /offline/i }).waitFor();
  const locks = await consoleGet<{ data: { id: number; name: string }[] }>(page, '/v1/locks', made.account.id);
  const lock = locks.data.find((l) => l.name === 'Front door');
  assert.ok(lock, 'the lock exists');
  made.lock = { id: lock.id, name: lock.name };

  await page.getByTestId('tab-api-keys').click();
  await page.getByTestId('api-key-name').fill('Desk');
  await page.getByTestId('create-api-key').click();
  const token = await shownSecret(page, /^secret-.*token/);
  assert.match(token, /^lk_/);
  const works = await ctx.service.request('GET', '/v1/locks', { token });
  assert.equal(works.status, 200, 'the token shown works');
  await page.getByRole('row').filter({ hasText: 'Desk' }).first().waitFor();
  // Shown once: neither a reload nor leaving the page and coming back shows it again.
  await page.reload();
  await page.getByRole('row').filter({ hasText: 'Desk' }).first().waitFor();
  assert.equal(await page.getByText(token).count(), 0, 'not after a reload');
  assert.ok(!(await page.content()).includes(token));
  await page.getByTestId('tab-locks').click();
  await page.goBack();
  await page.getByRole('row').filter({ hasText: 'Desk' }).first().waitFor();
  assert.ok(!(await page.content()).includes(token), 'not after navigating away and back');
  assertClean(watched);
});

test('the lock turns online without a reload when the simulated gateway connects', async (t) => {
  if (!needs(t, 'account', 'gateway', 'lock')) return;
  const watched = await openSignedIn(accountPath('locks'));
  const { page } = watched;
  const row = page.getByRole('row').filter({ hasText: made.lock?.name as string });
  await row.filter({ hasText: /offline/i }).waitFor();
  const same = await markDocument(page);
  await startSimulator(made.gateway as NonNullable<typeof made.gateway>);
  await row.filter({ hasText: /\bonline\b/i }).waitFor();
  assert.ok(await same(), 'the page was not reloaded');
  assertClean(watched);
});

test('a person, a key, and its setup link from the sandbox outbox, activated', async (t) => {
  if (!needs(t, 'account')) return;
  const watched = await openSignedIn(accountPath('people'));
  const { page } = watched;
  const person = { name: 'Ada Lovelace', email: `ada.${suffix}@example.com` };
  await page.getByTestId('person-name').fill(person.name);
  await page.getByTestId('person-email').fill(person.email);
  await page.getByTestId('create-person').click();
  await page.getByRole('link', { name: person.name }).first().click();
  await page.getByRole('heading', { name: person.name }).waitFor();
  const personId = page.url().split('/').pop() as string;
  made.person = { id: personId, ...person };

  await page.getByTestId('key-name').fill('Phone key');
  await page.getByTestId('key-channel').selectOption('email');
  await page.getByTestId('issue-key').click();
  await page.getByText(/invitation|sent/i).first().waitFor();

  // The sandbox page shows the e-mail with the setup link; the link opens the activation page.
  await page.getByTestId('nav-sandbox').click();
  const message = page.getByTestId('outbox').locator('li, tr').filter({ hasText: person.email }).first();
  const link = message.getByRole('link', { name: /activate|setup|link/i }).first();
  const href = await link.getAttribute('href');
  assert.ok(href, 'the outbox shows the setup link');
  // PUBLIC_URL of a test service names port 0: open the link's path on the service.
  const activation = await page.context().newPage();
  await activation.goto(`${ctx.service.url}${new URL(href, ctx.service.url).pathname}`);
  await activation.getByRole('heading', { name: 'Activate your phone key' }).waitFor();
  await activation.getByRole('button', { name: 'Activate my key' }).click();
  await activation.getByRole('heading', { name: 'Your key is ready' }).waitFor();
  await activation.close();

  const keys = await consoleGet<{ data: { id: number; state: string }[] }>(page, `/v1/keys?person_id=${personId}`, made.account?.id);
  const key = keys.data.find((k) => k.state === 'handed_over');
  assert.ok(key, 'the key is handed over');
  made.key = { id: key.id };
  // The person's page shows it so (after a reload: activation is no live topic).
  await page.goto(`${ctx.service.url}${accountPath('people')}/${personId}`);
  await page.getByRole('row').filter({ hasText: 'Phone key' }).filter({ hasText: /handed.over|active/i }).waitFor();
  assertClean(watched);
});

test('a door event from the gateway appears in the live access-log tail without a reload', async (t) => {
  if (!needs(t, 'account', 'gateway', 'lock')) return;
  if (!simulator) return t.skip('needs the simulated gateway of an earlier step');
  const watched = await openSignedIn(accountPath('events'));
  const { page } = watched;
  await page.getByRole('heading', { name: /access log/i }).first().waitFor();
  const same = await markDocument(page);
  simulator.input.write(`grant ${made.lock?.id} ${made.key?.id ?? ''}\n`);
  const row = page.getByRole('row').filter({ hasText: made.lock?.name as string }).filter({ hasText: /granted/i });
  await row.first().waitFor();
  if (made.person) await row.filter({ hasText: made.person.name }).first().waitFor();
  simulator.input.write(`close ${made.lock?.id}\n`);
  await page.getByRole('row').filter({ hasText: /closed/i }).first().waitFor();
  assert.ok(await same(), 'the page was not reloaded');
  assertClean(watched);
});

test('a webhook to a failing receiver: failures after the clock moves, one redelivered', async (t) => {
  if (!needs(t, 'account')) return;
  receiver.answer({ status: 500 });
  const watched = await openSignedIn(accountPath('webhooks'));
  const { page } = watched;
  await page.getByTestId('webhook-url').fill(receiver.url('/console-hook'));
  await page.getByTestId('create-webhook').click();
  const secret = await shownSecret(page, /^secret-/);
  assert.ok(secret.length > 0, 'the signing secret is shown once');
  await page.getByTestId('dismiss-secret').click();
  const subscriptionLink = page.getByRole('link', { name: receiver.url('/console-hook') }).first();
  await subscriptionLink.click();

  // Something to deliver: a person made through the operator API (person.created).
  const before = receiver.received.length;
  const made2 = await ctx.service.admin('POST', '/admin/v1/people', { location_id: made.account?.rootLocation, name: `Grace Hopper ${suffix}` });
  assert.equal(made2.status, 201, made2.text);
  await waitFor(() => receiver.received.length > before, 'the first attempt reaches the receiver');

  // The sandbox clock moves past the first retry (1 minute): the second attempt fails too, shown live.
  const same = await markDocument(page);
  const clock = await page.context().newPage();
  await clock.goto(`${ctx.service.url}/console/sandbox`);
  await clock.getByTestId('advance-seconds').fill('61');
  await clock.getByTestId('advance-clock').click();
  await clock.getByRole('status').filter({ hasText: /advanced|now/i }).first().waitFor();
  await clock.close();
  await waitFor(() => receiver.received.length >= before + 2, 'the retry reaches the receiver');
  const deliveries = page.getByTestId('deliveries');
  await deliveries.getByRole('row').filter({ hasText: 'person.created' }).filter({ hasText: '500' }).first().waitFor();
  await page.getByText(/failing/i).first().waitFor();
  assert.ok(await same(), 'the deliveries updated without a reload');

  receiver.answer({ status: 200 });
  const sent = receiver.received.length;
  await deliveries.getByRole('row').filter({ hasText: 'person.created' }).first().getByRole('button', { name: /redeliver/i }).click();
  await waitFor(() => receiver.received.length > sent, 'the redelivery reaches the receiver');
  await deliveries.getByRole('row').filter({ hasText: /delivered/i }).first().waitFor();
  assertClean(watched);
});

test('signing out ends the session: the old cookie answers 401; a change without the CSRF token is refused', async () => {
  const watched = await openSignedIn('/console');
  const { page } = watched;
  const csrf = await signIn(page); // a second sign-in in the same context replaces the cookie; use its token
  await page.reload();
  await page.getByTestId('sign-out').waitFor();
  const url = ctx.service.url;

  // Changes need X-CSRF-Token: none, or another, is 403; the right one passes.
  const body = { data: { name: `No CSRF ${suffix}` } };
  const without = await page.request.post(`${url}/console/api/admin/v1/accounts`, body);
  assert.equal(without.status(), 403, await without.text());
  assert.equal(((await without.json()) as { error: { code: string } }).error.code, 'forbidden');
  const wrong = await page.request.post(`${url}/console/api/admin/v1/accounts`, { ...body, headers: { 'x-csrf-token': 'not-the-token' } });
  assert.equal(wrong.status(), 403);
  const current = (await (await page.request.get(`${url}/console/session`)).json()) as { csrf_token: string };
  const withToken = await page.request.post(`${url}/console/api/admin/v1/accounts`, { data: { name: `With CSRF ${suffix}` }, headers: { 'x-csrf-token': current.csrf_token } });
  assert.equal(withToken.status(), 201, await withToken.text());
  const signOutWithout = await page.request.delete(`${url}/console/session`);
  assert.equal(signOutWithout.status(), 403, 'signing out is a change too');
  assert.ok(csrf.length > 0);
  // Nothing refused was made.
  const refused = await ctx.service.admin<{ data: unknown[] }>('GET', `/admin/v1/accounts?q=${encodeURIComponent(`No CSRF ${suffix}`)}`);
  assert.equal(refused.body.data.length, 0);

  const cookies = await page.context().cookies();
  const session = cookies.find((c) => c.name === 'latchkey_console');
  assert.ok(session);
  await page.getByTestId('sign-out').click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();

  // The old cookie, replayed from elsewhere, opens nothing.
  const headers = { cookie: `latchkey_console=${session.value}` };
  for (const path of ['/console/api/admin/v1/overview', '/console/session', '/console/live']) {
    const res = await fetch(`${url}${path}`, { headers });
    assert.equal(res.status, 401, path);
    assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'unauthenticated', path);
  }
  if (made.account) {
    const res = await fetch(`${url}/console/api/v1/locks`, { headers: { ...headers, 'latchkey-account': String(made.account.id) } });
    assert.equal(res.status, 401);
    // The session's API key in the account went with it.
    const keys = await ctx.service.admin<{ data: { name: string }[] }>('GET', `/admin/v1/api_keys?account_id=${made.account.id}`);
    assert.deepEqual(keys.body.data.filter((k) => k.name === 'Operator console'), []);
  }
  assertClean(watched);
});

test('every main page has no serious or critical accessibility violation at 1,440 and 360 px', async (t) => {
  if (!needs(t, 'account')) return;
  // axe-core is injected as an inline script, which the console's CSP refuses: these contexts bypass it.
  const pages = [
    { name: 'overview', path: '/console' },
    { name: 'account', path: accountPath('locations') },
    { name: 'people', path: accountPath('people') },
    { name: 'person', path: made.person ? `${accountPath('people')}/${made.person.id}` : null },
    { name: 'access-log', path: accountPath('events') },
    { name: 'webhooks', path: accountPath('webhooks') },
    { name: 'sandbox', path: '/console/sandbox' },
  ];
  const failures: string[] = [];
  for (const viewport of [DESKTOP, PHONE]) {
    const { page } = await openSignedIn('/console', { viewport, bypassCSP: true });
    for (const { name, path } of pages) {
      if (!path) continue;
      await page.goto(`${ctx.service.url}${path}`);
      await page.getByRole('heading', { level: 1 }).first().waitFor();
      await page.waitForLoadState('networkidle');
      await page.getByText('Loading…').first().waitFor({ state: 'hidden' }).catch(() => undefined);
      const violations = await axeCheck(page);
      if (violations.length > 0) failures.push(`${name} at ${viewport.width} px:\n${describeViolations(violations)}`);
      // Nothing scrolls sideways on a phone: wide tables scroll inside their own region.
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      if (width > viewport.width) failures.push(`${name} at ${viewport.width} px: the page is ${width} px wide`);
      await screenshot(page, viewport === DESKTOP ? `console-${name}` : `console-${name}-phone`, { fullPage: viewport === DESKTOP });
    }
  }
  assert.deepEqual(failures, [], failures.join('\n\n'));
});

// ---------------------------------------------------------------------------------------------------------

/** Polls until `read` gives a value; fails after `ms`. */
async function waitForValue<T>(read: () => Promise<T | undefined>, what: string, ms = 5000): Promise<T> {
  let value: T | undefined;
  await waitFor(async () => (value = await read()) !== undefined, what, ms);
  return value as T;
}

/** A read through the console's own proxy with the page's session (`/v1` paths act in `account`). */
async function consoleGet<T>(page: Page, path: string, account?: number): Promise<T> {
  const headers: Record<string, string> = account === undefined ? {} : { 'latchkey-account': String(account) };
  const response = await page.request.get(`${ctx.service.url}/console/api${path}`, { headers });
  assert.equal(response.status(), 200, `${path}: ${await response.text()}`);
  return (await response.json()) as T;
}
