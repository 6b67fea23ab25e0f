// A phone key's devices in the console, in a real browser (Debian's Chromium, as in browser.test.ts): the
// person page lists the devices (passkeys) bound to each phone key, with when each was registered and last
// used, and removes one after the operator confirms, through DELETE /admin/v1/keys/{id}/devices/{device_id}.
// The phones are software passkeys (test/helpers/passkey.ts) that register on the setup links and tap over
// HTTP as the key holder's page would; what the console did is then read back from the operator API and tried
// with a tap. axe-core and the 360 px reflow check run with the panel open. Contract: docs/console.md.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { BrowserContextOptions } from 'playwright-core';
import { DESKTOP, PHONE, assertCleanPage, axeCheck, describeViolations, openConsoleSignedIn, useBrowser, type WatchedPage } from '../helpers/browser.ts';
import { issueKey, keysTenant, latestLink, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { SoftwarePasskey } from '../helpers/passkey.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

const browser = useBrowser();
const ctx = useTestService();

interface Device {
  id: number;
  registered_at: string;
  last_used_at: string | null;
}

/** A phone that activated a setup link: its passkey and the key it is bound to. */
interface Phone {
  passkey: SoftwarePasskey;
  keyId: number;
}

let site: { tenant: KeysTenant; used: Phone; unused: Phone } | undefined;

type Watched = WatchedPage;
const openSignedIn = (path: string, options: BrowserContextOptions = {}): Promise<Watched> => openConsoleSignedIn(browser, ctx.service.url, ADMIN_TOKEN, path, options);
const assertClean = (watched: Watched): void => assertCleanPage(watched, ctx.service.url);

function needsSite(t: TestContext): typeof site {
  if (!site) t.skip('needs the keys and devices the first step makes');
  return site;
}

/** Issues a phone key and activates its setup link with a new software passkey (the holder's phone). */
async function phoneKey(tenant: KeysTenant): Promise<Phone> {
  const issued = await issueKey(ctx.service, tenant);
  assert.equal(issued.status, 202, issued.text);
  const link = await latestLink(ctx.service, tenant.phone);
  const passkey = new SoftwarePasskey(new URL(link).origin);
  const options = await ctx.service.request<Parameters<SoftwarePasskey['register']>[0]>('POST', `${linkPath(link)}/passkey/options`);
  assert.equal(options.status, 200, options.text);
  const registered = await ctx.service.request<{ key_id: number }>('POST', `${linkPath(link)}/passkey`, { body: { response: passkey.register(options.body) } });
  assert.equal(registered.status, 200, registered.text);
  return { passkey, keyId: registered.body.key_id };
}

/** "Show my doors" from the phone: a fresh assertion over a new challenge; the answer's status. */
async function tap(phone: Phone): Promise<number> {
  const challenge = await ctx.service.request<Parameters<SoftwarePasskey['assert']>[0]>('POST', '/my-key/challenge');
  assert.equal(challenge.status, 200, challenge.text);
  return (await ctx.service.request('POST', '/my-key/doors', { body: { response: phone.passkey.assert(challenge.body) } })).status;
}

async function devicesOf(keyId: number): Promise<Device[]> {
  const answer = await ctx.service.admin<{ data: Device[] }>('GET', `/admin/v1/keys/${keyId}/devices`);
  assert.equal(answer.status, 200, answer.text);
  return answer.body.data;
}

const personPath = () => `/console/accounts/${site?.tenant.accountId}/people/${site?.tenant.personId}`;

// ---------------------------------------------------------------------------------------------------------

test('two phone keys of one person, each bound to a phone by its setup link; one used', async () => {
  const tenant = await keysTenant(ctx.service);
  const used = await phoneKey(tenant);
  const unused = await phoneKey(tenant);
  assert.equal(await tap(used), 200);
  site = { tenant, used, unused };
  assert.ok((await devicesOf(used.keyId))[0]?.last_used_at, 'the tap is recorded');
});

test("a key's devices on the person page: registered and last used; Remove asks first (a dialog), then the device opens nothing from its next tap", async (t) => {
  if (!needsSite(t) || !site) return;
  const { used, unused } = site;
  const [device] = await devicesOf(used.keyId);
  assert.ok(device);
  const watched = await openSignedIn(personPath());
  const { page } = watched;

  // The unused key's device: registered, never used.
  await page.getByTestId(`key-devices-${unused.keyId}`).click();
  let panel = page.getByTestId('key-devices');
  const [other] = await devicesOf(unused.keyId);
  assert.ok(other);
  await panel.getByTestId(`device-row-${other.id}`).waitFor();
  assert.equal(await panel.getByTestId(`device-last-used-${other.id}`).innerText(), 'never');
  await panel.getByTestId('close-devices').click();
  await panel.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), `key-devices-${unused.keyId}`, 'the focus goes back to the button');

  // The used one: both times shown, as the API holds them.
  const button = page.getByTestId(`key-devices-${used.keyId}`);
  await button.click();
  assert.equal(await button.getAttribute('aria-expanded'), 'true');
  panel = page.getByTestId('key-devices');
  await panel.getByRole('heading', { name: /Devices of Phone key/ }).waitFor();
  const row = panel.getByTestId(`device-row-${device.id}`);
  await row.waitFor();
  assert.equal(await row.locator('time').first().getAttribute('datetime'), device.registered_at);
  assert.equal(await panel.getByTestId(`device-last-used-${device.id}`).locator('time').getAttribute('datetime'), device.last_used_at);

  // Remove, then "Cancel" in the confirmation: nothing is removed.
  const remove = panel.getByRole('button', { name: `Remove device ${device.id} of Phone key` });
  await remove.click();
  const dialog = page.getByRole('dialog', { name: `Remove device ${device.id} from the key Phone key?` });
  await dialog.waitFor();
  assert.match((await dialog.textContent()) ?? '', /opens nothing from its next tap/);
  await page.getByTestId('confirm-cancel').click();
  await dialog.waitFor({ state: 'detached' });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal((await devicesOf(used.keyId)).length, 1, 'still bound after a cancelled confirmation');

  // Confirmed: removed, said so, the row gone; the operator API holds none.
  await remove.click();
  await page.getByTestId('confirm-yes').click();
  await panel.getByTestId('device-removed').filter({ hasText: `Device ${device.id} removed` }).waitFor();
  await row.waitFor({ state: 'detached' });
  await panel.getByText('No device', { exact: false }).waitFor();
  assert.deepEqual(await devicesOf(used.keyId), []);

  // Its next tap is refused; the other key's device still opens.
  assert.equal(await tap(used), 401, 'the removed device opens nothing');
  assert.equal(await tap(unused), 200, 'the other device is untouched');
  assertClean(watched);
});

test("a key's devices panel: no serious or critical axe violation at 1,440 and 360 px, no sideways scrolling at 360 px", async (t) => {
  if (!needsSite(t) || !site) return;
  const failures: string[] = [];
  for (const viewport of [DESKTOP, PHONE]) {
    // axe-core is injected as an inline script, which the console's CSP refuses: these contexts bypass it.
    const { page } = await openSignedIn(personPath(), { viewport, bypassCSP: true });
    await page.getByTestId(`key-devices-${site.unused.keyId}`).click();
    await page.getByTestId('key-devices').locator('[data-testid^="device-row-"]').first().waitFor();
    const violations = await axeCheck(page);
    if (violations.length > 0) failures.push(`at ${viewport.width} px:\n${describeViolations(violations)}`);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > viewport.width) failures.push(`at ${viewport.width} px: the page is ${width} px wide`);
  }
  assert.deepEqual(failures, [], failures.join('\n\n'));
});
