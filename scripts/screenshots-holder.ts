// npm run screenshots:holder: the key holder's page at 360 px for the README (docs/screenshots/holder-*.png).
// Starts the service as `npm start` does, in SANDBOX mode on an embedded database of its own, with PUBLIC_URL
// on the port it listens on (the passkey's origin and RP id); provisions a small site through the operator and
// public APIs; advances the sandbox clock to a Wednesday at 10:00 in the site's time zone, so that the windows
// read the same on every run; issues a phone key, takes its setup link from the sandbox outbox and opens it in
// Debian's Chromium (playwright-core, no browser download) with the DevTools WebAuthn virtual authenticator;
// registers, shows the doors (holder-doors-phone.png), taps Open on the Front door with the gateway simulator
// (packages/cli) connected and answering, and captures the outcome (holder-open-phone.png).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DateTime } from 'luxon';
import { chromium } from 'playwright-core';
import { runSimulatedGateway, type SimulatedGateway } from '../test/helpers/simulated-gateway.ts';
import { freePort } from '../test/helpers/mosquitto.ts';
import { startServiceProcess } from '../test/helpers/process.ts';

const ADMIN_TOKEN = 'screenshots-admin-token-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--force-color-profile=srgb'];
/** As test/helpers/browser.ts: a small phone. */
const PHONE = { width: 360, height: 780 };
const OUT = path.resolve('docs/screenshots');
const ZONE = 'Europe/Berlin';

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-screenshots-'));
const port = await freePort();
const origin = `http://localhost:${port}`;
const service = await startServiceProcess({ SANDBOX: 'true', PORT: String(port), PUBLIC_URL: origin, ADMIN_TOKEN, DATA_DIR: dataDir });
let gateway: SimulatedGateway | null = null;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

async function call<T>(method: string, pathname: string, body?: unknown, token = ADMIN_TOKEN, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(service.url + pathname, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

try {
  // The sandbox clock to the next Wednesday, 10:00 in the site's zone (a weekday inside the workshop's window).
  const clock = await call<{ now: string }>('GET', '/admin/v1/sandbox/clock');
  const now = DateTime.fromISO(clock.now, { zone: ZONE });
  let target = now.set({ hour: 10, minute: 0, second: 0, millisecond: 0 });
  while (target.weekday !== 3 || target <= now) target = target.plus({ days: 1 }).set({ hour: 10, minute: 0 });
  const offsetMs = target.toMillis() - now.toMillis();
  await call('POST', '/admin/v1/sandbox/clock/advance', { seconds: offsetMs / 1000 });

  // The site: a building in Berlin, staff at any time, the workshop on weekdays.
  const account = await call<{ id: number; root_location: { id: number } }>('POST', '/admin/v1/accounts', { name: 'Harbour Works' });
  const root = account.root_location.id;
  await call('PATCH', `/admin/v1/locations/${root}`, { time_zone: ZONE });
  await call('POST', '/admin/v1/security_groups', { location_id: root, code: 'staff', title: 'Staff' });
  const weekdays = ['mon', 'tue', 'wed', 'thu', 'fri'];
  await call('POST', '/admin/v1/security_groups', { location_id: root, code: 'workshop', title: 'Workshop', windows: [{ days: weekdays, start: '07:00', end: '19:00' }] });
  const gw = await call<{ id: number; mqtt: { url: string; password: string; topic_prefix: string } }>('POST', '/admin/v1/gateways', { location_id: root, name: 'Main building' });
  const lock = (name: string, place: string, groups: string[]) =>
    call<{ id: number }>('POST', '/admin/v1/locks', { location_id: root, name, place, security_groups: groups, gateway_id: gw.id });
  await lock('Front door', 'Ground floor', ['staff']);
  await lock('Bike room', 'Basement', ['staff']);
  await lock('Workshop', 'Building B', ['workshop']);
  const apiKey = await call<{ token: string }>('POST', '/admin/v1/api_keys', { location_id: root, name: 'Visitor desk', scopes: ['people:write', 'keys:write'] });
  const phone = '+4930901820';
  const person = await call<{ id: string }>('POST', '/v1/people', { name: 'Ada Lovelace', phone, email: 'ada@example.com' }, apiKey.token);
  await call('POST', '/v1/keys', { person_id: person.id, name: 'Office key', security_groups: ['staff', 'workshop'] }, apiKey.token);

  // The gateway at the doors, answering every command at once (its clock is the sandbox's).
  const door = { url: gw.mqtt.url.replace('localhost', '127.0.0.1'), id: gw.id, password: gw.mqtt.password, prefix: gw.mqtt.topic_prefix };
  gateway = await runSimulatedGateway(door, 'ok', () => new Date(Date.now() + offsetMs));

  // The setup link, as the SMS carried it (due messages go out when the clock moves).
  await call('POST', '/admin/v1/sandbox/clock/advance', { seconds: 0 });
  const outbox = await call<{ data: Array<{ link: string | null }> }>('GET', `/admin/v1/sandbox/outbox?to=${encodeURIComponent(phone)}`);
  const link = outbox.data.find((message) => message.link)?.link;
  assert.ok(link, 'a setup link in the outbox');

  // The holder's phone: 360 px, a platform authenticator that keeps the passkey and verifies its user.
  const context = await browser.newContext({ viewport: PHONE, locale: 'en-GB' });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  const shoot = async (name: string) => {
    const file = path.join(OUT, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide' });
    console.log(`wrote ${path.relative(process.cwd(), file)}`);
  };

  await page.goto(link);
  await page.getByRole('button', { name: 'Activate my key' }).click();
  await page.waitForURL(`${origin}/my-key`);
  await page.getByRole('button', { name: 'Show my doors' }).click();
  const front = page.locator('li', { hasText: 'Front door' });
  await front.waitFor();
  await page.getByText('Workshop · Building B').waitFor();
  // The focus ring of the button just pressed is not part of the picture.
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await shoot('holder-doors-phone');

  await front.getByRole('button', { name: 'Open: Front door' }).click();
  await front.getByText('Open. Go ahead.').waitFor();
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await shoot('holder-open-phone');
  await context.close();
} finally {
  await browser.close();
  await gateway?.stop();
  service.child.kill('SIGTERM');
  await service.exited;
  await rm(dataDir, { recursive: true, force: true });
}
