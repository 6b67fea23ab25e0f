// Registering a passkey on a setup link makes the key and binds the passkey in one step: a credential id
// already bound to another key is refused, and the link is neither spent nor held, so the holder can try
// again at once with another device. Without that, the link was spent on a live key that no device opens.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { issueKey, keysTenant, latestLink, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { SoftwarePasskey } from '../helpers/passkey.ts';
import { freshIp, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

type Options = Parameters<SoftwarePasskey['register']>[0];

/** A software passkey whose credential id is another's (an authenticator is free to report any id). */
function sameIdAs(original: SoftwarePasskey, origin: string): SoftwarePasskey {
  const copy = new SoftwarePasskey(origin);
  original.credentialId.copy(copy.credentialId);
  return copy;
}

async function newLink(tenant: KeysTenant): Promise<string> {
  const issued = await issueKey(ctx.service, tenant);
  assert.equal(issued.status, 202, issued.text);
  return latestLink(ctx.service, tenant.phone);
}

/** Options, then the registration, from one address (the per-address limits are not what is tried here). */
async function registerOn(link: string, passkey: SoftwarePasskey, ip: string) {
  const options = await ctx.service.request<Options>('POST', `${linkPath(link)}/passkey/options`, { ip });
  assert.equal(options.status, 200, options.text);
  return ctx.service.request<{ key_id: number } & ErrorBody>('POST', `${linkPath(link)}/passkey`, { ip, body: { response: passkey.register(options.body) } });
}

async function keysOf(tenant: KeysTenant): Promise<number> {
  const listed = await ctx.service.request<{ data: unknown[] }>('GET', `/v1/keys?person_id=${tenant.personId}`, { token: tenant.token });
  assert.equal(listed.status, 200, listed.text);
  return listed.body.data.length;
}

test("a credential id bound to another key is refused; the link stays usable and no key is made", async () => {
  const tenant = await keysTenant(ctx.service);
  const first = await newLink(tenant);
  const origin = new URL(first).origin;
  const phone = new SoftwarePasskey(origin);
  assert.equal((await registerOn(first, phone, freshIp())).status, 200);
  assert.equal(await keysOf(tenant), 1);

  const second = await newLink(tenant);
  const refused = await registerOn(second, sameIdAs(phone, origin), freshIp());
  assert.equal(refused.status, 401, refused.text);
  assert.equal(refused.body.error.code, 'unauthenticated');
  assert.equal(await keysOf(tenant), 1, 'no key without a device');
  // The link was not spent nor left claimed: its page shows, and another device registers on it at once.
  assert.equal((await ctx.service.request('GET', linkPath(second), { ip: freshIp() })).status, 200);
  const retried = await registerOn(second, new SoftwarePasskey(origin), freshIp());
  assert.equal(retried.status, 200, retried.text);
  assert.equal(await keysOf(tenant), 2);
});

test('two links registering one credential id at once: one key, the other link refused and usable again', async () => {
  const tenant = await keysTenant(ctx.service);
  const [a, b] = [await newLink(tenant), await newLink(tenant)];
  const origin = new URL(a).origin;
  const phone = new SoftwarePasskey(origin);
  const [optionsA, optionsB] = await Promise.all(
    [a, b].map((link) => ctx.service.request<Options>('POST', `${linkPath(link)}/passkey/options`, { ip: freshIp() })),
  );
  const twin = sameIdAs(phone, origin);
  const answers = await Promise.all([
    ctx.service.request<{ key_id: number } & ErrorBody>('POST', `${linkPath(a)}/passkey`, { ip: freshIp(), body: { response: phone.register(optionsA?.body as Options) } }),
    ctx.service.request<{ key_id: number } & ErrorBody>('POST', `${linkPath(b)}/passkey`, { ip: freshIp(), body: { response: twin.register(optionsB?.body as Options) } }),
  ]);
  assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 401], answers.map((answer) => answer.text).join(' | '));
  assert.equal(await keysOf(tenant), 1);
  const loser = answers[0]?.status === 401 ? a : b;
  const retried = await registerOn(loser, new SoftwarePasskey(origin), freshIp());
  assert.equal(retried.status, 200, retried.text);
});

test('an authenticator that did not verify the user (no screen lock, biometrics or PIN) neither binds a key nor opens with one', async () => {
  const tenant = await keysTenant(ctx.service);
  const link = await newLink(tenant);
  const origin = new URL(link).origin;
  const touchOnly = new SoftwarePasskey(origin);
  touchOnly.userVerified = false;
  const refused = await registerOn(link, touchOnly, freshIp());
  assert.equal(refused.status, 401, refused.text);
  assert.equal(await keysOf(tenant), 0);

  const phone = new SoftwarePasskey(origin);
  assert.equal((await registerOn(link, phone, freshIp())).status, 200, 'the link is still usable');
  const ip = freshIp();
  const doors = async () => {
    const challenge = await ctx.service.request<Parameters<SoftwarePasskey['assert']>[0]>('POST', '/my-key/challenge', { ip });
    assert.equal(challenge.status, 200, challenge.text);
    assert.equal(challenge.body.userVerification, 'required');
    return ctx.service.request<ErrorBody>('POST', '/my-key/doors', { ip, body: { response: phone.assert(challenge.body) } });
  };
  assert.equal((await doors()).status, 200);
  phone.userVerified = false; // the phone's screen lock turned off, or someone else's touch
  assert.equal((await doors()).status, 401);
});
