import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

interface Lock {
  id: number;
  name: string;
  online: boolean | null;
  security_groups: string[];
  location: { id: number; name: string };
}

const ctx = useTestService(undefined, {}, { transport: 'inject' });


describe('location scope', () => {
  let root: number;
  let deptA: number;
  let deptB: number;
  let subA: number;
  const locks: Record<string, number> = {};
  let rootKey: string;
  let deptAKey: string;

  before(async () => {
    const account = await createAccount(ctx.service, { name: 'Scoped' });
    root = account.rootLocationId;
    deptA = await createDepartment(ctx.service, root, 'A');
    deptB = await createDepartment(ctx.service, root, 'B');
    subA = await createDepartment(ctx.service, deptA, 'A.1');
    locks.root = await createLock(ctx.service, root, { name: 'root door' });
    locks.a = await createLock(ctx.service, deptA, { name: 'A door' });
    locks.b = await createLock(ctx.service, deptB, { name: 'B door' });
    locks.sub = await createLock(ctx.service, subA, { name: 'A.1 door' });
    rootKey = (await createApiKey(ctx.service, root, ['catalog:read'])).token;
    deptAKey = (await createApiKey(ctx.service, deptA, ['catalog:read'])).token;
  });

  test("a department key gets 404 for its parent's and its sibling's locks", async () => {
    for (const id of [locks.root, locks.b]) {
      const res = await ctx.service.request<{ error: { code: string } }>('GET', `/v1/locks/${id}`, { token: deptAKey });
      assert.equal(res.status, 404);
      assert.equal(res.body.error.code, 'not_found');
    }
  });

  test('a department key sees its own and its sub-departments\' locks', async () => {
    for (const id of [locks.a, locks.sub]) {
      const res = await ctx.service.request<Lock>('GET', `/v1/locks/${id}`, { token: deptAKey });
      assert.equal(res.status, 200);
      assert.equal(res.body.id, id);
    }
    const list = await ctx.service.request<Page<Lock>>('GET', '/v1/locks', { token: deptAKey });
    assert.deepEqual(
      list.body.data.map((l) => l.id),
      [locks.a, locks.sub],
    );
  });

  test("a parent key sees its departments' locks", async () => {
    const list = await ctx.service.request<Page<Lock>>('GET', '/v1/locks', { token: rootKey });
    assert.deepEqual(
      list.body.data.map((l) => l.id),
      [locks.root, locks.a, locks.b, locks.sub],
    );
    const one = await ctx.service.request<Lock>('GET', `/v1/locks/${locks.sub}`, { token: rootKey });
    assert.equal(one.status, 200);
    assert.deepEqual(one.body.location, { id: subA, name: 'A.1' });
  });

  test('location_id narrows the list to that location and its descendants', async () => {
    const list = await ctx.service.request<Page<Lock>>('GET', `/v1/locks?location_id=${deptA}`, { token: rootKey });
    assert.deepEqual(
      list.body.data.map((l) => l.id),
      [locks.a, locks.sub],
    );
  });

  test('location_id outside the key scope gives an empty page, not the rows', async () => {
    const list = await ctx.service.request<Page<Lock>>('GET', `/v1/locks?location_id=${deptB}`, { token: deptAKey });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body, { data: [], next_cursor: null });
    // A location above the key's is outside its scope too: before, it gave the key's own locks, telling the key
    // which locations are its ancestors (an unknown or foreign one gives an empty page).
    for (const above of [root, 999_999]) {
      const page = await ctx.service.request<Page<Lock>>('GET', `/v1/locks?location_id=${above}`, { token: deptAKey });
      assert.deepEqual([page.status, page.body], [200, { data: [], next_cursor: null }], `location ${above}`);
    }
    const own = await ctx.service.request<Page<Lock>>('GET', `/v1/locks?location_id=${deptA}`, { token: deptAKey });
    assert.deepEqual(own.body.data.map((l) => l.id), [locks.a, locks.sub], 'its own location still narrows');
  });

  test("another account's lock answers 404", async () => {
    const other = await createAccount(ctx.service, { name: 'Other' });
    const foreignLock = await createLock(ctx.service, other.rootLocationId);
    const res = await ctx.service.request('GET', `/v1/locks/${foreignLock}`, { token: rootKey });
    assert.equal(res.status, 404);
  });
});

describe('lock fields', () => {
  test('a lock shows the spec fields; online is null when not remote and false for a gateway never heard from', async () => {
    const account = await createAccount(ctx.service);
    await createSecurityGroup(ctx.service, account.rootLocationId, 'staff');
    const gateway = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/gateways', {
      location_id: account.rootLocationId,
      name: 'gw',
    });
    const plain = await createLock(ctx.service, account.rootLocationId, {
      name: 'Main',
      place: 'Lobby',
      serial_number: 'SN-1',
      security_groups: ['staff'],
    });
    const remote = await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.body.id });
    const key = (await createApiKey(ctx.service, account.rootLocationId, ['catalog:read'])).token;

    const res = await ctx.service.request<Lock>('GET', `/v1/locks/${plain}`, { token: key });
    assert.deepEqual(res.body, {
      id: plain,
      name: 'Main',
      serial_number: 'SN-1',
      place: 'Lobby',
      provider: 'sandbox',
      online: null,
      security_groups: ['staff'],
      location: { id: account.rootLocationId, name: 'Acme' },
    });
    const remoteRes = await ctx.service.request<Lock>('GET', `/v1/locks/${remote}`, { token: key });
    assert.equal(remoteRes.body.online, false);
  });

  test('a non-integer lock id answers 400 invalid_request', async () => {
    const account = await createAccount(ctx.service);
    const key = (await createApiKey(ctx.service, account.rootLocationId, ['catalog:read'])).token;
    const res = await ctx.service.request<{ error: { code: string } }>('GET', '/v1/locks/abc', { token: key });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_request');
  });
});

describe('pagination', () => {
  let key: string;
  const ids: number[] = [];

  before(async () => {
    const account = await createAccount(ctx.service, { name: 'Many' });
    key = (await createApiKey(ctx.service, account.rootLocationId, ['catalog:read'])).token;
    for (let batch = 0; batch < 1000; batch += 50) {
      const made = await Promise.all(
        Array.from({ length: 50 }, (_, i) => createLock(ctx.service, account.rootLocationId, { name: `Door ${batch + i}` })),
      );
      ids.push(...made);
    }
    ids.sort((a, b) => a - b);
  });

  test('paging 1,000 locks by 7 returns each exactly once in ascending order', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=7&cursor=${encodeURIComponent(cursor)}` : '?limit=7';
      const res = await ctx.service.request<Page<Lock>>('GET', `/v1/locks${query}`, { token: key });
      assert.equal(res.status, 200);
      assert.ok(res.body.data.length <= 7);
      seen.push(...res.body.data.map((l) => l.id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor !== null);
    assert.equal(pages, Math.ceil(1000 / 7));
    assert.deepEqual(seen, ids);
  });

  test('limit is clamped to 1..200 and defaults to 50', async () => {
    const cases: Array<[string, number]> = [
      ['', 50],
      ['?limit=0', 1],
      ['?limit=-5', 1],
      ['?limit=1', 1],
      ['?limit=200', 200],
      ['?limit=201', 200],
      ['?limit=100000', 200],
    ];
    for (const [query, expected] of cases) {
      const res = await ctx.service.request<Page<Lock>>('GET', `/v1/locks${query}`, { token: key });
      assert.equal(res.status, 200, query);
      assert.equal(res.body.data.length, expected, query);
    }
  });

  test('a non-numeric limit or a forged cursor answers 400 invalid_request', async () => {
    for (const query of ['?limit=abc', '?limit=1.5', '?cursor=not-a-cursor', `?cursor=${Buffer.from('["x"]').toString('base64url')}`, `?cursor=${Buffer.from('["locks","x"]').toString('base64url')}`]) {
      const res = await ctx.service.request<{ error: { code: string } }>('GET', `/v1/locks${query}`, { token: key });
      assert.equal(res.status, 400, query);
      assert.equal(res.body.error.code, 'invalid_request', query);
    }
  });

  test('the last page has next_cursor null', async () => {
    const res = await ctx.service.request<Page<Lock>>('GET', '/v1/locks?limit=200', { token: key });
    let cursor = res.body.next_cursor;
    let last = res;
    while (cursor) {
      last = await ctx.service.request<Page<Lock>>('GET', `/v1/locks?limit=200&cursor=${cursor}`, { token: key });
      cursor = last.body.next_cursor;
    }
    assert.equal(last.body.data.length, 200); // 1,000 is a multiple of 200: the last full page says there is no more
    assert.equal(last.body.next_cursor, null);
  });
});

describe('security groups', () => {
  test('lists the groups a key may give (in its scope and above it, never a sibling department\'s), filtered by is_default', async () => {
    const account = await createAccount(ctx.service);
    const dept = await createDepartment(ctx.service, account.rootLocationId);
    const sibling = await createDepartment(ctx.service, account.rootLocationId);
    const staff = await createSecurityGroup(ctx.service, account.rootLocationId, 'staff', { is_default: true, description: 'Everyone' });
    const night = await createSecurityGroup(ctx.service, account.rootLocationId, 'night');
    const deptGroup = await createSecurityGroup(ctx.service, dept, 'dept-only');
    const siblingGroup = await createSecurityGroup(ctx.service, sibling, 'sibling-only');
    const rootKey = (await createApiKey(ctx.service, account.rootLocationId, ['catalog:read'])).token;
    const deptKey = (await createApiKey(ctx.service, dept, ['catalog:read'])).token;

    const all = await ctx.service.request<Page<{ id: number; code: string }>>('GET', '/v1/security_groups', { token: rootKey });
    assert.deepEqual(
      all.body.data.map((g) => g.code),
      ['staff', 'night', 'dept-only', 'sibling-only'],
    );
    const defaults = await ctx.service.request<Page<Record<string, unknown>>>('GET', '/v1/security_groups?is_default=true', { token: rootKey });
    assert.deepEqual(defaults.body.data, [{ id: staff.id, code: 'staff', title: 'staff', description: 'Everyone', is_default: true }]);
    const others = await ctx.service.request<Page<{ id: number }>>('GET', '/v1/security_groups?is_default=false', { token: rootKey });
    assert.deepEqual(
      others.body.data.map((g) => g.id),
      [night.id, deptGroup.id, siblingGroup.id],
    );
    // The root's groups exist at the department (its keys may give them); the sibling's do not.
    const deptView = await ctx.service.request<Page<{ id: number }>>('GET', '/v1/security_groups', { token: deptKey });
    assert.deepEqual(
      deptView.body.data.map((g) => g.id),
      [staff.id, night.id, deptGroup.id],
    );
    const deptDefaults = await ctx.service.request<Page<{ id: number }>>('GET', '/v1/security_groups?is_default=true', { token: deptKey });
    assert.deepEqual(deptDefaults.body.data.map((g) => g.id), [staff.id]);
    // Paging walks the same set.
    const first = await ctx.service.request<Page<{ id: number }>>('GET', '/v1/security_groups?limit=2', { token: deptKey });
    const rest = await ctx.service.request<Page<{ id: number }>>('GET', `/v1/security_groups?limit=2&cursor=${encodeURIComponent(first.body.next_cursor ?? '')}`, { token: deptKey });
    assert.deepEqual([...first.body.data, ...rest.body.data].map((g) => g.id), [staff.id, night.id, deptGroup.id]);
    assert.equal(rest.body.next_cursor, null);
    // Every group listed is one the department's keys may give.
    const keysKey = (await createApiKey(ctx.service, dept, ['people:write', 'keys:write'])).token;
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: keysKey, body: { name: 'Dept Person', email: `dept.${process.pid}.${Date.now()}@example.com` } });
    assert.equal(person.status, 201, person.text);
    const issued = await ctx.service.request('POST', '/v1/keys', { token: keysKey, body: { person_id: person.body.id, security_groups: ['staff', 'night', 'dept-only'], channel: 'email' } });
    assert.equal(issued.status, 202, issued.text);
    const refused = await ctx.service.request<{ error: { details: Array<{ field: string; code: string }> } }>('POST', '/v1/keys', { token: keysKey, body: { person_id: person.body.id, security_groups: ['sibling-only'], channel: 'email' } });
    assert.equal(refused.status, 422, refused.text);
    assert.deepEqual(refused.body.error.details.map((d) => [d.field, d.code]), [['security_groups[0]', 'unknown_security_group']]);
    const bad = await ctx.service.request('GET', '/v1/security_groups?is_default=maybe', { token: rootKey });
    assert.equal(bad.status, 400);
  });
});
