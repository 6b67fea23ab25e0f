// An instance whose LISTEN connection dies must not go on authorising against what it cached: the
// connection is made again, and every cache (API keys, single locks) is dropped, because what was notified
// meanwhile was missed (README: Faults). Killed the way an operator or a failover kills it:
// pg_terminate_backend on the listener's backend, on server PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startService, type TestService } from '../helpers/service.ts';

describe('the LISTEN connection killed under a running instance', { skip: backend !== 'postgres' && 'LISTEN runs on server PostgreSQL' }, () => {
  let database: TestDatabase;
  let service: TestService;
  before(async () => {
    database = await createTestDatabase();
    service = await startService(database.db);
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  /** The backend pids of this instance's LISTEN connection (its last statement LISTENs on one of its channels). */
  async function listenerPids(): Promise<number[]> {
    const rows = await database.db.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN "' || $1 || '%'`,
      [database.db.channel('')],
    );
    return rows.map((row) => row.pid);
  }

  test('changes missed while it was away are not served from the caches once it is back', async () => {
    const account = await createAccount(service);
    const here = await createDepartment(service, account.rootLocationId, 'Here');
    const elsewhere = await createDepartment(service, account.rootLocationId, 'Elsewhere');
    const lockId = await createLock(service, here);
    const readerKey = await createApiKey(service, here, ['catalog:read']);
    const revokedKey = await createApiKey(service, here, ['catalog:read']);
    for (const key of [readerKey, revokedKey]) {
      assert.equal((await service.request('GET', `/v1/locks/${lockId}`, { token: key.token })).status, 200);
    }

    // Changed behind the instance's back, as if the NOTIFY had gone out while the listener was down.
    await database.db.query('UPDATE locks SET location_id = $1 WHERE id = $2', [elsewhere, lockId]);
    await database.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [revokedKey.id]);
    assert.equal((await service.request('GET', `/v1/locks/${lockId}`, { token: readerKey.token })).status, 200, 'served from the cache: the premise');

    const [pid] = await listenerPids();
    assert.ok(pid, 'the instance LISTENs on its own connection');
    await database.db.query('SELECT pg_terminate_backend($1)', [pid]);

    await waitFor(async () => (await listenerPids()).some((p) => p !== pid), 'a new LISTEN connection', 10_000);
    await waitFor(
      async () => (await service.request('GET', `/v1/locks/${lockId}`, { token: readerKey.token })).status === 404,
      'the moved lock out of the key scope',
      5_000,
    );
    assert.equal((await service.request('GET', `/v1/locks/${lockId}`, { token: revokedKey.token })).status, 401, 'the revoked key refused');

    // And the new connection hears the next change at once (the lock, moved back, is cached as elsewhere now).
    await database.db.query('UPDATE locks SET location_id = $1 WHERE id = $2', [here, lockId]);
    await database.db.query('SELECT pg_notify($1, $2)', [database.db.channel('catalog_changed'), '']);
    await waitFor(
      async () => (await service.request('GET', `/v1/locks/${lockId}`, { token: readerKey.token })).status === 200,
      'the NOTIFY heard on the new connection',
      2_000,
    );
  });
});
