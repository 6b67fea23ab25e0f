// Remote unlock under a race the database can produce: the command in flight finishes each time between
// the failed create and the read of it. The unlock retries a bounded number of times, then answers 429
// with Retry-After: 1, instead of looping.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database } from '../../src/platform/db/index.ts';
import { createTestDatabase, overriding, type TestDatabase } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, gatewayTopic, waitFor } from '../helpers/gateways.ts';
import { startService, type TestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let database: TestDatabase;
let service: TestService;
let hideInFlight = false;
let inFlightReads = 0;

/** The database, but while `hideInFlight` the read of a lock's command in flight (by its prepared name) finds none. */
function racing(db: Database): Database {
  return overriding(db, {
    query: (async (sql, params) => {
      if (!hideInFlight || typeof sql === 'string' || sql.name !== 'lockCommands.inFlight') return db.query(sql, params);
      inFlightReads += 1;
      return [];
    }) as Database['query'],
  });
}

before(async () => {
  database = await createTestDatabase();
  service = await startService(racing(database.db));
});
after(async () => {
  await service?.close();
  await database?.close();
});
const connect = gatewayClients();

test('an in-flight command that keeps finishing under the call: three tries, then 429 with Retry-After: 1', async () => {
  const account = await createAccount(service);
  const gateway = await createGateway(service, account.rootLocationId);
  const lockId = await createLock(service, account.rootLocationId, { name: 'Gate', gateway_id: gateway.id });
  const key = await createApiKey(service, account.rootLocationId, ['locks:control', 'catalog:read'], { lock_allowlist: [lockId] });
  const client = await connect(gateway);
  await client.publishAsync(gatewayTopic(gateway, 'presence'), '{"online":true}', { qos: 1, retain: true });
  await waitFor(
    async () => (await service.request<{ online: boolean }>('GET', `/v1/locks/${lockId}`, { token: key.token })).body.online,
    'the lock online',
  );

  const first = await service.request('POST', `/v1/locks/${lockId}/unlock`, { token: key.token });
  assert.equal(first.status, 202, first.text); // in flight: the gateway does not answer

  hideInFlight = true;
  const second = await Promise.race([
    service.request('POST', `/v1/locks/${lockId}/unlock`, { token: key.token }),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer after ${inFlightReads} reads`)), 10_000).unref()),
  ]);
  hideInFlight = false;
  assert.equal(second.status, 429, second.text);
  assert.equal((second.body as ErrorBody).error.code, 'rate_limited');
  assert.equal(second.headers.get('retry-after'), '1');
  assert.equal(inFlightReads, 3);
});
