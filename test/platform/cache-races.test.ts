// The per-instance caches against a change committed while a read was in flight: the read saw the row before
// the change, the change's NOTIFY dropped the cache before the read came back, and what the read brings must
// not be stored then, or it outlives the change until the TTL (30 s): a revoked API key accepted, a renamed
// lock shown by its old name. Each read is held after its statement ran (the stale row in hand) until the
// change has committed and been notified.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hashToken } from '../../src/platform/secrets.ts';
import type { Database, Row, Sql } from '../../src/platform/db/database.ts';
import { AUTH_CHANNEL, CATALOG_CHANNEL } from '../../src/platform/channels.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createTestDatabase, overriding, type TestDatabase } from '../helpers/database.ts';
import { startService, type TestService } from '../helpers/service.ts';

/** Holds the statements `matches` picks, after they ran, until released; counts each channel's notifications. */
function holdingDatabase(db: Database) {
  let matches: ((sql: Sql, params: readonly unknown[]) => boolean) | null = null;
  let held: Array<() => void> = [];
  let heldNow: (() => void) | null = null;
  const notified = new Map<string, number>();
  const wrapped = overriding(db, {
    query: async <T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> => {
      const rows = await db.query<T>(sql, params);
      if (matches?.(sql, params)) {
        matches = null;
        heldNow?.();
        await new Promise<void>((resolve) => held.push(resolve));
      }
      return rows;
    },
    listen: (channel, handler) =>
      db.listen(channel, (payload) => {
        notified.set(channel, (notified.get(channel) ?? 0) + 1);
        handler(payload);
      }),
  });
  return {
    db: wrapped,
    notifications: (channel: string) => notified.get(channel) ?? 0,
    /** Resolves once the next statement that `pick` matches has run and is held. */
    hold(pick: (sql: Sql, params: readonly unknown[]) => boolean): Promise<void> {
      matches = pick;
      return new Promise((resolve) => (heldNow = resolve));
    },
    release(): void {
      for (const resolve of held) resolve();
      held = [];
    },
  };
}

async function waitUntil(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let database: TestDatabase;
let holding: ReturnType<typeof holdingDatabase>;
let service: TestService;
before(async () => {
  database = await createTestDatabase();
  holding = holdingDatabase(database.db);
  service = await startService(holding.db, {}, undefined, undefined, 'inject');
});
after(async () => {
  holding?.release();
  await service?.close();
  await database?.close();
});

test('an API key revoked while its lookup is in flight is refused at the next request, not accepted from the cache for 30 s', async () => {
  const account = await createAccount(service);
  const key = await createApiKey(service, account.rootLocationId, ['catalog:read']);
  const hash = hashToken(key.token);

  // A first request looks the key up: the row read says active, then the read is held.
  const held = holding.hold((_sql, params) => params[0] === hash);
  const first = service.request('GET', '/v1/locks', { token: key.token });
  await held;
  const notifiedBefore = holding.notifications(AUTH_CHANNEL);
  assert.equal((await service.admin('DELETE', `/admin/v1/api_keys/${key.id}`)).status, 204);
  await waitUntil(() => holding.notifications(AUTH_CHANNEL) > notifiedBefore, 'the revocation notified');
  holding.release();
  assert.equal((await first).status, 200, 'the request that began before the revocation');

  const next = await service.request<{ error: { code: string } }>('GET', '/v1/locks', { token: key.token });
  assert.equal(next.status, 401, 'the revoked key');
  assert.equal(next.body.error.code, 'unauthenticated');
});

test('a lock renamed while its read is in flight is shown by its new name at the next read', async () => {
  const account = await createAccount(service);
  const key = await createApiKey(service, account.rootLocationId, ['catalog:read']);
  const lockId = await createLock(service, account.rootLocationId, { name: 'Old name' });

  const held = holding.hold((sql, params) => typeof sql !== 'string' && sql.name === 'catalog.findLock' && params[0] === lockId);
  const first = service.request<{ name: string }>('GET', `/v1/locks/${lockId}`, { token: key.token });
  await held;
  const notifiedBefore = holding.notifications(CATALOG_CHANNEL);
  assert.equal((await service.admin('PATCH', `/admin/v1/locks/${lockId}`, { name: 'New name' })).status, 200);
  await waitUntil(() => holding.notifications(CATALOG_CHANNEL) > notifiedBefore, 'the rename notified');
  holding.release();
  assert.equal((await first).body.name, 'Old name', 'the read that began before the rename');

  const next = await service.request<{ name: string }>('GET', `/v1/locks/${lockId}`, { token: key.token });
  assert.equal(next.body.name, 'New name');
});

test('with PAGE_CACHE_ENABLED=false, a person created while a read of the people page is in flight is in the next read: it waits for a read of its own', async () => {
  const fresh = await startService(holding.db, { PAGE_CACHE_ENABLED: 'false' }, undefined, undefined, 'inject');
  try {
    const account = await createAccount(fresh);
    const { token } = await createApiKey(fresh, account.rootLocationId, ['people:write']);
    assert.equal((await fresh.request('GET', '/v1/people', { token })).status, 200, 'the key looked up once, before the hold');

    // The first read has run (no one in the account yet) and is held; meanwhile a person is created.
    const held = holding.hold((sql) => typeof sql === 'string' && sql.includes('FROM people p'));
    const first = fresh.request<{ data: Array<{ name: string }> }>('GET', '/v1/people', { token });
    await held;
    assert.equal((await fresh.request('POST', '/v1/people', { token, body: { name: 'Ada Door' } })).status, 201);
    const next = fresh.request<{ data: Array<{ name: string }> }>('GET', '/v1/people', { token });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the request is at its page by now, the first read still held
    holding.release();

    assert.deepEqual((await first).body.data.map((p) => p.name), [], 'the read that began before the person');
    assert.deepEqual((await next).body.data.map((p) => p.name), ['Ada Door'], 'the request after the write did not share the read begun before it');
  } finally {
    await fresh.close();
  }
});
