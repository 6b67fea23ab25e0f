// Gateways in the operator API, with the embedded broker: listing (connection state, never the password),
// password rotation (the old password refused, the live connection dropped) and deletion.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashToken } from '../../src/platform/secrets.ts';
import { createAccount, createLock } from '../helpers/fixtures.ts';
import { createGateway, dropped, gatewayClients, waitFor, type GatewayCredentials } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

interface GatewaySummary {
  id: number;
  name: string;
  location_id: number;
  mqtt: Record<string, string>;
  online: boolean;
  last_seen_at: string | null;
  created_at: string;
}

const ctx = useTestService();
const connect = gatewayClients();



describe('listing gateways', () => {
  test('lists gateways with connection state and last contact, filtered by location, never the password', async () => {
    const account = await createAccount(ctx.service);
    const first = await createGateway(ctx.service, account.rootLocationId);
    const second = await createGateway(ctx.service, account.rootLocationId);

    const page = await ctx.service.admin<{ data: GatewaySummary[]; next_cursor: string | null }>('GET', `/admin/v1/gateways?location_id=${account.rootLocationId}`);
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.data.map((g) => g.id), [first.id, second.id]);
    assert.deepEqual(page.body.data[0], {
      id: first.id,
      name: 'gw',
      location_id: account.rootLocationId,
      account_id: account.id,
      mqtt: { url: first.mqtt.url, client_id: first.mqtt.client_id, username: first.mqtt.username, topic_prefix: first.mqtt.topic_prefix },
      online: false,
      last_seen_at: null,
      last_refused_at: null,
      created_at: page.body.data[0]?.created_at,
      access_list: { enabled: true, version: 1, applied_version: 0, expired: false, rebuilding: false },
    });
    for (const secret of [first.mqtt.password, second.mqtt.password, hashToken(first.mqtt.password)]) assert.ok(!page.text.includes(secret));

    const short = await ctx.service.admin<{ data: GatewaySummary[]; next_cursor: string | null }>('GET', `/admin/v1/gateways?location_id=${account.rootLocationId}&limit=1`);
    assert.deepEqual(short.body.data.map((g) => g.id), [first.id]);
    const rest = await ctx.service.admin<{ data: GatewaySummary[] }>('GET', `/admin/v1/gateways?location_id=${account.rootLocationId}&cursor=${short.body.next_cursor}`);
    assert.deepEqual(rest.body.data.map((g) => g.id), [second.id]);
  });

  test('a connected gateway reads online with its last contact; an unknown one answers 404', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const client = await connect(gateway);
    await client.publishAsync(`${gateway.mqtt.topic_prefix}/gateways/${gateway.id}/presence`, '{"online":true}', { qos: 1, retain: true });
    await waitFor(async () => (await ctx.service.admin<GatewaySummary>('GET', `/admin/v1/gateways/${gateway.id}`)).body.online, 'online');
    const read = await ctx.service.admin<GatewaySummary>('GET', `/admin/v1/gateways/${gateway.id}`);
    assert.equal(read.status, 200);
    assert.ok(read.body.last_seen_at !== null);
    assert.ok(!read.text.includes(gateway.mqtt.password));

    const missing = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/gateways/999999999');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
  });
});

describe('rotating a gateway password', () => {
  test('answers 200 with the new password once; the old one is refused and its live connection dropped', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const live = await connect(gateway);
    const gone = dropped(live);

    const res = await ctx.service.admin<GatewayCredentials & { name: string; location_id: number }>('POST', `/admin/v1/gateways/${gateway.id}/rotate_password`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ['id', 'location_id', 'mqtt', 'name']);
    assert.deepEqual({ ...res.body.mqtt, password: '' }, { ...gateway.mqtt, password: '' });
    assert.notEqual(res.body.mqtt.password, gateway.mqtt.password);
    assert.ok(res.body.mqtt.password.length >= 43);
    const [row] = await ctx.database.db.query<{ password_hash: string }>('SELECT password_hash FROM gateways WHERE id = $1', [gateway.id]);
    assert.equal(row?.password_hash, hashToken(res.body.mqtt.password));

    await gone;
    await assert.rejects(connect(gateway), 'the old password is refused');
    const again = await connect(res.body);
    assert.ok(again.connected);
  });

  test('an unknown gateway answers 404', async () => {
    const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/gateways/999999999/rotate_password');
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
  });
});

describe('deleting a gateway', () => {
  test('refuses with 409 gateway_in_use while a lock is on it, and changes nothing', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
    const res = await ctx.service.admin<ErrorBody>('DELETE', `/admin/v1/gateways/${gateway.id}`);
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'gateway_in_use');
    assert.equal((await ctx.service.admin('GET', `/admin/v1/gateways/${gateway.id}`)).status, 200);
    assert.ok((await connect(gateway)).connected, 'its credentials still work');
  });

  test('answers 204, drops its live connection, refuses its credentials, and it is gone', async () => {
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    const live = await connect(gateway);
    const gone = dropped(live);

    const res = await ctx.service.admin('DELETE', `/admin/v1/gateways/${gateway.id}`);
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    await gone;
    await assert.rejects(connect(gateway), 'its credentials are refused');
    assert.equal((await ctx.service.admin('GET', `/admin/v1/gateways/${gateway.id}`)).status, 404);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/gateways/${gateway.id}`)).status, 404);
    const lock = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locks', { location_id: account.rootLocationId, name: 'x', gateway_id: gateway.id });
    assert.equal(lock.status, 422);
    assert.equal(lock.body.error.details?.[0]?.field, 'gateway_id');
  });
});
