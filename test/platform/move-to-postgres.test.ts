// npm run move-to-postgres: an embedded store filled through the API is moved into an empty PostgreSQL schema by
// the command an operator runs; the service started on PostgreSQL then reads everything back identical, with
// the same API key, operator token and webhook secrets, and makes new rows without id clashes.
// Needs server PostgreSQL: runs in the PostgreSQL pass of npm test only.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openPglite } from '../../src/platform/db/pglite.ts';
import { openPostgres } from '../../src/platform/db/postgres.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import type { Database } from '../../src/platform/db/index.ts';
import { backend, testDatabaseUrl } from '../helpers/database.ts';
import { ALL_SCOPES, createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, gatewayTopic, waitFor } from '../helpers/gateways.ts';
import { activate, latestLink } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';

const skip = backend !== 'postgres' ? 'needs server PostgreSQL (the PostgreSQL pass of npm test)' : false;
const connect = gatewayClients();
const env = { WEBHOOK_ALLOW_HOSTS: 'localhost' };

/** What the API shows of one account and of the operator's view: read before and after the move. */
async function snapshot(service: TestService, token: string, accountId: number): Promise<Record<string, unknown>> {
  const read = async (pathname: string, admin = false) => {
    const answer = admin ? await service.admin('GET', pathname) : await service.request('GET', pathname, { token });
    assert.equal(answer.status, 200, `${pathname}: ${answer.text}`);
    return answer.body;
  };
  return {
    account: await read(`/admin/v1/accounts/${accountId}`, true),
    locations: await read(`/admin/v1/locations?account_id=${accountId}`, true),
    apiKeys: await read(`/admin/v1/api_keys?account_id=${accountId}`, true),
    // The broker's address is the running instance's (a free port in tests), not data.
    gateways: ((await read(`/admin/v1/gateways?account_id=${accountId}`, true)) as { data: Array<{ mqtt: { url?: string } }> }).data.map((g) => ({
      ...g,
      mqtt: { ...g.mqtt, url: undefined },
    })),
    people: await read('/v1/people'),
    keys: await read('/v1/keys'),
    invitations: await read('/v1/invitations'),
    locks: await read('/v1/locks'),
    groups: await read('/v1/security_groups'),
    events: await read('/v1/events'),
    webhooks: await read('/v1/webhooks'),
  };
}

describe('moving an embedded store to PostgreSQL', { skip }, () => {
  let dataDir: string;
  let schema: string;
  let targetUrl: string;

  before(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-move-'));
    schema = `lk_move_${process.pid}_${randomUUID().slice(0, 8)}`;
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.end();
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('options', `-c search_path=${schema}`);
    targetUrl = url.toString();
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  });

  test('everything reads back identical, tokens and secrets keep working, new rows get new ids', async () => {
    // 1. An embedded store filled through the API.
    const embedded: Database = await openPglite({ dataDir: `${dataDir}/pg` });
    await migrate(embedded);
    let service = await startService(embedded, env);
    const account = await createAccount(service, { name: 'Moving Co' });
    const department = await createDepartment(service, account.rootLocationId, 'Floor 2');
    await createSecurityGroup(service, account.rootLocationId, 'staff');
    const gateway = await createGateway(service, account.rootLocationId);
    const lockId = await createLock(service, department, { name: 'Back door', gateway_id: gateway.id, security_groups: ['staff'] });
    const { token } = await createApiKey(service, account.rootLocationId, ALL_SCOPES);
    const person = await service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Ada', email: 'ada@example.com', phone: '+44 20 7946 0001' } });
    assert.equal(person.status, 201, person.text);
    const issued = await service.request('POST', '/v1/keys', { token, body: { person_id: person.body.id, security_groups: ['staff'] } });
    assert.equal(issued.status, 202, issued.text);
    assert.equal((await activate(service, await latestLink(service, '+442079460001'))).status, 200);
    const hook = await service.request<{ id: string }>('POST', '/v1/webhooks', { token, body: { url: 'https://localhost:9/hook', events: ['*'] } });
    assert.equal(hook.status, 201, hook.text);
    const client = await connect(gateway);
    await client.publishAsync(
      gatewayTopic(gateway, 'events'),
      JSON.stringify({ id: randomUUID(), lock_id: lockId, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null }),
      { qos: 1 },
    );
    client.end(true);
    await waitFor(async () => ((await service.request<{ data: unknown[] }>('GET', '/v1/events', { token })).body.data.length ?? 0) > 0, 'the door event');
    // Presence settles before the snapshot, so both sides read the same state.
    await waitFor(async () => (await service.admin<{ online: boolean }>('GET', `/admin/v1/gateways/${gateway.id}`)).body.online === false, 'the gateway offline');
    const before = await snapshot(service, token, account.id);
    await service.close();
    await embedded.close();

    // 2. The operator's command, as the README gives it.
    const moved = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', dataDir, '--to', targetUrl], { encoding: 'utf8' });
    assert.equal(moved.status, 0, moved.stdout + moved.stderr);
    assert.match(moved.stdout, /moved \d+ rows in \d+ tables/);
    assert.match(moved.stdout, /people: 1 rows/);

    // 3. The service on PostgreSQL: the same answers with the same token.
    const server = await openPostgres({ connectionString: testDatabaseUrl(), schema });
    service = await startService(server, env);
    try {
      assert.deepEqual(await snapshot(service, token, account.id), before);
      // New rows of every identity table continue after the moved ids.
      const another = await createAccount(service, { name: 'After the move' });
      assert.ok(another.id > account.id);
      const newLock = await createLock(service, department, { name: 'New door' });
      assert.ok(newLock > lockId);
      const newGateway = await createGateway(service, account.rootLocationId);
      assert.ok(newGateway.id > gateway.id);
      // The webhook secret is still readable with the moved server key: a ping signs with it.
      const ping = await service.request<{ id: string }>('POST', `/v1/webhooks/${hook.body.id}/ping`, { token });
      assert.equal(ping.status, 200, ping.text);
    } finally {
      await service.close();
      await server.close();
    }

    // 4. A second move into the now non-empty database is refused.
    const again = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', dataDir, '--to', targetUrl], { encoding: 'utf8' });
    assert.equal(again.status, 1);
    assert.match(again.stderr, /Nothing was moved: the target database is not empty/);
  });

  test('refuses without a target or without an embedded database, and never prints a password', () => {
    const noTarget = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', dataDir], { encoding: 'utf8', env: { ...process.env, DATABASE_URL: '' } });
    assert.equal(noTarget.status, 2);
    const noSource = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', '/nonexistent', '--to', 'postgres://u:secret-pw@127.0.0.1:1/x'], { encoding: 'utf8' });
    assert.equal(noSource.status, 2);
    const unreachable = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', dataDir, '--to', 'postgres://u:secret-pw@127.0.0.1:1/x'], { encoding: 'utf8' });
    assert.equal(unreachable.status, 1);
    assert.doesNotMatch(unreachable.stdout + unreachable.stderr, /secret-pw/);
    assert.match(unreachable.stdout, /postgres:\/\/u@127\.0\.0\.1:1\/x/);
  });
});
