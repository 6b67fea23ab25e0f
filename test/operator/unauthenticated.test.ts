// The operator API's authentication, generated from the route table: every route under /admin/v1 (the
// sandbox ones too: the test service runs with SANDBOX=true) answers 401 in the envelope without the
// operator token and with a wrong one, so a route added later, or declared without admin access, is caught.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { declaredRoutes } from '../../src/platform/route-table.ts';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, freshIp, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService();

/** Every operator route with its path parameters filled in (ids that need not exist: 401 comes first). */
function operatorRoutes(): Array<{ method: string; path: string }> {
  const routes = declaredRoutes(ctx.service.latchkey.app)
    .filter((route) => route.url.startsWith('/admin/v1/'))
    .flatMap((route) =>
      route.methods
        .filter((method) => method !== 'HEAD' && method !== 'OPTIONS')
        .map((method) => ({ method, path: route.url.replace(/:[A-Za-z_]+/g, '1') })),
    );
  // The walk sees the operator API, sandbox included.
  for (const expected of ['POST /admin/v1/accounts', 'DELETE /admin/v1/gateways/1', 'POST /admin/v1/locks', 'POST /admin/v1/sandbox/clock/advance']) {
    assert.ok(routes.some((r) => `${r.method} ${r.path}` === expected), expected);
  }
  return routes;
}

async function assertUnauthenticated(method: string, path: string, token: string | null): Promise<void> {
  const label = `${method} ${path} with ${token === null ? 'no token' : 'a wrong token'}`;
  const res = await ctx.service.request<ErrorBody>(method, path, { token, ip: freshIp() });
  assert.equal(res.status, 401, `${label}: ${res.text.slice(0, 160)}`);
  assert.equal(res.body.error.code, 'unauthenticated', label);
  assert.equal(typeof res.body.error.message, 'string', label);
  assert.equal(res.headers.get('cache-control'), 'no-store, private', label);
  assert.ok(res.headers.get('x-request-id'), label);
}

describe('every operator route', () => {
  test('answers 401 unauthenticated in the envelope without a token', async () => {
    for (const { method, path } of operatorRoutes()) await assertUnauthenticated(method, path, null);
  });

  test('answers 401 unauthenticated in the envelope to a wrong token, a near miss and a public API key', async () => {
    const account = await createAccount(ctx.service);
    const apiKey = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    for (const token of ['wrong-token-wrong-token', `${ADMIN_TOKEN}x`, apiKey.token]) {
      for (const { method, path } of operatorRoutes()) await assertUnauthenticated(method, path, token);
    }
  });

  test('lets the operator token through', async () => {
    const res = await ctx.service.admin('GET', '/admin/v1/api_keys');
    assert.equal(res.status, 200);
  });
});
