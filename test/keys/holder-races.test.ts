// A tap on the key holder's page decided just before the key changed: the command is created only while the key
// and its person are as the decision read them. Without that, a tap decided before a revocation opened the door
// after the revocation had been answered. The change is made by a hook on the service's database, between the
// decision and the statement that creates the command; the phone is a software passkey (test/helpers/passkey.ts).
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import { after, before, test } from 'node:test';
import type { Sql } from '../../src/platform/db/index.ts';
import { backend, createTestDatabase, overriding, type TestDatabase } from '../helpers/database.ts';
import { createGateway, gatewayClients, waitFor } from '../helpers/gateways.ts';
import { issueKey, keysTenant, latestLink, linkPath, type KeysTenant } from '../helpers/keys.ts';
import { SoftwarePasskey } from '../helpers/passkey.ts';
import { freshIp, startService, type TestService } from '../helpers/service.ts';

type RegistrationOptions = Parameters<SoftwarePasskey['register']>[0];
type AssertionOptions = Parameters<SoftwarePasskey['assert']>[0];

const connect = gatewayClients();
let database: TestDatabase;
let service: TestService;
/** Runs once, just before the next statement that creates a key holder's command. */
let beforeKeyCommand: (() => Promise<void>) | null = null;
let tenant: KeysTenant;
let front: number;
const commands: Array<{ id: string; lock_id: number }> = [];

before(async () => {
  database = await createTestDatabase();
  const db = overriding(database.db, {
    query: async <T extends object>(sql: Sql, params?: readonly unknown[]): Promise<T[]> => {
      if (beforeKeyCommand && typeof sql !== 'string' && sql.name === 'lockCommands.createForKey') {
        const hook = beforeKeyCommand;
        beforeKeyCommand = null;
        await hook();
      }
      return database.db.query<T>(sql, params);
    },
  });
  service = await startService(db, {}, undefined, undefined, 'inject');
  tenant = await keysTenant(service);
  const gateway = await createGateway(service, tenant.locationId);
  const [row] = await database.db.query<{ id: number }>(`SELECT id FROM locks WHERE location_id = $1 AND name = 'Front door'`, [tenant.locationId]);
  front = Number(row?.id);
  const moved = await service.admin('PATCH', `/admin/v1/locks/${front}`, { gateway_id: gateway.id });
  assert.equal(moved.status, 200, moved.text);
  const client: MqttClient = await connect(gateway);
  const base = `${gateway.mqtt.topic_prefix}/gateways/${gateway.id}`;
  client.on('message', (topic, payload) => {
    if (!topic.endsWith('/commands')) return;
    const command = JSON.parse(payload.toString()) as { id: string; lock_id: number };
    commands.push(command);
    client.publishAsync(`${base}/commands/result`, JSON.stringify({ id: command.id, ok: true }), { qos: 1 }).catch(() => undefined);
  });
  await client.subscribeAsync(`${base}/commands`, { qos: 1 });
  await client.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1, retain: true });
  await waitFor(async () => (await database.db.query<{ online: boolean }>('SELECT online FROM gateways WHERE id = $1', [gateway.id]))[0]?.online === true, 'the gateway is online');
});
after(async () => {
  await service?.close();
  await database?.close();
});

/** A new key for the tenant's person (group staff: the Front door), registered on a phone of its own. */
async function registeredPhone(): Promise<{ phone: SoftwarePasskey; keyId: number }> {
  const issued = await issueKey(service, tenant);
  assert.equal(issued.status, 202, issued.text);
  const link = await latestLink(service, tenant.phone);
  const phone = new SoftwarePasskey(new URL(link).origin);
  const ip = freshIp();
  const options = await service.request<RegistrationOptions>('POST', `${linkPath(link)}/passkey/options`, { ip });
  assert.equal(options.status, 200, options.text);
  const registered = await service.request('POST', `${linkPath(link)}/passkey`, { ip, body: { response: phone.register(options.body) } });
  assert.equal(registered.status, 200, registered.text);
  const [row] = await database.db.query<{ key_id: number }>('SELECT key_id FROM invitations WHERE person_id = $1 ORDER BY id DESC LIMIT 1', [tenant.personId]);
  assert.ok(row?.key_id, 'the key of the link');
  return { phone, keyId: Number(row.key_id) };
}

async function open(phone: SoftwarePasskey) {
  const options = await service.request<AssertionOptions>('POST', '/my-key/challenge', { ip: freshIp() });
  assert.equal(options.status, 200, options.text);
  return service.request<{ refused: string | null; command: { id: string } | null }>('POST', '/my-key/open', {
    ip: freshIp(),
    body: { response: phone.assert(options.body), lock_id: front },
  });
}

const commandsOfKey = async (keyId: number) => (await database.db.query('SELECT id FROM lock_commands WHERE key_id = $1', [keyId])).length;

test('a key revoked between the decision and the command opens nothing: refused as revoked, logged, no command', async () => {
  const { phone, keyId } = await registeredPhone();
  beforeKeyCommand = async () => {
    const revoked = await service.request('DELETE', `/v1/keys/${keyId}`, { token: tenant.token });
    assert.equal(revoked.status, 204, revoked.text);
  };
  const published = commands.length;
  const res = await open(phone);
  assert.equal(beforeKeyCommand, null, 'the hook ran');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual([res.body.refused, res.body.command], ['revoked', null]);
  assert.equal(await commandsOfKey(keyId), 0, 'no command for the key');
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(commands.length, published, 'nothing reached the gateway');
  const denied = await database.db.query<{ key_id: string }>(
    `SELECT data->'key'->>'id' AS key_id FROM domain_events WHERE type = 'access.denied' AND data->'key'->>'id' = $1`,
    [String(keyId)],
  );
  assert.equal(denied.length, 1, 'the refusal is in the access log');
});

test('a revocation under way when the command is created (updated, not yet committed) is waited for: nothing opens', { skip: backend !== 'postgres' && 'two transactions at once need PostgreSQL (PGlite runs one at a time)' }, async () => {
  const { phone, keyId } = await registeredPhone();
  const other = await database.openAnother();
  let committed: Promise<void> = Promise.resolve();
  beforeKeyCommand = async () => {
    // What a revocation does first, in a transaction that goes on (lists, events) before it commits.
    let updated: () => void = () => undefined;
    const didUpdate = new Promise<void>((resolve) => (updated = resolve));
    committed = other.transaction(async (tx) => {
      await tx.query(`UPDATE keys SET revoked_at = now(), expires_at = now(), state = 'returned', updated_at = now() WHERE id = $1`, [keyId]);
      updated();
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    await didUpdate;
  };
  const res = await open(phone);
  await committed;
  assert.equal(beforeKeyCommand, null, 'the hook ran');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual([res.body.refused, res.body.command], ['revoked', null]);
  assert.equal(await commandsOfKey(keyId), 0, 'no command for the key');
});

test('a key moved out of the door’s group between the decision and the command opens nothing (no_access)', async () => {
  const { phone, keyId } = await registeredPhone();
  beforeKeyCommand = async () => {
    const changed = await service.request('PATCH', `/v1/keys/${keyId}`, { token: tenant.token, body: { security_groups: ['night'] } });
    assert.equal(changed.status, 200, changed.text);
  };
  const res = await open(phone);
  assert.equal(beforeKeyCommand, null, 'the hook ran');
  assert.deepEqual([res.status, res.body.refused, res.body.command], [200, 'no_access', null], res.text);
  assert.equal(await commandsOfKey(keyId), 0);
});

test('a change that leaves the door open to the key (its name) is decided again and opens once', async () => {
  const { phone, keyId } = await registeredPhone();
  beforeKeyCommand = async () => {
    const renamed = await service.request('PATCH', `/v1/keys/${keyId}`, { token: tenant.token, body: { name: 'Renamed' } });
    assert.equal(renamed.status, 200, renamed.text);
  };
  const published = commands.length;
  const res = await open(phone);
  assert.equal(beforeKeyCommand, null, 'the hook ran');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.refused, null);
  assert.ok(res.body.command, 'a command');
  assert.equal(await commandsOfKey(keyId), 1, 'one command');
  await waitFor(() => commands.length === published + 1, 'the command at the gateway');
  const command = res.body.command;
  await waitFor(
    async () => (await service.request<{ status: string }>('GET', `/my-key/commands/${command.id}`, { ip: freshIp() })).body.status === 'confirmed',
    'the command confirmed',
  );
});
