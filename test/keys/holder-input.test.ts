// What the key holder's endpoints make of malformed input, with a real passkey (test/helpers/passkey.ts): a 4xx
// in the envelope, never a 500 from a value the database cannot take.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { issueKey, keysTenant, latestLink, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { SoftwarePasskey } from '../helpers/passkey.ts';
import { freshIp, useTestService, type TestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

type RegistrationOptions = Parameters<SoftwarePasskey['register']>[0];
type AssertionOptions = Parameters<SoftwarePasskey['assert']>[0];

let phone: SoftwarePasskey;
let tenant: KeysTenant;

/** A key with a phone registered on its setup link (the service's setup: root before() hooks do not wait for each other). */
async function registeredPhone(service: TestService): Promise<void> {
  tenant = await keysTenant(service);
  const issued = await issueKey(service, tenant);
  assert.equal(issued.status, 202, issued.text);
  const link = await latestLink(service, tenant.phone);
  phone = new SoftwarePasskey(new URL(link).origin);
  const ip = freshIp();
  const options = await service.request<RegistrationOptions>('POST', `${linkPath(link)}/passkey/options`, { ip });
  assert.equal(options.status, 200, options.text);
  const registered = await service.request('POST', `${linkPath(link)}/passkey`, { ip, body: { response: phone.register(options.body) } });
  assert.equal(registered.status, 200, registered.text);
}

const ctx = useTestService(registeredPhone, {}, { transport: 'inject' });

/** A fresh, valid assertion of the phone (each from an address of its own: the per-address limits are not tried here). */
async function tap() {
  const options = await ctx.service.request<AssertionOptions>('POST', '/my-key/challenge', { ip: freshIp() });
  assert.equal(options.status, 200, options.text);
  return phone.assert(options.body);
}

test('POST /my-key/open: a lock_id beyond the safe integers is a 422 on lock_id, as every id', async () => {
  for (const lockId of [1e300, 2 ** 53, 2 ** 62]) {
    const res = await ctx.service.request<ErrorBody>('POST', '/my-key/open', { ip: freshIp(), body: { response: await tap(), lock_id: lockId } });
    assert.equal(res.status, 422, `${lockId}: ${res.text}`);
    assert.equal(res.body.error.code, 'validation_failed');
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['lock_id', 'invalid']]);
  }
  // The largest safe id is an id like any other: no such lock, so nothing opens.
  const largest = await ctx.service.request<{ refused: string | null }>('POST', '/my-key/open', { ip: freshIp(), body: { response: await tap(), lock_id: Number.MAX_SAFE_INTEGER } });
  assert.equal(largest.status, 200, largest.text);
  assert.equal(largest.body.refused, 'no_access');
});

test('a challenge in clientDataJSON that is not base64url (a NUL in it) is a failed assertion: 401, never 500', async () => {
  const issued = await issueKey(ctx.service, tenant);
  assert.equal(issued.status, 202, issued.text);
  const link = await latestLink(ctx.service, tenant.phone);
  const forged = (type: string) => {
    const clientDataJSON = Buffer.from(JSON.stringify({ type, challenge: 'abc\u0000def', origin: phone.origin, crossOrigin: false })).toString('base64url');
    return { id: phone.id, rawId: phone.id, type: 'public-key', response: { clientDataJSON, authenticatorData: '', signature: '', attestationObject: '' } };
  };
  for (const [path, body] of [
    ['/my-key/doors', { response: forged('webauthn.get') }],
    ['/my-key/open', { response: forged('webauthn.get'), lock_id: 1 }],
    [`${linkPath(link)}/passkey`, { response: forged('webauthn.create') }],
  ] as const) {
    const res = await ctx.service.request<ErrorBody>('POST', path, { ip: freshIp(), body });
    assert.equal(res.status, 401, `${path}: ${res.text}`);
    assert.equal(res.body.error.code, 'unauthenticated');
  }
  // The link was not spent: a real registration on it still works.
  const ip = freshIp();
  const options = await ctx.service.request<RegistrationOptions>('POST', `${linkPath(link)}/passkey/options`, { ip });
  const registered = await ctx.service.request('POST', `${linkPath(link)}/passkey`, { ip, body: { response: new SoftwarePasskey(phone.origin).register(options.body) } });
  assert.equal(registered.status, 200, registered.text);
});
