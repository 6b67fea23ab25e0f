// A listen stream whose account becomes a reseller ends as a revoked key's does (every request of a reseller's
// key answers 403 not_available, spec: Authentication): at the auth channel's NOTIFY that the account's change
// raises, with `event: end` `key_revoked`; events emitted afterwards are not streamed to it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { openListenStream } from '../helpers/listen.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** A listen stream of the test's service. */
const listen = (token: string, query = '') => openListenStream(ctx.service.url, token, query);

async function tenant() {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  return { account, token: key.token };
}

test('a listen stream ends when its account becomes a reseller; a stream of another account goes on', async () => {
  const reseller = await tenant();
  const other = await tenant();
  const stream = await listen(reseller.token);
  const otherStream = await listen(other.token);
  await stream.ready();
  await otherStream.ready();

  const patched = await ctx.service.admin('PATCH', `/admin/v1/accounts/${reseller.account.id}`, { reseller: true });
  assert.equal(patched.status, 200, patched.text);
  const refused = await ctx.service.request<{ error: { code: string } }>('GET', '/v1/webhooks', { token: reseller.token });
  assert.deepEqual([refused.status, refused.body.error.code], [403, 'not_available']);

  await waitFor(() => stream.ended(), "the end of the reseller account's stream");
  assert.deepEqual(stream.messages.at(-1), { event: 'end', data: JSON.stringify({ reason: 'key_revoked' }) });

  // The other account's stream is still open and still streams.
  const created = await ctx.service.admin('POST', '/admin/v1/people', { location_id: other.account.rootLocationId, name: 'After reseller' });
  assert.equal(created.status, 201, created.text);
  await waitFor(() => otherStream.deliveries().some((d) => d.body.includes('After reseller')), "the other stream's delivery");
  assert.equal(otherStream.ended(), false);
  await otherStream.close();

  const again = await ctx.service.request<{ error: { code: string } }>('GET', '/v1/webhooks/listen', { token: reseller.token });
  assert.deepEqual([again.status, again.body.error.code], [403, 'not_available']);
});
