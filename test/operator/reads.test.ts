// The operator reads the console needs (docs/console.md): accounts, an account's locations and users, keys and
// gateways of a whole account, a lock put on a gateway, and the overview counts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody, Page } from '../helpers/types.ts';

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });
const connect = gatewayClients();

interface Overview {
  accounts: number;
  gateways: { online: number; offline: number };
  locks_offline: number;
  webhooks: { failing: number; paused: number };
  deliveries_pending: number;
}

describe('accounts, locations and users', () => {
  test('accounts page by cursor and filter by name, case-insensitive', async () => {
    const tag = `Zeta${Date.now()}`;
    const first = await createAccount(ctx.service, { name: `${tag} One` });
    const second = await createAccount(ctx.service, { name: `${tag.toLowerCase()} two` });
    await createAccount(ctx.service, { name: 'Unrelated' });

    const one = await ctx.service.admin<Page<{ id: number; name: string; root_location: { id: number } }>>('GET', `/admin/v1/accounts?q=${tag.toUpperCase()}&limit=1`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.data.map((a) => a.id), [first.id]);
    assert.equal(one.body.data[0]?.root_location.id, first.rootLocationId);
    assert.ok(one.body.next_cursor);
    const two = await ctx.service.admin<Page<{ id: number }>>('GET', `/admin/v1/accounts?q=${tag}&limit=1&cursor=${one.body.next_cursor}`);
    assert.deepEqual(two.body.data.map((a) => a.id), [second.id]);
    const all = await ctx.service.admin<Page<{ id: number }>>('GET', '/admin/v1/accounts?limit=200');
    assert.ok(all.body.data.length >= 3);
  });

  test("an account's locations come parent first, and no other account's", async () => {
    const account = await createAccount(ctx.service);
    const other = await createAccount(ctx.service);
    const dept = await createDepartment(ctx.service, account.rootLocationId, 'Floor 1');
    const sub = await createDepartment(ctx.service, dept, 'Room 101');
    await createDepartment(ctx.service, other.rootLocationId, 'Elsewhere');

    const page = await ctx.service.admin<Page<{ id: number; parent_id: number | null; name: string; account_id: number }>>('GET', `/admin/v1/locations?account_id=${account.id}`);
    assert.equal(page.status, 200);
    assert.deepEqual(
      page.body.data.map((l) => [l.id, l.parent_id]),
      [[account.rootLocationId, null], [dept, account.rootLocationId], [sub, dept]],
    );
    const unknown = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/locations?account_id=999999');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'not_found');
    const missing = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/locations');
    assert.equal(missing.status, 400);
  });

  test("an account's dashboard users", async () => {
    const account = await createAccount(ctx.service);
    const other = await createAccount(ctx.service);
    const made = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ada', email: 'ada@example.com' });
    await ctx.service.admin('POST', '/admin/v1/users', { account_id: other.id, name: 'Bob', email: 'bob@example.com' });
    const page = await ctx.service.admin<Page<{ id: number; name: string }>>('GET', `/admin/v1/users?account_id=${account.id}`);
    assert.deepEqual(page.body.data, [{ id: made.body.id, account_id: account.id, name: 'Ada', email: 'ada@example.com' }]);
  });

  test('keys and gateways of a whole account include its departments and nothing of another account', async () => {
    const account = await createAccount(ctx.service);
    const other = await createAccount(ctx.service);
    const dept = await createDepartment(ctx.service, account.rootLocationId);
    const rootKey = await createApiKey(ctx.service, account.rootLocationId, ['people:read']);
    const deptKey = await createApiKey(ctx.service, dept, ['people:read']);
    await createApiKey(ctx.service, other.rootLocationId, ['people:read']);
    const gateway = await createGateway(ctx.service, dept);
    await createGateway(ctx.service, other.rootLocationId);

    const keys = await ctx.service.admin<Page<{ id: number; token?: string }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.deepEqual(keys.body.data.map((k) => k.id), [rootKey.id, deptKey.id]);
    assert.ok(keys.body.data.every((k) => k.token === undefined));
    const gateways = await ctx.service.admin<Page<{ id: number }>>('GET', `/admin/v1/gateways?account_id=${account.id}`);
    assert.deepEqual(gateways.body.data.map((g) => g.id), [gateway.id]);
    const both = await ctx.service.admin<Page<{ id: number }>>('GET', `/admin/v1/api_keys?account_id=${account.id}&location_id=${dept}`);
    assert.deepEqual(both.body.data.map((k) => k.id), [deptKey.id]);
  });
});

describe('changing a lock', () => {
  test('puts a lock on a gateway of its account and off it, and replaces its security groups', async () => {
    const account = await createAccount(ctx.service);
    await createSecurityGroup(ctx.service, account.rootLocationId, 'staff');
    const lockId = await createLock(ctx.service, account.rootLocationId);
    const gateway = await createGateway(ctx.service, account.rootLocationId);

    const onGateway = await ctx.service.admin<{ id: number; online: boolean | null; name: string; security_groups: string[]; gateway_id: number | null }>('PATCH', `/admin/v1/locks/${lockId}`, {
      gateway_id: gateway.id,
      security_groups: ['staff'],
      name: 'Front door',
    });
    assert.equal(onGateway.status, 200, onGateway.text);
    assert.equal(onGateway.body.online, false, 'a remote lock whose gateway never connected');
    assert.equal(onGateway.body.name, 'Front door');
    assert.deepEqual(onGateway.body.security_groups, ['staff']);
    assert.equal(onGateway.body.gateway_id, gateway.id, 'the operator reads back the gateway it set');
    const listed = await ctx.service.admin<Page<{ id: number; gateway_id: number | null }>>('GET', `/admin/v1/locks?account_id=${account.id}`);
    assert.deepEqual(listed.body.data.map((l) => [l.id, l.gateway_id]), [[lockId, gateway.id]]);
    // The public API's Lock has no gateway: it stays the spec's.
    const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    const publicLock = await ctx.service.request<Record<string, unknown>>('GET', `/v1/locks/${lockId}`, { token: key.token });
    assert.equal(publicLock.status, 200, publicLock.text);
    assert.equal('gateway_id' in publicLock.body, false);
    const publicPage = await ctx.service.request<Page<Record<string, unknown>>>('GET', '/v1/locks', { token: key.token });
    assert.equal(publicPage.body.data.some((l) => 'gateway_id' in l), false);

    const off = await ctx.service.admin<{ online: boolean | null; name: string; gateway_id: number | null }>('PATCH', `/admin/v1/locks/${lockId}`, { gateway_id: null });
    assert.equal(off.body.online, null);
    assert.equal(off.body.gateway_id, null);
    assert.equal(off.body.name, 'Front door', 'fields not sent stay');
  });

  test("refuses another account's gateway, unknown groups, an empty body and an unknown lock", async () => {
    const account = await createAccount(ctx.service);
    const other = await createAccount(ctx.service);
    const lockId = await createLock(ctx.service, account.rootLocationId);
    const foreign = await createGateway(ctx.service, other.rootLocationId);

    const wrong = await ctx.service.admin<ErrorBody>('PATCH', `/admin/v1/locks/${lockId}`, { gateway_id: foreign.id, security_groups: ['nope'] });
    assert.equal(wrong.status, 422);
    assert.deepEqual(wrong.body.error.details?.map((d) => d.field).sort(), ['gateway_id', 'security_groups[0]']);
    const empty = await ctx.service.admin<ErrorBody>('PATCH', `/admin/v1/locks/${lockId}`, {});
    assert.equal(empty.status, 422);
    const unknown = await ctx.service.admin<ErrorBody>('PATCH', '/admin/v1/locks/999999', { name: 'x' });
    assert.equal(unknown.status, 404);
  });
});

describe('overview', () => {
  test('counts gateways online and offline and the remote locks of offline gateways', async () => {
    const before = (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body;
    const account = await createAccount(ctx.service);
    const gateway = await createGateway(ctx.service, account.rootLocationId);
    await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
    await createLock(ctx.service, account.rootLocationId);

    const offline = (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body;
    assert.equal(offline.accounts, before.accounts + 1);
    assert.equal(offline.gateways.offline, before.gateways.offline + 1);
    assert.equal(offline.locks_offline, before.locks_offline + 1, 'the lock without a gateway is not offline');

    // Which they are, across accounts: the overview's offline counts lead to this list.
    const other = await createAccount(ctx.service);
    const elsewhere = await createGateway(ctx.service, other.rootLocationId);
    type Listed = Page<{ id: number; account_id: number; online: boolean }>;
    const offlineIds = async () => (await ctx.service.admin<Listed>('GET', '/admin/v1/gateways?online=false&limit=200')).body.data.map((g) => g.id);
    const listedOffline = await offlineIds();
    assert.ok(listedOffline.includes(gateway.id) && listedOffline.includes(elsewhere.id), 'both accounts\' offline gateways');
    const listed = (await ctx.service.admin<Listed>('GET', `/admin/v1/gateways?online=false&account_id=${other.id}`)).body.data;
    assert.deepEqual(listed.map((g) => [g.id, g.account_id, g.online]), [[elsewhere.id, other.id, false]]);
    const refused = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/gateways?online=maybe');
    assert.equal(refused.status, 400, refused.text);

    const client = await connect(gateway);
    await waitFor(async () => (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body.gateways.online === before.gateways.online + 1, 'gateway online');
    const online = (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body;
    assert.equal(online.locks_offline, before.locks_offline);
    assert.ok(!(await offlineIds()).includes(gateway.id), 'online: no longer listed offline');
    assert.ok((await offlineIds()).includes(elsewhere.id));
    const onlineIds = (await ctx.service.admin<Listed>('GET', `/admin/v1/gateways?online=true&account_id=${account.id}`)).body.data.map((g) => g.id);
    assert.deepEqual(onlineIds, [gateway.id]);
    client.end(true);
  });

  test('counts paused subscriptions', async () => {
    const before = (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body;
    const account = await createAccount(ctx.service);
    const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
    const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token: key.token, body: { url: 'https://localhost:9/hook', events: ['*'] } });
    assert.equal(sub.status, 201, sub.text);
    await ctx.service.request('PATCH', `/v1/webhooks/${sub.body.id}`, { token: key.token, body: { status: 'paused' } });
    const after = (await ctx.service.admin<Overview>('GET', '/admin/v1/overview')).body;
    assert.equal(after.webhooks.paused, before.webhooks.paused + 1);
  });
});

describe('searching people', () => {
  test("finds an account's people by part of the name, the e-mail or the phone, and no one of another account", async () => {
    const account = await createAccount(ctx.service);
    const other = await createAccount(ctx.service);
    const person = async (accountFixture: { rootLocationId: number }, body: Record<string, unknown>) => {
      const made = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { location_id: accountFixture.rootLocationId, ...body });
      assert.equal(made.status, 201, made.text);
      return made.body.id;
    };
    const ada = await person(account, { name: 'Ada Lovelace', email: 'ada@analytical.example', phone: '+44 20 7946 0958' });
    const bob = await person(account, { name: 'Bob Babbage', email: 'bob@difference.example' });
    await person(other, { name: 'Ada Elsewhere', email: 'ada@elsewhere.example' });

    const find = async (q: string) =>
      (await ctx.service.admin<Page<{ id: string }>>('GET', `/admin/v1/people?account_id=${account.id}&q=${encodeURIComponent(q)}`)).body.data.map((p) => p.id);
    assert.deepEqual(await find('lovel'), [ada]);
    assert.deepEqual(await find('ADA'), [ada], 'case-insensitive, and not the other account');
    assert.deepEqual(await find('difference.example'), [bob]);
    assert.deepEqual(await find('7946 0958'), [ada], 'phone digits, whatever the spacing');
    assert.deepEqual(await find('%'), [], 'no pattern characters');
    assert.deepEqual((await find('')).sort(), [ada, bob].sort());

    const first = await ctx.service.admin<Page<{ id: string }>>('GET', `/admin/v1/people?account_id=${account.id}&limit=1`);
    const next = await ctx.service.admin<Page<{ id: string }>>('GET', `/admin/v1/people?account_id=${account.id}&limit=1&cursor=${first.body.next_cursor}`);
    assert.equal(first.body.data.length + next.body.data.length, 2);
    assert.notEqual(first.body.data[0]?.id, next.body.data[0]?.id);
    // An account with no match is an empty page; an account that does not exist is 404, as the other lists say.
    assert.deepEqual(await find('nobody-at-all'), []);
    assert.equal((await ctx.service.admin('GET', '/admin/v1/people?account_id=999999')).status, 404);
  });
});
