// Authentication, scopes and reseller refusal. The security cases common to every public route are
// generated from the OpenAPI document, so each route that later issues add is covered without a new test.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ALL_SCOPES, advanceClock, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { freshIp, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let account: { id: number; rootLocationId: number };
let lockId: number;

const ctx = useTestService(async (service) => {
  account = await createAccount(service);
  lockId = await createLock(service, account.rootLocationId);
}, {}, { transport: 'inject' });

describe('bearer authentication', () => {
  test('a missing, malformed or unknown token answers 401 unauthenticated', async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer lk_short' },
      { authorization: `Bearer lk_${'A'.repeat(43)}` },
    ];
    for (const headers of cases) {
      const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { headers, ip: freshIp() });
      assert.equal(res.status, 401, JSON.stringify(headers));
      assert.equal(res.body.error.code, 'unauthenticated');
      assert.equal(res.headers.get('cache-control'), 'no-store, private');
    }
  });

  test('a valid key is accepted, and answers 401 from the moment it is revoked', async () => {
    const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    const ok = await ctx.service.request('GET', '/v1/locks', { token: key.token });
    assert.equal(ok.status, 200);
    const revoke = await ctx.service.admin('DELETE', `/admin/v1/api_keys/${key.id}`);
    assert.equal(revoke.status, 204);
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { token: key.token });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.code, 'unauthenticated');
  });

  test('a key answers 401 once its expiry passes on the service clock', async () => {
    const clock = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
    const expiresAt = new Date(new Date(clock.body.now).getTime() + 3600_000).toISOString();
    const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read'], { expires_at: expiresAt });
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token: key.token })).status, 200);
    await advanceClock(ctx.service, 3601);
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { token: key.token });
    assert.equal(res.status, 401);
  });
});

interface OpenApi {
  paths: Record<string, Record<string, { security?: Array<{ bearer: string[] }> }>>;
}

async function publicOperations(): Promise<Array<{ method: string; path: string; scopes: string[] }>> {
  const doc = await ctx.service.request<OpenApi>('GET', '/v1/openapi.json');
  const operations = [];
  for (const [path, methods] of Object.entries(doc.body.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const scopes = operation.security?.[0]?.bearer;
      if (!scopes) continue;
      // Route parameters get values of the right type; a lock id that exists keeps 404 out of the way.
      const concrete = path
        .replace('{id}', String(lockId))
        .replace(/\{[a-z_]+\}/g, '00000000-0000-4000-8000-000000000000');
      operations.push({ method: method.toUpperCase(), path: concrete, scopes });
    }
  }
  assert.ok(operations.length >= 3, 'the OpenAPI document lists the public operations');
  return operations;
}

describe('every public route', () => {
  test('answers 401 without a token', async () => {
    for (const op of await publicOperations()) {
      const res = await ctx.service.request<ErrorBody>(op.method, op.path, { ip: freshIp() });
      assert.equal(res.status, 401, `${op.method} ${op.path}`);
      assert.equal(res.body.error.code, 'unauthenticated');
    }
  });

  test('answers 403 insufficient_scope to a key holding every other scope', async () => {
    for (const op of await publicOperations()) {
      const others = ALL_SCOPES.filter((s) => !op.scopes.includes(s));
      const key = await createApiKey(ctx.service, account.rootLocationId, others);
      const res = await ctx.service.request<ErrorBody>(op.method, op.path, { token: key.token });
      assert.equal(res.status, 403, `${op.method} ${op.path}`);
      assert.equal(res.body.error.code, 'insufficient_scope');
    }
  });

  test('is let through by each scope it accepts (read endpoints accept read or write)', async () => {
    for (const op of await publicOperations()) {
      for (const scope of op.scopes) {
        const key = await createApiKey(ctx.service, account.rootLocationId, [scope]);
        // The listener stream never ends: an unknown event name answers 400 after authorisation, no stream.
        const path = op.path === '/v1/webhooks/listen' ? `${op.path}?events=nope` : op.path;
        const res = await ctx.service.request<ErrorBody>(op.method, path, { token: key.token });
        assert.notEqual(res.status, 401, `${op.method} ${op.path} with ${scope}`);
        assert.ok(res.status !== 403 || res.body.error.code !== 'insufficient_scope', `${op.method} ${op.path} with ${scope}`);
      }
    }
  });

  test('answers 403 not_available to a reseller account key, whatever its scopes', async () => {
    const reseller = await createAccount(ctx.service, { name: 'Reseller', reseller: true });
    const key = await createApiKey(ctx.service, reseller.rootLocationId, ALL_SCOPES);
    for (const op of await publicOperations()) {
      const res = await ctx.service.request<ErrorBody>(op.method, op.path, { token: key.token });
      assert.equal(res.status, 403, `${op.method} ${op.path}`);
      assert.equal(res.body.error.code, 'not_available');
    }
  });

  test('answers not_available as soon as an account becomes a reseller', async () => {
    const later = await createAccount(ctx.service, { name: 'Later reseller' });
    const key = await createApiKey(ctx.service, later.rootLocationId, ['catalog:read']);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token: key.token })).status, 200);
    const patch = await ctx.service.admin('PATCH', `/admin/v1/accounts/${later.id}`, { reseller: true });
    assert.equal(patch.status, 200);
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks', { token: key.token });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'not_available');
  });
});

describe('scopes matrix for the catalog', () => {
  test('catalog:read alone reads locks and security groups; no other scope does', async () => {
    for (const scope of ALL_SCOPES) {
      const key = await createApiKey(ctx.service, account.rootLocationId, [scope]);
      for (const path of ['/v1/locks', `/v1/locks/${lockId}`, '/v1/security_groups']) {
        const res = await ctx.service.request('GET', path, { token: key.token });
        assert.equal(res.status, scope === 'catalog:read' ? 200 : 403, `${scope} ${path}`);
      }
    }
  });
});
