// The operator API: ADMIN_TOKEN, accounts and departments, API keys (token once, hash only, expiry rules),
// security groups, gateways and locks; the sandbox clock.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashToken } from '../../src/platform/secrets.ts';
import { advanceClock, createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, startService, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService();


describe('operator authentication', () => {
  test('a missing or wrong admin token answers 401 unauthenticated', async () => {
    for (const token of [null, 'wrong-token-wrong-token', `lk_${'a'.repeat(43)}`]) {
      const res = await ctx.service.request<ErrorBody>('POST', '/admin/v1/accounts', { token, body: { name: 'x' } });
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'unauthenticated');
      assert.equal(res.body.error.message, 'A valid operator token (ADMIN_TOKEN) is required.', 'it names what the operator API takes, not an API key');
    }
  });

  test('wrong operator tokens from one address: past 30 a minute, every operator call from there answers 429, the right token too', async () => {
    const ip = '203.0.113.77';
    for (let i = 0; i < 30; i++) {
      assert.equal((await ctx.service.request('GET', '/admin/v1/accounts', { token: `guess-${i}-guess-guess`, ip })).status, 401);
    }
    const refused = await ctx.service.request<ErrorBody>('GET', '/admin/v1/accounts', { token: ADMIN_TOKEN, ip });
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error.code, 'rate_limited');
    assert.ok(refused.headers.get('retry-after'));
    // Another address is not held up, nor is the public API from this one (the operator's budget is its own).
    assert.equal((await ctx.service.request('GET', '/admin/v1/accounts', { token: ADMIN_TOKEN, ip: '203.0.113.78' })).status, 200);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { ip })).status, 401);
    await advanceClock(ctx.service, 61);
    assert.equal((await ctx.service.request('GET', '/admin/v1/accounts', { token: ADMIN_TOKEN, ip })).status, 200, 'the next minute');
  });

  test('a required query parameter left out is named as such: 400 invalid_request', async () => {
    const res = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/locations');
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'invalid_request');
    assert.equal(res.body.error.message, 'The query parameter account_id is required.');
  });

  test('a public API key is not an admin token', async () => {
    const account = await createAccount(ctx.service);
    const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    const res = await ctx.service.request('GET', `/admin/v1/accounts/${account.id}`, { token: key.token });
    assert.equal(res.status, 401);
  });
});

describe('accounts and locations', () => {
  test('an account is created with the contract defaults and a root location', async () => {
    const res = await ctx.service.admin<Record<string, unknown> & { root_location: { id: number; name: string } }>('POST', '/admin/v1/accounts', {
      name: 'Defaults Ltd',
    });
    assert.equal(res.status, 201);
    assert.deepEqual({ ...res.body, id: 0, root_location: { ...res.body.root_location, id: 0 } }, {
      id: 0,
      name: 'Defaults Ltd',
      reseller: false,
      sms_enabled: true,
      phone_key_allowance: null,
      locking_system: null,
      offline_access_seconds: 604_800,
      root_location: { id: 0, name: 'Defaults Ltd' },
    });
  });

  test('PATCH changes only the fields sent', async () => {
    const account = await createAccount(ctx.service, { phone_key_allowance: 5 });
    const res = await ctx.service.admin<Record<string, unknown>>('PATCH', `/admin/v1/accounts/${account.id}`, {
      sms_enabled: false,
      locking_system: 'sandbox',
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.sms_enabled, false);
    assert.equal(res.body.locking_system, 'sandbox');
    assert.equal(res.body.phone_key_allowance, 5);
    const empty = await ctx.service.admin<ErrorBody>('PATCH', `/admin/v1/accounts/${account.id}`, {});
    assert.equal(empty.status, 422);
    const missing = await ctx.service.admin<ErrorBody>('PATCH', '/admin/v1/accounts/999999', { name: 'x' });
    assert.equal(missing.status, 404);
    const badSystem = await ctx.service.admin<ErrorBody>('PATCH', `/admin/v1/accounts/${account.id}`, { locking_system: 'acme' });
    assert.equal(badSystem.status, 422);
  });

  test('departments nest to any depth under their parent', async () => {
    const account = await createAccount(ctx.service);
    let parent = account.rootLocationId;
    for (let depth = 0; depth < 6; depth++) {
      const res = await ctx.service.admin<{ id: number; parent_id: number; account_id: number; name: string }>('POST', '/admin/v1/locations', {
        parent_id: parent,
        name: `Level ${depth}`,
      });
      assert.equal(res.status, 201);
      assert.equal(res.body.parent_id, parent);
      assert.equal(res.body.account_id, account.id);
      parent = res.body.id;
    }
    // A key at the root sees a lock six levels down; a key at that level sees nothing above it.
    const deepLock = await createLock(ctx.service, parent);
    const rootKey = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    assert.equal((await ctx.service.request('GET', `/v1/locks/${deepLock}`, { token: rootKey.token })).status, 200);
    const unknownParent = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locations', { parent_id: 999999, name: 'x' });
    assert.equal(unknownParent.status, 422);
    assert.equal(unknownParent.body.error.details?.[0]?.field, 'parent_id');
  });

  test('dashboard users belong to an existing account', async () => {
    const account = await createAccount(ctx.service);
    const res = await ctx.service.admin<{ id: number; account_id: number; email: string }>('POST', '/admin/v1/users', {
      account_id: account.id,
      name: 'Dana',
      email: 'dana@example.com',
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.account_id, account.id);
    const bad = await ctx.service.admin('POST', '/admin/v1/users', { account_id: account.id, name: 'x', email: 'not-an-email' });
    assert.equal(bad.status, 422);
    const noAccount = await ctx.service.admin('POST', '/admin/v1/users', { account_id: 999999, name: 'x', email: 'x@example.com' });
    assert.equal(noAccount.status, 422);
  });
});

describe('names', () => {
  /** Every create and update of the operator API that takes a name or title: method, path, the rest of the body, field. */
  async function nameCases(): Promise<{ root: number; cases: Array<[string, string, Record<string, unknown>, string]> }> {
    const account = await createAccount(ctx.service);
    const root = account.rootLocationId;
    const lock = await createLock(ctx.service, root);
    const group = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/security_groups', { location_id: root, code: 'names', title: 'Names' });
    assert.equal(group.status, 201, group.text);
    const cases: Array<[string, string, Record<string, unknown>, string]> = [
      ['POST', '/admin/v1/accounts', {}, 'name'],
      ['PATCH', `/admin/v1/accounts/${account.id}`, {}, 'name'],
      ['POST', '/admin/v1/locations', { parent_id: root }, 'name'],
      ['PATCH', `/admin/v1/locations/${root}`, {}, 'name'],
      ['POST', '/admin/v1/users', { account_id: account.id, email: 'blank@example.com' }, 'name'],
      ['POST', '/admin/v1/api_keys', { location_id: root, scopes: ['catalog:read'] }, 'name'],
      ['POST', '/admin/v1/gateways', { location_id: root }, 'name'],
      ['POST', '/admin/v1/locks', { location_id: root }, 'name'],
      ['PATCH', `/admin/v1/locks/${lock}`, {}, 'name'],
      ['POST', '/admin/v1/security_groups', { location_id: root, code: 'blank' }, 'title'],
      ['PATCH', `/admin/v1/security_groups/${group.body.id}`, {}, 'title'],
      ['POST', '/admin/v1/controllers', { location_id: root, serial_number: 423187757, address: '192.0.2.10' }, 'name'],
      ['PATCH', '/admin/v1/controllers/999999', {}, 'name'],
    ];
    return { root, cases };
  }

  test('a name (or title) of whitespace only answers 422 validation_failed on it, on every create and update', async () => {
    const { root, cases } = await nameCases();
    for (const blank of ['   ', '\t\n', '\u00a0\u3000']) {
      for (const [method, path, body, field] of cases) {
        const res = await ctx.service.admin<ErrorBody>(method, path, { ...body, [field]: blank });
        const what = `${method} ${path} ${JSON.stringify(blank)}`;
        assert.equal(res.status, 422, `${what}: ${res.text}`);
        assert.equal(res.body.error.code, 'validation_failed', what);
        assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [[field, 'invalid']], what);
        assert.equal(res.body.error.details?.[0]?.message, `${field} must not be blank.`, what);
      }
    }
    // Spaces around a name are still allowed.
    const padded = await ctx.service.admin<{ name: string }>('POST', '/admin/v1/locations', { parent_id: root, name: ' Annex ' });
    assert.equal(padded.status, 201, padded.text);
  });

  // Names, titles, a lock's place and a group's code reach SMS and e-mails, webhooks, the console and gateways'
  // displays: a line break or a right-to-left override there would put words of the sender's own in the
  // service's mouth (README: API notes, "Names on one line").
  test('a name, title, place or code with a control character, line break or bidirectional control answers 422, and nothing is written', async () => {
    const { root, cases } = await nameCases();
    const lock = await createLock(ctx.service, root);
    const oneLine: Array<[string, string, Record<string, unknown>, string]> = [
      ...cases,
      ['POST', '/admin/v1/locks', { location_id: root, name: 'Door' }, 'place'],
      ['PATCH', `/admin/v1/locks/${lock}`, {}, 'place'],
      ['POST', '/admin/v1/security_groups', { location_id: root, title: 'Night' }, 'code'],
    ];
    const before = await ctx.database.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM locks)::int + (SELECT count(*) FROM security_groups)::int + (SELECT count(*) FROM locations)::int AS n',
    );
    for (const text of ['Door\nIMPORTANT: call +44 20 7946 0000', 'Door\rB', 'Door\u001b[2J', 'Door\u0085B', 'Door\u2028B', 'Door \u202eroirf', 'Door \u2066B\u2069']) {
      for (const [method, path, body, field] of oneLine) {
        const res = await ctx.service.admin<ErrorBody>(method, path, { ...body, [field]: text });
        const what = `${method} ${path} ${field}=${JSON.stringify(text)}`;
        assert.equal(res.status, 422, `${what}: ${res.text}`);
        assert.equal(res.body.error.code, 'validation_failed', what);
        assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [[field, 'invalid']], what);
        // A code holds no whitespace at all: a line break in one is told as that rule.
        const message = field === 'code' && /\s/.test(text) ? 'code is not in the expected form: one word, without spaces or line breaks.' : `${field} must not contain control characters or line breaks.`;
        assert.equal(res.body.error.details?.[0]?.message, message, what);
      }
    }
    const after = await ctx.database.db.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM locks)::int + (SELECT count(*) FROM security_groups)::int + (SELECT count(*) FROM locations)::int AS n',
    );
    assert.equal(after[0]?.n, before[0]?.n, 'no lock, group or location was created');
    const stored = await ctx.database.db.query<{ name: string; place: string }>('SELECT name, place FROM locks WHERE id = $1', [lock]);
    assert.doesNotMatch(`${stored[0]?.name}${stored[0]?.place}`, /[\n\r\u202e]/, 'the lock is unchanged');

    // One line in any script, with emoji and no-break spaces, is still a name.
    for (const name of ['Porte d\u2019entrée', '正面玄関', 'Lab 🔬 2', 'Gate\u00a0A', 'باب']) {
      const res = await ctx.service.admin<{ name: string }>('PATCH', `/admin/v1/locks/${lock}`, { name });
      assert.equal(res.status, 200, `${name}: ${res.text}`);
      assert.equal(res.body.name, name);
    }
  });
});

describe('API keys', () => {
  test('the token is shown once; only its hash and a short prefix are stored', async () => {
    const account = await createAccount(ctx.service);
    const res = await ctx.service.admin<{ id: number; token: string; prefix: string; expires_at: string; created_at: string }>(
      'POST',
      '/admin/v1/api_keys',
      { location_id: account.rootLocationId, name: 'HR sync', scopes: ['people:write'] },
    );
    assert.equal(res.status, 201);
    assert.match(res.body.token, /^lk_[A-Za-z0-9_-]{43}$/);
    assert.ok(res.body.token.startsWith(res.body.prefix));
    assert.ok(res.body.prefix.length < 16);

    const stored = await ctx.database.db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [res.body.id]);
    const row = JSON.stringify(stored[0]);
    assert.ok(!row.includes(res.body.token), 'the token is not stored');
    assert.equal(stored[0]?.token_hash, hashToken(res.body.token));

    const list = await ctx.service.admin<{ data: Array<Record<string, unknown>> }>('GET', `/admin/v1/api_keys?location_id=${account.rootLocationId}`);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.data[0]?.token, undefined);
    assert.equal(list.body.data[0]?.prefix, res.body.prefix);
  });

  test('the default expiry is a calendar year on, across a 29 February too', async () => {
    const clock = { now: () => new Date('2027-06-15T12:00:00.000Z') };
    const leap = await startService(ctx.database.db, { SANDBOX: 'false' }, clock);
    try {
      const account = await createAccount(leap);
      const created = await leap.admin<{ expires_at: string }>('POST', '/admin/v1/api_keys', { location_id: account.rootLocationId, name: 'k', scopes: [] });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.expires_at, '2028-06-15T12:00:00.000Z');
    } finally {
      await leap.close();
    }
  });

  test('expiry defaults to one year; more than two years ahead, or the past, answers 422', async () => {
    const account = await createAccount(ctx.service);
    const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    const created = await ctx.service.admin<{ expires_at: string; created_at: string }>('POST', '/admin/v1/api_keys', {
      location_id: account.rootLocationId,
      name: 'k',
      scopes: [],
    });
    const oneYearOn = new Date(created.body.created_at);
    oneYearOn.setUTCFullYear(oneYearOn.getUTCFullYear() + 1);
    assert.equal(created.body.expires_at, oneYearOn.toISOString(), 'a calendar year');
    assert.ok(Math.abs(new Date(created.body.created_at).getTime() - now.getTime()) < 60_000, 'created on the service clock');

    const day = 86_400_000;
    const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
    for (const [expires, status] of [
      [at(729 * day), 201],
      [at(2 * 366 * day), 422],
      [at(-day), 422],
      ['2027-02-30T00:00:00Z', 422],
      ['soon', 422],
    ] as const) {
      const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/api_keys', {
        location_id: account.rootLocationId,
        name: 'k',
        scopes: ['catalog:read'],
        expires_at: expires,
      });
      assert.equal(res.status, status, expires);
      if (status === 422) assert.equal(res.body.error.details?.[0]?.field, 'expires_at');
    }
  });

  test('a timestamp without an offset is read as UTC', async () => {
    const account = await createAccount(ctx.service);
    const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    const target = new Date(now.getTime() + 30 * 86_400_000);
    target.setUTCMilliseconds(0);
    const local = target.toISOString().replace('.000Z', '');
    const res = await ctx.service.admin<{ expires_at: string }>('POST', '/admin/v1/api_keys', {
      location_id: account.rootLocationId,
      name: 'k',
      scopes: [],
      expires_at: local,
    });
    assert.equal(res.status, 201);
    assert.equal(res.body.expires_at, target.toISOString());
    const offset = await ctx.service.admin<{ expires_at: string }>('POST', '/admin/v1/api_keys', {
      location_id: account.rootLocationId,
      name: 'k',
      scopes: [],
      expires_at: `${local}+02:00`,
    });
    assert.equal(offset.body.expires_at, new Date(target.getTime() - 2 * 3600_000).toISOString());
  });

  test('unknown scopes, locks outside the key location and foreign users are refused', async () => {
    const account = await createAccount(ctx.service);
    const dept = await createDepartment(ctx.service, account.rootLocationId);
    const rootLock = await createLock(ctx.service, account.rootLocationId);
    const deptLock = await createLock(ctx.service, dept);
    const badScope = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/api_keys', { location_id: dept, name: 'k', scopes: ['doors:open'] });
    assert.equal(badScope.status, 422);
    assert.equal(badScope.body.error.details?.[0]?.field, 'scopes[0]');
    const badLock = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/api_keys', {
      location_id: dept,
      name: 'k',
      scopes: ['locks:control'],
      lock_allowlist: [deptLock, rootLock],
    });
    assert.equal(badLock.status, 422);
    assert.deepEqual(badLock.body.error.details?.map((d) => d.field), ['lock_allowlist[1]']);
    const good = await ctx.service.admin<{ lock_allowlist: number[] }>('POST', '/admin/v1/api_keys', {
      location_id: dept,
      name: 'k',
      scopes: ['locks:control'],
      lock_allowlist: [deptLock],
    });
    assert.deepEqual(good.body.lock_allowlist, [deptLock]);
    const other = await createAccount(ctx.service);
    const user = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: other.id, name: 'u', email: 'u@example.com' });
    const foreignUser = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/api_keys', {
      location_id: dept,
      name: 'k',
      scopes: [],
      created_by_user_id: user.body.id,
    });
    assert.equal(foreignUser.status, 422);
  });

  test('revoking an unknown key answers 404; revoking twice is harmless', async () => {
    const account = await createAccount(ctx.service);
    const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/api_keys/${key.id}`)).status, 204);
    assert.equal((await ctx.service.admin('DELETE', `/admin/v1/api_keys/${key.id}`)).status, 204);
    assert.equal((await ctx.service.admin('DELETE', '/admin/v1/api_keys/999999')).status, 404);
  });
});

describe('security groups, gateways and locks', () => {
  test('a security group code is unique per location', async () => {
    const account = await createAccount(ctx.service);
    const first = await ctx.service.admin('POST', '/admin/v1/security_groups', { location_id: account.rootLocationId, code: 'staff', title: 'Staff' });
    assert.equal(first.status, 201);
    const again = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/security_groups', { location_id: account.rootLocationId, code: 'staff', title: 'Staff' });
    assert.equal(again.status, 422);
    assert.equal(again.body.error.details?.[0]?.field, 'code');
  });

  test('a gateway gets MQTT credentials once; only a hash of the password is kept', async () => {
    const account = await createAccount(ctx.service);
    const res = await ctx.service.admin<{ id: number; mqtt: { url: string; client_id: string; username: string; password: string; topic_prefix: string } }>(
      'POST',
      '/admin/v1/gateways',
      { location_id: account.rootLocationId, name: 'Lobby bridge' },
    );
    assert.equal(res.status, 201);
    assert.match(res.body.mqtt.url, /^mqtt:\/\//);
    assert.equal(res.body.mqtt.topic_prefix, 'latchkey/v1');
    assert.ok(res.body.mqtt.password.length >= 32);
    const [row] = await ctx.database.db.query<{ password_hash: string; mqtt_username: string }>('SELECT * FROM gateways WHERE id = $1', [res.body.id]);
    assert.equal(row?.password_hash, hashToken(res.body.mqtt.password));
    assert.equal(row?.mqtt_username, res.body.mqtt.username);
  });

  test("a lock takes groups of its location and the locations above it, and a gateway of its own account", async () => {
    const account = await createAccount(ctx.service);
    const dept = await createDepartment(ctx.service, account.rootLocationId);
    await ctx.service.admin('POST', '/admin/v1/security_groups', { location_id: account.rootLocationId, code: 'all', title: 'All' });
    await ctx.service.admin('POST', '/admin/v1/security_groups', { location_id: dept, code: 'dept', title: 'Dept' });
    const ok = await ctx.service.admin<{ security_groups: string[] }>('POST', '/admin/v1/locks', { location_id: dept, name: 'd', security_groups: ['all', 'dept'] });
    assert.deepEqual(ok.body.security_groups, ['all', 'dept']);
    const notAbove = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locks', {
      location_id: account.rootLocationId,
      name: 'r',
      security_groups: ['dept'],
    });
    assert.equal(notAbove.status, 422);
    assert.deepEqual(notAbove.body.error.details?.map((d) => [d.field, d.code]), [['security_groups[0]', 'unknown_security_group']]);
    const other = await createAccount(ctx.service);
    const foreignGateway = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/gateways', { location_id: other.rootLocationId, name: 'g' });
    const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locks', { location_id: dept, name: 'x', gateway_id: foreignGateway.body.id });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.details?.[0]?.field, 'gateway_id');
  });
});

describe('sandbox clock', () => {
  test('advance moves the service clock and answers with the new time', async () => {
    const before = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    const after = await advanceClock(ctx.service, 86_400);
    const moved = after.getTime() - before.getTime();
    assert.ok(moved >= 86_400_000 && moved < 86_400_000 + 10_000, `moved ${moved} ms`);
    const bad = await ctx.service.admin('POST', '/admin/v1/sandbox/clock/advance', { seconds: -5 });
    assert.equal(bad.status, 422);
  });

  test('without SANDBOX=true every sandbox path answers 404', async () => {
    const plain = await startService(ctx.database.db, { SANDBOX: 'false' });
    try {
      assert.equal((await plain.admin('GET', '/admin/v1/sandbox/clock')).status, 404);
      assert.equal((await plain.admin('POST', '/admin/v1/sandbox/clock/advance', { seconds: 1 })).status, 404);
    } finally {
      await plain.close();
    }
  });
});
