// The locking-system connector: person changes go to the locking system first; a refusal saves nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import type { Database } from '../../src/platform/db/database.ts';
import { withFailingTransactions } from '../helpers/database.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService();

async function syncedTenant(service: TestService = ctx.service, mode?: 'accept' | 'reject' | 'hold', delay_ms?: number) {
  const account = await createAccount(service, { locking_system: 'sandbox' });
  if (mode || delay_ms) {
    const res = await service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode, delay_ms });
    assert.equal(res.status, 200, res.text);
  }
  const key = await createApiKey(service, account.rootLocationId, ['people:write', 'catalog:read']);
  return { account, token: key.token };
}

async function writesOf(db: Database, accountId: number): Promise<Array<[string, string]>> {
  const rows = await db.query<{ operation: string; entity_id: string }>(
    'SELECT operation, entity_id FROM sandbox_locking_system_writes WHERE account_id = $1 ORDER BY id',
    [accountId],
  );
  return rows.map((r) => [r.operation, r.entity_id]);
}

async function count(sql: string, params: unknown[]): Promise<number> {
  return (await ctx.database.db.query(sql, params)).length;
}

describe('a synced account', () => {
  test('writes create, update and delete to the locking system, in that order', async () => {
    const { account, token } = await syncedTenant();
    const created = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Flo' } });
    const id = created.body.id;
    await ctx.service.request('PUT', `/v1/people/${id}`, { token, body: { title: 'Chief' } });
    await ctx.service.request('DELETE', `/v1/people/${id}`, { token });
    assert.deepEqual(await writesOf(ctx.database.db, account.id), [
      ['person.create', id],
      ['person.update', id],
      ['person.delete', id],
    ]);
  });

  test('in reject mode every write answers 409 lockingsystem_rejected and saves nothing, emits nothing', async () => {
    const { account, token } = await syncedTenant();
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Gil', email: 'gil@example.com' } });
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'reject' });
    const eventsBefore = await count('SELECT id FROM domain_events WHERE account_id = $1', [account.id]);

    const create = await ctx.service.request<ErrorBody>('POST', '/v1/people', { token, body: { name: 'Hui' } });
    assert.equal(create.status, 409);
    assert.equal(create.body.error.code, 'lockingsystem_rejected');
    assert.equal(await count('SELECT id FROM people WHERE name = $1', ['Hui']), 0);

    const update = await ctx.service.request<ErrorBody>('PUT', `/v1/people/${person.body.id}`, { token, body: { name: 'Gil B' } });
    assert.equal(update.status, 409);
    const remove = await ctx.service.request<ErrorBody>('DELETE', `/v1/people/${person.body.id}`, { token });
    assert.equal(remove.status, 409);
    assert.equal(remove.body.error.code, 'lockingsystem_rejected');
    assert.equal(await count('SELECT id FROM domain_events WHERE account_id = $1', [account.id]), eventsBefore);
  });

  test('a refusal leaves the person as it was', async () => {
    const { account, token } = await syncedTenant();
    const reader = (await createApiKey(ctx.service, account.rootLocationId, ['people:read'])).token;
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Ida' } });
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'reject' });
    const events = await count('SELECT id FROM domain_events WHERE account_id = $1', [account.id]);
    await ctx.service.request('PUT', `/v1/people/${person.body.id}`, { token, body: { name: 'Ida B' } });
    await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token });
    const after = await ctx.service.request<{ name: string }>('GET', `/v1/people/${person.body.id}`, { token: reader });
    assert.equal(after.status, 200);
    assert.equal(after.body.name, 'Ida');
    assert.equal(await count('SELECT id FROM domain_events WHERE account_id = $1', [account.id]), events);
  });

  test('hold mode accepts person writes', async () => {
    const { token } = await syncedTenant(ctx.service, 'hold');
    const res = await ctx.service.request('POST', '/v1/people', { token, body: { name: 'Jay' } });
    assert.equal(res.status, 201);
  });

  test('no transaction is open while a slow locking system answers: other requests are served meanwhile', async () => {
    const { account, token } = await syncedTenant(ctx.service, 'accept', 1500);
    await createLock(ctx.service, account.rootLocationId);
    const started = Date.now();
    const slow = ctx.service.request('POST', '/v1/people', { token, body: { name: 'Kai' } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const quick = await ctx.service.request('GET', '/v1/locks', { token });
    const quickDone = Date.now() - started;
    assert.equal(quick.status, 200);
    assert.ok(quickDone < 1200, `a catalog read waited ${quickDone} ms for the locking system`);
    assert.equal((await slow).status, 201);
    assert.ok(Date.now() - started >= 1500);
  });

  test('an account without a locking system writes nowhere', async () => {
    const account = await createAccount(ctx.service);
    const key = await createApiKey(ctx.service, account.rootLocationId, ['people:write']);
    assert.equal((await ctx.service.request('POST', '/v1/people', { token: key.token, body: { name: 'Lee' } })).status, 201);
    assert.deepEqual(await writesOf(ctx.database.db, account.id), []);
  });

  test('when the local commit fails after the locking system accepted, the create is undone there', async () => {
    let failing = false;
    const service = await startService(withFailingTransactions(ctx.database.db, () => failing));
    try {
      const { account, token } = await syncedTenant(service);
      failing = true;
      const res = await service.request<ErrorBody>('POST', '/v1/people', { token, body: { name: 'Mo' } });
      assert.equal(res.status, 500);
      const writes = await writesOf(ctx.database.db, account.id);
      assert.deepEqual(writes.map(([operation]) => operation), ['person.create', 'person.delete']);
      assert.equal(writes[0]?.[1], writes[1]?.[1]);
      assert.equal(await count('SELECT id FROM people WHERE name = $1', ['Mo']), 0);
    } finally {
      await service.close();
    }
  });
});

describe('sandbox locking-system settings', () => {
  test('validate the account and the mode', async () => {
    const account = await createAccount(ctx.service);
    const ok = await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id });
    assert.deepEqual(ok.body, { account_id: account.id, mode: 'accept', delay_ms: 0 });
    assert.equal((await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: 999999 })).status, 422);
    assert.equal((await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'maybe' })).status, 422);
  });
});
