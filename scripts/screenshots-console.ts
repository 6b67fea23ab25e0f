// npm run screenshots:console: the operator console's access log for the top of the README
// (docs/images/console-access-log.png). Starts the service as `npm start` does, in SANDBOX mode on an embedded
// database of its own; provisions a small site through the operator API (an account in Berlin, a gateway, three
// locks, a group, two people with a card each, an API key); connects the gateway simulator of packages/cli and
// has it report door activity (cards presented, a card nobody holds, a door left open) and answer a remote
// unlock; then signs in to /console with the operator token in Debian's Chromium (playwright-core, no browser
// download) and captures the account's access log at 1,280 px, the whole page.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { runSimulatedGateway, type SimulatedGateway } from '../test/helpers/simulated-gateway.ts';
import { freePort } from '../test/helpers/mosquitto.ts';
import { startServiceProcess } from '../test/helpers/process.ts';

const ADMIN_TOKEN = 'screenshots-admin-token-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--force-color-profile=srgb'];
const VIEWPORT = { width: 1280, height: 760 };
const OUT = path.resolve('docs/images/console-access-log.png');
const ZONE = 'Europe/Berlin';

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-screenshots-'));
const port = await freePort();
const origin = `http://localhost:${port}`;
const service = await startServiceProcess({ SANDBOX: 'true', PORT: String(port), PUBLIC_URL: origin, ADMIN_TOKEN, DATA_DIR: dataDir });
let gateway: SimulatedGateway | null = null;
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });

async function call<T>(method: string, pathname: string, body?: unknown, token = ADMIN_TOKEN): Promise<T> {
  const res = await fetch(service.url + pathname, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  const account = await call<{ id: number; root_location: { id: number } }>('POST', '/admin/v1/accounts', { name: 'Harbour Works' });
  const root = account.root_location.id;
  await call('PATCH', `/admin/v1/locations/${root}`, { time_zone: ZONE });
  await call('POST', '/admin/v1/security_groups', { location_id: root, code: 'staff', title: 'Staff' });
  const gw = await call<{ id: number; mqtt: { url: string; password: string; topic_prefix: string } }>('POST', '/admin/v1/gateways', { location_id: root, name: 'Main building' });
  const lock = (name: string, place: string) =>
    call<{ id: number }>('POST', '/admin/v1/locks', { location_id: root, name, place, security_groups: ['staff'], gateway_id: gw.id });
  const front = await lock('Front door', 'Ground floor');
  const bikes = await lock('Bike room', 'Basement');
  const workshop = await lock('Workshop', 'Building B');
  const cards: Array<{ name: string; credential: string }> = [
    { name: 'Ada Lovelace', credential: 'wiegand26:12:34567' },
    { name: 'Grace Hopper', credential: 'wiegand26:12:41002' },
  ];
  for (const card of cards) {
    const person = await call<{ id: string }>('POST', '/admin/v1/people', { name: card.name, location_id: root });
    await call('POST', '/admin/v1/keys', { person_id: person.id, type: 'card', name: 'Badge', security_groups: ['staff'], credential: card.credential });
  }
  const desk = await call<{ token: string }>('POST', '/admin/v1/api_keys', { location_id: root, name: 'Reception desk', scopes: ['locks:control', 'events:read'], lock_allowlist: [front.id] });

  // The gateway at the doors: it takes its access list, decides the cards from it and answers unlocks.
  gateway = await runSimulatedGateway({ url: gw.mqtt.url, id: gw.id, password: gw.mqtt.password, prefix: gw.mqtt.topic_prefix });
  const { log } = gateway;
  await pause(500);

  const typed = [
    `swipe ${front.id} wiegand26:12:34567`,
    `close ${front.id}`,
    `swipe ${bikes.id} wiegand26:12:41002`,
    `swipe ${workshop.id} wiegand26:99:11111`,
    `swipe ${workshop.id} wiegand26:12:34567`,
    `left-open ${workshop.id}`,
  ];
  for (const line of typed) {
    gateway.type(line);
    await pause(300);
  }
  await call('POST', `/v1/locks/${front.id}/unlock`, {}, desk.token);
  await pause(1500);
  const events = await call<{ data: unknown[] }>('GET', '/v1/events', undefined, desk.token);
  assert.ok(events.data.length >= 6, `door activity in the access log (${events.data.length} rows):\n${log.join('\n')}`);

  const context = await browser.newContext({ viewport: VIEWPORT, locale: 'en-GB', timezoneId: ZONE });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const session = await page.request.post(`${service.url}/console/session`, { data: { token: ADMIN_TOKEN } });
  assert.ok(session.ok(), `console sign-in: ${session.status()}`);
  await page.goto(`${service.url}/console/accounts/${account.id}/events`);
  await page.locator('table').getByText('Reception desk').first().waitFor();
  await page.locator('table').getByText('Grace Hopper').first().waitFor();
  await pause(300);
  await page.screenshot({ path: OUT, fullPage: true, animations: 'disabled', caret: 'hide' });
  console.log(`wrote ${path.relative(process.cwd(), OUT)}`);
  await context.close();
} finally {
  await browser.close();
  await gateway?.stop();
  service.child.kill('SIGTERM');
  await service.exited;
  await rm(dataDir, { recursive: true, force: true });
}
