// The key holder's page (README "The key holder's page") end to end in Chromium with the DevTools WebAuthn
// virtual authenticator: a setup link from the sandbox outbox registers a passkey, /my-key shows the doors,
// Open reaches a gateway that answers and confirms; a revoked key opens nothing from the next tap. Then the
// attacks over HTTP with real assertions made by the virtual authenticator: replayed, another key's,
// another origin, a stale challenge, a lock not in the key's groups, two taps at once on one lock.
// The steps run in order and share what they made.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import axe from 'axe-core';
import type { BrowserContext, Page } from 'playwright-core';
import { PHONE, axeCheck, describeViolations, screenshot, useBrowser, watchProblems } from '../helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { advanceClock, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, waitFor } from '../helpers/gateways.ts';
import { issueKey, keysTenant, latestLink, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

const browser = useBrowser();
const connect = gatewayClients();

/** A free port: PUBLIC_URL (the RP id and origin) must name the port the service listens on. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let database: TestDatabase;
let service: TestService;
/** The service as the browser sees it: http://localhost:port (an IP address cannot be an RP id). */
let origin: string;
/** Another origin on the same host (a look-alike page): localhost is its RP id too. */
let elsewhere: Server;
let elsewhereOrigin: string;

before(async () => {
  const port = await freePort();
  origin = `http://localhost:${port}`;
  database = await createTestDatabase();
  // Requests from the test go in through inject; the browser's through the port PUBLIC_URL names.
  service = await startService(database.db, { PUBLIC_URL: origin }, undefined, undefined, 'inject');
  await service.latchkey.app.listen({ port, host: '127.0.0.1' });
  await service.latchkey.jobs.start();
  elsewhere = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'));
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  elsewhereOrigin = `http://localhost:${(elsewhere.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise((resolve) => elsewhere?.close(resolve));
  await service?.close();
  await database?.close();
});

interface Site {
  tenant: KeysTenant;
  gatewayId: number;
  front: number;
  backOffice: number;
  commands: Array<{ id: string; lock_id: number }>;
  answering: boolean;
}

/** A tenant whose Front door (group staff) and Back office (group night only) sit on a gateway that answers. */
async function site(): Promise<Site> {
  const tenant = await keysTenant(service);
  const gateway = await createGateway(service, tenant.locationId);
  const [row] = await database.db.query<{ id: number }>(`SELECT id FROM locks WHERE location_id = $1 AND name = 'Front door'`, [tenant.locationId]);
  const front = Number(row?.id);
  assert.ok(front, 'the Front door');
  const moved = await service.admin('PATCH', `/admin/v1/locks/${front}`, { gateway_id: gateway.id });
  assert.equal(moved.status, 200, moved.text);
  const backOffice = await createLock(service, tenant.locationId, { name: 'Back office', security_groups: ['night'], gateway_id: gateway.id });
  const client = await connect(gateway);
  const base = `${gateway.mqtt.topic_prefix}/gateways/${gateway.id}`;
  const made: Site = { tenant, gatewayId: gateway.id, front, backOffice, commands: [], answering: true };
  client.on('message', (topic, payload) => {
    if (!topic.endsWith('/commands')) return;
    const command = JSON.parse(payload.toString()) as { id: string; lock_id: number };
    made.commands.push(command);
    if (made.answering) void client.publishAsync(`${base}/commands/result`, JSON.stringify({ id: command.id, ok: true }), { qos: 1 });
  });
  await client.subscribeAsync(`${base}/commands`, { qos: 1 });
  await client.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1, retain: true });
  await waitFor(async () => {
    const rows = await database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gateway.id]);
    return rows[0]?.online === true;
  }, 'the gateway is online');
  return made;
}

const phones: BrowserContext[] = [];
after(async () => {
  for (const context of phones) await context.close().catch(() => undefined);
});

/** A phone: a context at 360 px with a platform authenticator that keeps resident keys and verifies its user. */
async function phone(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  // Kept across the steps of a describe (the harness closes its contexts after each test).
  const context = await (await browser.browser()).newContext({ viewport: PHONE });
  context.setDefaultTimeout(10_000);
  phones.push(context);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  const problems = watchProblems(page);
  page.on('console', (message) => process.env.HOLDER_DEBUG && console.log('browser:', message.text()));
  return { context, page, problems };
}

/** Issues a key and registers it on the phone through the setup page; its id. */
async function register(s: Site, page: Page): Promise<number> {
  const issued = await issueKey(service, s.tenant);
  assert.equal(issued.status, 202, JSON.stringify(issued.body));
  const link = await latestLink(service, s.tenant.phone);
  await page.goto(`${origin}${linkPath(link)}`);
  await page.getByRole('button', { name: 'Activate my key' }).click();
  await page.waitForURL(`${origin}/my-key`).catch(async (error: Error) => {
    throw new Error(`${error.message}\nthe page says: ${await page.locator('#status').innerText().catch(() => '?')}`);
  });
  const [row] = await database.db.query<{ key_id: number }>(
    'SELECT p.key_id FROM passkeys p JOIN keys k ON k.id = p.key_id WHERE k.person_id = $1 ORDER BY p.id DESC LIMIT 1',
    [s.tenant.personId],
  );
  assert.ok(row, 'a passkey is bound to the key');
  return Number(row.key_id);
}

/** A real assertion by the phone's passkey over `challenge` (from the service), made on the page's origin. */
async function assertion(page: Page, challenge: string): Promise<Record<string, unknown>> {
  // A string, not a closure: the test's transpiler would name the helpers with a function the page lacks.
  return page.evaluate(`(async () => {
    const challenge = ${JSON.stringify(challenge)};
    const bytes = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)), (c) => c.charCodeAt(0));
    const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    const credential = await navigator.credentials.get({ publicKey: { challenge: bytes(challenge), rpId: 'localhost', userVerification: 'preferred' } });
    const response = credential.response;
    return {
      id: credential.id,
      rawId: text(credential.rawId),
      type: credential.type,
      clientExtensionResults: {},
      response: {
        clientDataJSON: text(response.clientDataJSON),
        authenticatorData: text(response.authenticatorData),
        signature: text(response.signature),
        ...(response.userHandle ? { userHandle: text(response.userHandle) } : {}),
      },
    };
  })()`);
}

async function challenge(): Promise<string> {
  const res = await service.request<{ challenge: string }>('POST', '/my-key/challenge');
  assert.equal(res.status, 200, res.text);
  return res.body.challenge;
}

interface OpenAnswer {
  refused: string | null;
  command: { id: string; status: string } | null;
}

const openWith = (response: unknown, lockId: number, ip = '198.51.100.7') =>
  service.request<OpenAnswer>('POST', '/my-key/open', { body: { response, lock_id: lockId }, ip });

async function accessLog(accountId: number) {
  return database.db.query<{ type: string; reason: string | null; source: string; data: { person: { name: string } | null; key: { id: number } | null; api_key: unknown } }>(
    `SELECT type, data->>'reason' AS reason, data->>'source' AS source, data FROM domain_events
      WHERE account_id = $1 AND type IN ('access.granted', 'access.denied', 'unlock.failed') ORDER BY id`,
    [accountId],
  );
}

describe('the key holder’s page in Chromium', { concurrency: false }, () => {
  let s: Site;
  let holder: Awaited<ReturnType<typeof phone>>;
  let keyId: number;

  test('a setup link registers a passkey; Show my doors and Open confirm at the gateway, logged with the person and key', async () => {
    s = await site();
    holder = await phone();
    keyId = await register(s, holder.page);
    const page = holder.page;
    await page.getByRole('button', { name: 'Show my doors' }).click();
    const front = page.locator(`li[data-lock-id="${s.front}"]`);
    await front.waitFor();
    assert.match(await front.innerText(), /Front door[\s\S]*at any time · opens now/);
    assert.equal(await page.locator(`li[data-lock-id="${s.backOffice}"]`).count(), 0, 'a lock of another group is not shown');
    assert.match(await page.locator('#validity').innerText(), /Valid from[\s\S]*Valid until[\s\S]*no end date/);
    await screenshot(page, 'my-key-phone');
    assert.deepEqual(holder.problems, [], 'no CSP refusal or script error');
    // axe-core goes in through DevTools (page.evaluate is not subject to the page's CSP, a script tag is).
    await page.evaluate(axe.source);
    const violations = await axeCheck(page);
    assert.deepEqual(violations, [], describeViolations(violations));

    await front.getByRole('button', { name: 'Open: Front door' }).click();
    await front.getByText('Open. Go ahead.').waitFor();
    assert.equal(s.commands.filter((c) => c.lock_id === s.front).length, 1, 'one command for the lock');
    await waitFor(async () => (await accessLog(s.tenant.accountId)).some((e) => e.type === 'access.granted'), 'access.granted');
    const [granted] = (await accessLog(s.tenant.accountId)).filter((e) => e.type === 'access.granted');
    assert.deepEqual([granted?.source, granted?.data.key?.id, granted?.data.api_key], ['key_holder', keyId, null]);
    assert.ok(granted?.data.person?.name, 'the person is named');
    assert.deepEqual(holder.problems, [], 'no CSP refusal or script error');

    const devices = await service.admin<{ data: Array<{ id: number; registered_at: string; last_used_at: string | null }> }>('GET', `/admin/v1/keys/${keyId}/devices`);
    assert.equal(devices.status, 200, devices.text);
    assert.equal(devices.body.data.length, 1);
    assert.ok(devices.body.data[0]?.last_used_at, 'last used is recorded');
  });

  test('a key revoked after the page loaded opens nothing from the next tap, and the page says why', async () => {
    const revoked = await service.request('DELETE', `/v1/keys/${keyId}`, { token: s.tenant.token });
    assert.equal(revoked.status, 204, revoked.text);
    const before = s.commands.length;
    const front = holder.page.locator(`li[data-lock-id="${s.front}"]`);
    await front.getByRole('button', { name: 'Open: Front door' }).click();
    await front.getByText('This key has been revoked. It opens nothing any more.').waitFor();
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(s.commands.length, before, 'no command');
    const denied = (await accessLog(s.tenant.accountId)).filter((e) => e.type === 'access.denied');
    assert.equal(denied.length, 1);
    assert.equal(denied[0]?.data.key?.id, keyId);
  });
});

describe('attacks on the key holder’s endpoints, with real assertions', { concurrency: false }, () => {
  let s: Site;
  let a: Awaited<ReturnType<typeof phone>>;
  let b: Awaited<ReturnType<typeof phone>>;

  before(async () => {
    s = await site();
  });

  test('a replayed assertion opens nothing the second time', async () => {
    a = await phone();
    await register(s, a.page);
    const response = await assertion(a.page, await challenge());
    const first = await openWith(response, s.front);
    assert.equal(first.status, 200, first.text);
    assert.ok(first.body.command);
    const replay = await openWith(response, s.front);
    assert.equal(replay.status, 401, replay.text);
  });

  test("an assertion presented as another key's passkey (its credential id) fails the signature", async () => {
    b = await phone();
    await register(s, b.page);
    const [other] = await database.db.query<{ credential_id: string }>('SELECT credential_id FROM passkeys ORDER BY id DESC LIMIT 1');
    const response = await assertion(a.page, await challenge());
    const forged = { ...response, id: other?.credential_id, rawId: other?.credential_id };
    const res = await openWith(forged, s.front);
    assert.equal(res.status, 401, res.text);
  });

  test('an assertion made on another origin (same RP id, a look-alike page) is refused', async () => {
    const page = a.page;
    const back = page.url();
    await page.goto(elsewhereOrigin);
    const response = await assertion(page, await challenge());
    await page.goto(back);
    const res = await openWith(response, s.front);
    assert.equal(res.status, 401, res.text);
  });

  test('a challenge 61 s old (sandbox clock) is refused', async () => {
    const stale = await challenge();
    await advanceClock(service, 61);
    const res = await openWith(await assertion(a.page, stale), s.front);
    assert.equal(res.status, 401, res.text);
  });

  test("a lock not in the key's groups is refused as no_access and logged access.denied", async () => {
    const before = s.commands.length;
    const res = await openWith(await assertion(a.page, await challenge()), s.backOffice);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { refused: 'no_access', command: null });
    assert.equal(s.commands.length, before);
    const denied = (await accessLog(s.tenant.accountId)).filter((e) => e.type === 'access.denied');
    assert.equal(denied.at(-1)?.reason, 'no_access');
  });

  test('a phone key whose credential the operator removed opens nothing from the page, logged access.denied; given one again, it opens', async () => {
    const [row] = await database.db.query<{ key_id: number }>('SELECT p.key_id FROM passkeys p JOIN keys k ON k.id = p.key_id WHERE k.account_id = $1 ORDER BY p.id LIMIT 1', [s.tenant.accountId]);
    const keyOfA = Number(row?.key_id);
    const removed = await service.admin('PATCH', `/admin/v1/keys/${keyOfA}`, { credential: null });
    assert.equal(removed.status, 200, removed.text);
    const before = s.commands.length;
    const res = await openWith(await assertion(a.page, await challenge()), s.front, '198.51.100.9');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { refused: 'no_credential', command: null });
    const doors = await service.request<{ refusal: string | null; doors: unknown[] }>('POST', '/my-key/doors', { body: { response: await assertion(a.page, await challenge()) }, ip: '198.51.100.9' });
    assert.deepEqual([doors.status, doors.body.refusal, doors.body.doors], [200, 'no_credential', []], doors.text);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(s.commands.length, before, 'no command');
    const denied = (await accessLog(s.tenant.accountId)).filter((e) => e.type === 'access.denied');
    assert.deepEqual([denied.at(-1)?.reason, denied.at(-1)?.data.key?.id], ['no_access', keyOfA]);

    const given = await service.admin('PATCH', `/admin/v1/keys/${keyOfA}`, { credential: `phone:${'ab'.repeat(16)}` });
    assert.equal(given.status, 200, given.text);
    const again = await openWith(await assertion(a.page, await challenge()), s.front, '198.51.100.9');
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.refused, null, again.text);
    assert.ok(again.body.command, 'a command');
  });

  test('two taps at once on one lock (two holders) make one command', async () => {
    s.answering = false; // the door takes its time: the first command is still in flight
    const before = s.commands.length;
    const first = await assertion(a.page, await challenge());
    const second = await assertion(b.page, await challenge());
    const [x, y] = await Promise.all([openWith(first, s.front), openWith(second, s.front)]);
    assert.equal(x.status, 200, x.text);
    assert.equal(y.status, 200, y.text);
    assert.equal(x.body.command?.id, y.body.command?.id, 'the same command');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(s.commands.length - before, 1, 'the door is pulsed once');
    const status = await service.request<{ status: string }>('GET', `/my-key/commands/${x.body.command?.id}`);
    assert.equal(status.body.status, 'published');
  });

  test('a device removed by the operator opens nothing from its next tap', async () => {
    s.answering = true;
    const [row] = await database.db.query<{ key_id: number }>('SELECT key_id FROM passkeys ORDER BY id DESC LIMIT 1');
    const keyId = Number(row?.key_id);
    const devices = await service.admin<{ data: Array<{ id: number; registered_at: string; last_used_at: string | null }> }>('GET', `/admin/v1/keys/${keyId}/devices`);
    assert.equal(devices.body.data.length, 1, devices.text);
    const removed = await service.admin('DELETE', `/admin/v1/keys/${keyId}/devices/${devices.body.data[0]?.id}`);
    assert.equal(removed.status, 204, removed.text);
    assert.equal((await service.admin('DELETE', `/admin/v1/keys/${keyId}/devices/${devices.body.data[0]?.id}`)).status, 404);
    const res = await openWith(await assertion(b.page, await challenge()), s.front);
    assert.equal(res.status, 401, res.text);
  });

  test("a key outside its group's window is refused as outside_time_window", async () => {
    const [group] = await database.db.query<{ id: number }>(`SELECT id FROM security_groups WHERE location_id = $1 AND code = 'staff'`, [s.tenant.locationId]);
    const clock = await service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
    const hour = (offset: number) => `${String((new Date(clock.body.now).getUTCHours() + offset) % 24).padStart(2, '0')}:00`;
    const every = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
    const patched = await service.admin('PATCH', `/admin/v1/security_groups/${group?.id}`, { windows: [{ days: every, start: hour(2), end: hour(3) }] });
    assert.equal(patched.status, 200, patched.text);
    const before = s.commands.length;
    const res = await openWith(await assertion(a.page, await challenge()), s.front, '198.51.100.8');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, { refused: 'outside_time_window', command: null });
    assert.equal(s.commands.length, before);
  });

  test("a registration over another setup link's challenge activates nothing", async () => {
    await issueKey(service, s.tenant);
    const first = linkPath(await latestLink(service, s.tenant.phone));
    await issueKey(service, s.tenant);
    const second = linkPath(await latestLink(service, s.tenant.phone));
    assert.notEqual(first, second);
    const options = await service.request<{ challenge: string }>('POST', `${first}/passkey/options`);
    assert.equal(options.status, 200, options.text);
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge: options.body.challenge, origin })).toString('base64url');
    const forged = { id: 'x', rawId: 'x', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON, attestationObject: 'o2NmbXRkbm9uZQ' } };
    const res = await service.request('POST', `${second}/passkey`, { body: { response: forged }, ip: '198.51.100.9' });
    assert.equal(res.status, 401, res.text);
    assert.equal((await service.request('GET', second)).status, 200, 'the second link is still usable');
  });

  test('bad assertions naming a passkey, from anywhere, never lock its holder out', async () => {
    const real = await assertion(a.page, await challenge());
    const response = real.response as Record<string, unknown>;
    for (let i = 0; i < 6; i++) {
      // A real challenge spent, the holder's credential id, a signature that does not check out: from six addresses.
      const junk = { ...(await assertion(a.page, await challenge())), response: { ...response, signature: 'AAAA' } };
      const res = await service.request('POST', '/my-key/doors', { body: { response: junk }, ip: `198.51.100.${100 + i}` });
      assert.equal(res.status, 401, res.text);
    }
    // Before, the key's own count of failures (5 a minute) refused the holder's next tap: 429.
    const doors = await service.request('POST', '/my-key/doors', { body: { response: await assertion(a.page, await challenge()) }, ip: '198.51.100.120' });
    assert.equal(doors.status, 200, doors.text);
  });

  test('failed assertions from one address are limited', async () => {
    const garbage = { id: 'nope', rawId: 'nope', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: 'e30', authenticatorData: '', signature: '' } };
    let last = 0;
    for (let i = 0; i < 12; i++) last = (await openWith(garbage, s.front, '203.0.113.99')).status;
    assert.equal(last, 429);
  });
});

describe('the key holder’s page as served', () => {
  test('German from Accept-Language, the console’s CSP with no inline script, an installable manifest with an icon', async () => {
    const page = await service.request('GET', '/my-key', { headers: { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' } });
    assert.equal(page.status, 200);
    assert.match(page.text, /<html lang="de">/);
    assert.match(page.text, /Meine Türen zeigen/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.doesNotMatch(page.text, /<script>|<style>| on[a-z]+="/, 'nothing inline');
    assert.match((await service.request('GET', '/my-key')).text, /Show my doors/);
    const manifest = await service.request<{ start_url: string; icons: Array<{ src: string }> }>('GET', '/my-key/manifest.webmanifest');
    assert.equal(manifest.body.start_url, '/my-key');
    const icon = await service.request('GET', manifest.body.icons[0]?.src ?? '');
    assert.equal(icon.status, 200);
    assert.equal(icon.headers.get('content-type'), 'image/svg+xml');
    assert.equal((await service.request('GET', '/my-key/assets/holder.js')).status, 200);
  });

  test("the manifest's icons are served as their stated type and size (a PNG's IHDR), iOS's home-screen icon too", async () => {
    // The bytes as sent (the test's request helper reads text).
    const fetchBytes = async (url: string) => {
      const answer = await service.latchkey.app.inject({ method: 'GET', url });
      return { status: answer.statusCode, type: String(answer.headers['content-type']), body: answer.rawPayload };
    };
    /** Width and height from a PNG's header chunk, which must come first. */
    const pngSize = (body: Buffer): string => {
      assert.ok(body.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'a PNG signature');
      assert.equal(body.toString('latin1', 12, 16), 'IHDR', 'the IHDR chunk first');
      return `${body.readUInt32BE(16)}x${body.readUInt32BE(20)}`;
    };
    const manifest = await service.request<{ icons: Array<{ src: string; sizes: string; type: string }> }>('GET', '/my-key/manifest.webmanifest');
    const pngs = manifest.body.icons.filter((icon) => icon.type === 'image/png');
    assert.deepEqual(pngs.map((icon) => icon.sizes).sort(), ['192x192', '512x512'], 'the sizes an installable page needs');
    for (const icon of manifest.body.icons) {
      const served = await fetchBytes(icon.src);
      assert.equal(served.status, 200, icon.src);
      assert.equal(served.type, icon.type, icon.src);
      if (icon.type === 'image/png') assert.equal(pngSize(served.body), icon.sizes, icon.src);
    }
    const page = await service.request('GET', '/my-key');
    const touch = /<link rel="apple-touch-icon" href="([^"]+)">/.exec(page.text)?.[1];
    assert.ok(touch, 'the page names an apple-touch-icon');
    const served = await fetchBytes(touch);
    assert.equal(served.status, 200);
    assert.equal(served.type, 'image/png');
    assert.equal(pngSize(served.body), '180x180');
  });
});
