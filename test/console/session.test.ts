// The console's server edge (docs/console.md), attacked as a browser and an attacker would: sign-in with its
// per-IP failed-attempt limit, the cookie's attributes, CSRF on every change, what the forwarder refuses,
// the per-account key, sign-out and expiry, and nothing in clear at rest.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { targetOf } from '../../src/modules/console/proxy.ts';
import { advanceClock, alignToMinuteStart, createAccount } from '../helpers/fixtures.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { ADMIN_TOKEN, freshIp, startService, useTestService, type RequestOptions, type TestService } from '../helpers/service.ts';
import type { ErrorBody, Page } from '../helpers/types.ts';

const ctx = useTestService(undefined, {}, { transport: 'inject' });

interface Browser {
  cookie: string;
  csrf: string;
  ip: string;
  call<T = Record<string, unknown>>(method: string, path: string, options?: RequestOptions): ReturnType<typeof ctx.service.request<T>>;
}

async function signIn(ip = freshIp()): Promise<Browser> {
  const answer = await ctx.service.request<{ csrf_token: string; expires_at: string }>('POST', '/console/session', { ip, body: { token: ADMIN_TOKEN } });
  assert.equal(answer.status, 200, answer.text);
  const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const browser: Browser = {
    cookie,
    csrf: answer.body.csrf_token,
    ip,
    call: (method, path, options = {}) =>
      ctx.service.request(method, path, { ip, ...options, headers: { cookie: browser.cookie, 'x-csrf-token': browser.csrf, ...options.headers } }),
  };
  return browser;
}

describe('signing in', () => {
  test('the right token gives an HttpOnly, SameSite=Strict cookie for /console and a CSRF token; a wrong one 401', async () => {
    const wrong = await ctx.service.request<ErrorBody>('POST', '/console/session', { ip: freshIp(), body: { token: 'not-the-token' } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'unauthenticated');
    assert.equal(wrong.headers.get('set-cookie'), null);

    const right = await ctx.service.request<{ csrf_token: string; expires_at: string }>('POST', '/console/session', { ip: freshIp(), body: { token: ADMIN_TOKEN } });
    assert.equal(right.status, 200);
    const cookie = right.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^latchkey_console=lkc_[A-Za-z0-9_-]{43}; Path=\/console; Max-Age=43200; HttpOnly; SameSite=Strict$/);
    assert.match(right.body.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(right.headers.get('cache-control'), 'no-store, private');
  });

  test('the cookie is Secure when the browser came over HTTPS', async () => {
    const answer = await ctx.service.request('POST', '/console/session', { ip: freshIp(), body: { token: ADMIN_TOKEN }, headers: { 'x-forwarded-proto': 'https' } });
    assert.match(answer.headers.get('set-cookie') ?? '', /; Secure$/);
  });

  test('failed sign-ins count in the per-IP failed-authentication limit: then even the right token waits', async () => {
    // The limit counts per minute of the service clock: the 31 requests fall in one (a slow machine spans two).
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    for (let i = 0; i < 30; i++) {
      const answer = await ctx.service.request('POST', '/console/session', { ip, body: { token: `guess-${i}` } });
      assert.equal(answer.status, 401);
    }
    const locked = await ctx.service.request<ErrorBody>('POST', '/console/session', { ip, body: { token: ADMIN_TOKEN } });
    assert.equal(locked.status, 429);
    assert.equal(locked.body.error.code, 'rate_limited');
    assert.ok(Number(locked.headers.get('retry-after')) > 0);
    // The public API shares the count: the same IP is locked out there too.
    const publicCall = await ctx.service.request('GET', '/v1/locks', { ip, token: 'lk_' + 'x'.repeat(43) });
    assert.equal(publicCall.status, 429);
    await signIn(freshIp()); // another IP is not touched
  });

  test('forged session cookies are failures too', async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    for (let i = 0; i < 30; i++) {
      const answer = await ctx.service.request('GET', '/console/session', { ip, headers: { cookie: `latchkey_console=lkc_${String(i).padStart(43, 'A')}` } });
      assert.equal(answer.status, 401);
    }
    const locked = await ctx.service.request('GET', '/console/session', { ip, headers: { cookie: 'latchkey_console=whatever' } });
    assert.equal(locked.status, 429);
  });

  test('a malformed body is a 422 in the envelope, not a session', async () => {
    const answer = await ctx.service.request<ErrorBody>('POST', '/console/session', { ip: freshIp(), body: { token: ADMIN_TOKEN, admin: true } });
    assert.equal(answer.status, 422);
    assert.equal(answer.headers.get('set-cookie'), null);
  });
});

describe('the forwarder', () => {
  test('nothing answers without a session', async () => {
    for (const [method, path] of [['GET', '/console/session'], ['GET', '/console/api/admin/v1/accounts'], ['POST', '/console/api/admin/v1/accounts'], ['GET', '/console/live'], ['DELETE', '/console/session']] as const) {
      const answer = await ctx.service.request<ErrorBody>(method, path, { ip: freshIp(), body: method === 'POST' ? { name: 'x' } : undefined });
      assert.equal(answer.status, 401, `${method} ${path}`);
      assert.equal(answer.body.error.code, 'unauthenticated');
    }
    // The operator token itself is no session either.
    const bearer = await ctx.service.request('GET', '/console/api/admin/v1/accounts', { ip: freshIp(), token: ADMIN_TOKEN });
    assert.equal(bearer.status, 401);
  });

  test('a change without the CSRF token, or with another session\'s, is refused and changes nothing', async () => {
    const browser = await signIn();
    const other = await signIn();
    const name = `csrf-${Date.now()}`;
    const bare = await ctx.service.request<ErrorBody>('POST', '/console/api/admin/v1/accounts', { ip: browser.ip, headers: { cookie: browser.cookie }, body: { name } });
    assert.equal(bare.status, 403);
    assert.equal(bare.body.error.code, 'forbidden');
    const foreign = await browser.call<ErrorBody>('POST', '/console/api/admin/v1/accounts', { body: { name }, headers: { 'x-csrf-token': other.csrf } });
    assert.equal(foreign.status, 403);
    const listed = await browser.call<Page<{ name: string }>>('GET', `/console/api/admin/v1/accounts?q=${name}`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, []);

    const crossSite = await browser.call<ErrorBody>('POST', '/console/api/admin/v1/accounts', { body: { name }, headers: { origin: 'https://evil.example' } });
    assert.equal(crossSite.status, 403, 'a page of another host, even holding the token');

    const made = await browser.call<{ id: number; name: string }>('POST', '/console/api/admin/v1/accounts', { body: { name }, headers: { origin: 'http://localhost' } });
    assert.equal(made.status, 201);
    assert.equal(made.body.name, name);
  });

  test("the operator API's own answers come back as they are: validation details, 404", async () => {
    const browser = await signIn();
    const invalid = await browser.call<ErrorBody>('POST', '/console/api/admin/v1/locations', { body: { parent_id: 999999, name: 'x' } });
    assert.equal(invalid.status, 422);
    assert.equal(invalid.body.error.details?.[0]?.field, 'parent_id');
    const missing = await browser.call<ErrorBody>('GET', '/console/api/admin/v1/accounts/999999');
    assert.equal(missing.status, 404);
  });

  test('refuses paths outside the two APIs, dot segments, and public calls without an account', async () => {
    const browser = await signIn();
    for (const path of ['/console/api/console/session', '/console/api/activate/x', '/console/api/v1openapi.json']) {
      const answer = await browser.call<ErrorBody>('GET', path);
      assert.equal(answer.status, 400, path);
      assert.equal(answer.body.error.code, 'invalid_request');
    }
    const noAccount = await browser.call<ErrorBody>('GET', '/console/api/v1/locks');
    assert.equal(noAccount.status, 400);
    const badAccount = await browser.call<ErrorBody>('GET', '/console/api/v1/locks', { headers: { 'latchkey-account': '1 OR 1=1' } });
    assert.equal(badAccount.status, 400);
    const unknown = await browser.call<ErrorBody>('GET', '/console/api/v1/locks', { headers: { 'latchkey-account': '999999' } });
    assert.equal(unknown.status, 404);
  });

  test('dot segments that reach the service unresolved (a raw client) are refused before routing', () => {
    for (const url of ['/console/api/v1/../admin/v1/accounts', '/console/api/v1/%2e%2e/admin/v1/accounts', '/console/api/admin/v1/%2E/x', '/console/api/admin/v1/x/..']) {
      assert.equal(targetOf(url, '1').kind, 'refused', url);
    }
    // Backslashes are read as slashes on the way: `..\..\healthz` reached /healthz.
    for (const url of ['/console/api/admin/v1/..\\..\\healthz', '/console/api/admin/v1/..%5C..%5Chealthz', '/console/api/v1/..\\..\\admin/v1/accounts']) {
      assert.equal(targetOf(url, '1').kind, 'refused', url);
    }
    assert.equal(targetOf('/console/api/v1/people?name=a%5Cb', '1').kind, 'public', 'a backslash in the query is data');
    assert.deepEqual(targetOf('/console/api/v1/locks?limit=5', '12'), { kind: 'public', path: '/v1/locks?limit=5', accountId: 12 });
    assert.deepEqual(targetOf('/console/api/admin/v1/accounts', undefined), { kind: 'operator', path: '/admin/v1/accounts' });
  });

  test('public calls act with one key of the session in the account, made through the operator API and replaced if revoked', async () => {
    const account = await createAccount(ctx.service);
    const browser = await signIn();
    const asAccount = { headers: { 'latchkey-account': String(account.id) } };
    const created = await browser.call<{ id: string }>('POST', '/console/api/v1/people', { ...asAccount, body: { name: 'Ada', email: 'ada@example.com' } });
    assert.equal(created.status, 201, created.text);
    const people = await browser.call<Page<{ id: string }>>('GET', '/console/api/v1/people', asAccount);
    assert.deepEqual(people.body.data.map((p) => p.id), [created.body.id]);

    const keys = await ctx.service.admin<Page<{ id: number; name: string; scopes: string[]; revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.equal(keys.body.data.length, 1, 'one key for both calls');
    const key = keys.body.data[0];
    assert.equal(key?.name, 'Operator console');
    assert.equal(key?.scopes.length, 8);

    await ctx.service.admin('DELETE', `/admin/v1/api_keys/${key?.id}`);
    const again = await browser.call('GET', '/console/api/v1/people', asAccount);
    assert.equal(again.status, 200, 'a revoked key is replaced, the browser is not signed out');
  });

  // Issue 27, item 7: a page's first load asks several lists at once; each found no key and made one.
  test('calls made at once on a page\'s first load make one key, not one each (none made and revoked)', async () => {
    const account = await createAccount(ctx.service);
    const browser = await signIn();
    const asAccount = { headers: { 'latchkey-account': String(account.id) } };
    const answers = await Promise.all(['/v1/locks', '/v1/security_groups', '/v1/people', '/v1/keys', '/v1/locks?limit=200'].map((path) => browser.call('GET', `/console/api${path}`, asAccount)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200]);
    const keys = await ctx.service.admin<Page<{ name: string; revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.deepEqual(keys.body.data.map((k) => [k.name, k.revoked_at]), [['Operator console', null]], 'one key, never a second one revoked');

    // Revoked behind the session's back while calls are in flight: one replacement, kept for the next calls.
    await ctx.service.admin('DELETE', `/admin/v1/api_keys/${(await ctx.service.admin<Page<{ id: number }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`)).body.data[0]?.id}`);
    const again = await Promise.all([1, 2, 3, 4].map(() => browser.call('GET', '/console/api/v1/locks', asAccount)));
    assert.deepEqual(again.map((a) => a.status), [200, 200, 200, 200]);
    const after = await ctx.service.admin<Page<{ revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.equal(after.body.data.length, 2, 'the revoked key and one replacement');
    assert.equal(after.body.data.filter((k) => k.revoked_at === null).length, 1);
    await browser.call('GET', '/console/api/v1/locks', asAccount);
    const last = await ctx.service.admin<Page<unknown>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.equal(last.body.data.length, 2, 'the replacement is the one stored: no third key');
  });
});

describe('signing out and expiry', () => {
  test('sign-out needs the CSRF token, ends the session, clears the cookie and revokes its keys', async () => {
    const account = await createAccount(ctx.service);
    const browser = await signIn();
    await browser.call('GET', '/console/api/v1/locks', { headers: { 'latchkey-account': String(account.id) } });

    const forged = await ctx.service.request('DELETE', '/console/session', { ip: browser.ip, headers: { cookie: browser.cookie } });
    assert.equal(forged.status, 403, 'a cross-site sign-out is refused');
    const out = await browser.call('DELETE', '/console/session');
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie') ?? '', /^latchkey_console=; Path=\/console; Max-Age=0;/);

    const after = await browser.call<ErrorBody>('GET', '/console/api/admin/v1/accounts');
    assert.equal(after.status, 401);
    const keys = await ctx.service.admin<Page<{ revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`);
    assert.ok(keys.body.data.every((k) => k.revoked_at !== null));
  });

  test('a session ends after an hour without a request and after twelve hours in any case', async () => {
    const idle = await signIn();
    await advanceClock(ctx.service, 3601);
    assert.equal((await idle.call('GET', '/console/session')).status, 401);

    const busy = await signIn();
    // A request every 50 minutes keeps it alive until 12 h after sign-in (15 × 50 min = 12.5 h).
    for (let step = 0; step < 15; step++) {
      assert.equal((await busy.call('GET', '/console/session')).status, 200, `after ${step * 50} minutes`);
      await advanceClock(ctx.service, 3000);
    }
    assert.equal((await busy.call('GET', '/console/session')).status, 401);
  });

  test('an abandoned session, once purged, leaves no usable key: the keys it acted with are revoked', async () => {
    const account = await createAccount(ctx.service);
    const browser = await signIn();
    assert.equal((await browser.call('GET', '/console/api/v1/locks', { headers: { 'latchkey-account': String(account.id) } })).status, 200);
    const keys = async () => (await ctx.service.admin<Page<{ name: string; revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${account.id}`)).body.data;
    assert.deepEqual((await keys()).map((k) => [k.name, k.revoked_at]), [['Operator console', null]]);

    await advanceClock(ctx.service, 3601); // idle past the hour; the purge job runs with the due work
    assert.ok((await keys()).every((k) => k.revoked_at !== null), 'revoked, not left to live out the 12 hours');
    const rows = await ctx.database.db.query('SELECT 1 FROM console_session_keys');
    assert.equal(rows.length, 0);
  });

  test('neither the cookie token nor the operator token is stored in clear', async () => {
    const browser = await signIn();
    const rows = await ctx.database.db.query<Record<string, unknown>>('SELECT * FROM console_sessions');
    const stored = JSON.stringify(rows);
    assert.ok(rows.length > 0);
    assert.ok(!stored.includes(browser.cookie.split('=')[1] as string));
    assert.ok(!stored.includes(ADMIN_TOKEN));
    const keys = JSON.stringify(await ctx.database.db.query('SELECT * FROM console_session_keys'));
    assert.ok(!keys.includes('lk_'), 'the account keys are sealed');
  });
});

describe('per-IP rules behind the forwarder', () => {
  test("see the browser's address, not the service's own: a lock-out of 127.0.0.1 does not stop a browser elsewhere", async () => {
    const account = await createAccount(ctx.service);
    const browser = await signIn();
    // The forwarder's own requests would come from 127.0.0.1 if it did not pass the browser's address on.
    for (let i = 0; i < 30; i++) await ctx.service.request('GET', '/v1/locks', { ip: '127.0.0.1', token: `lk_${'y'.repeat(43)}` });
    assert.equal((await ctx.service.request('GET', '/v1/locks', { ip: '127.0.0.1', token: `lk_${'y'.repeat(43)}` })).status, 429);

    const answer = await browser.call('GET', '/console/api/v1/locks', { headers: { 'latchkey-account': String(account.id) } });
    assert.equal(answer.status, 200, answer.text);
    await advanceClock(ctx.service, 61); // lifts the lock-out for what follows
  });
});

describe('when ADMIN_TOKEN changes', () => {
  const OLD_TOKEN = 'old-operator-token-0123456789';
  const NEW_TOKEN = 'new-operator-token-0123456789';
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => database?.close());

  const withToken = (token: string) => startService(database.db, { ADMIN_TOKEN: token }, undefined, undefined, 'inject');
  const advance = async (service: TestService, token: string, seconds: number) =>
    assert.equal((await service.request('POST', '/admin/v1/sandbox/clock/advance', { token, body: { seconds } })).status, 200);
  /** The console's keys of an account, read as an operator of `service`. */
  const consoleKeys = async (service: TestService, accountId: number, token: string) =>
    (await service.request<Page<{ name: string; revoked_at: string | null }>>('GET', `/admin/v1/api_keys?account_id=${accountId}`, { token })).body.data.filter(
      (k) => k.name === 'Operator console',
    );

  test("the sessions of the old token end at the restart: their API keys are revoked, and going back to the old token revives nothing", async () => {
    const before = await withToken(OLD_TOKEN);
    const ip = freshIp();
    const account = (await before.request<{ id: number }>('POST', '/admin/v1/accounts', { token: OLD_TOKEN, body: { name: 'Acme' } })).body;
    const signedIn = await before.request<{ csrf_token: string }>('POST', '/console/session', { ip, body: { token: OLD_TOKEN } });
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const asBrowser = { ip, headers: { cookie, 'latchkey-account': String(account.id) } };
    assert.equal((await before.request('GET', '/console/api/v1/locks', asBrowser)).status, 200);
    await before.close();

    const changed = await withToken(NEW_TOKEN);
    try {
      assert.equal((await changed.request('GET', '/console/session', asBrowser)).status, 401);
      const keys = await consoleKeys(changed, account.id, NEW_TOKEN);
      assert.equal(keys.length, 1);
      assert.ok(keys.every((k) => k.revoked_at !== null), 'the key of every scope does not outlive its session');
      assert.equal((await database.db.query('SELECT 1 FROM console_sessions')).length, 0);
      await advance(changed, NEW_TOKEN, 3601); // and the purge job, with the due work, finds nothing left to refuse it
    } finally {
      await changed.close();
    }

    const back = await withToken(OLD_TOKEN);
    try {
      assert.equal((await back.request('GET', '/console/session', asBrowser)).status, 401, 'the old session is gone');
      assert.equal((await back.request('GET', '/console/api/v1/locks', asBrowser)).status, 401);
    } finally {
      await back.close();
    }
  });

  test('while instances disagree (a rolling change), the purge job of the new token revokes the keys of sessions signed in with the old one', async () => {
    const changed = await withToken(NEW_TOKEN);
    const stale = await withToken(OLD_TOKEN);
    try {
      const ip = freshIp();
      const account = (await stale.request<{ id: number }>('POST', '/admin/v1/accounts', { token: OLD_TOKEN, body: { name: 'Acme' } })).body;
      const signedIn = await stale.request('POST', '/console/session', { ip, body: { token: OLD_TOKEN } });
      const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
      assert.equal((await stale.request('GET', '/console/api/v1/locks', { ip, headers: { cookie, 'latchkey-account': String(account.id) } })).status, 200);
      assert.deepEqual((await consoleKeys(changed, account.id, NEW_TOKEN)).map((k) => k.revoked_at), [null]);

      await advance(changed, NEW_TOKEN, 601); // the purge job is due; the session is not idle yet
      assert.ok((await consoleKeys(changed, account.id, NEW_TOKEN)).every((k) => k.revoked_at !== null));
    } finally {
      await stale.close();
      await changed.close();
    }
  });
});

describe('with CONSOLE_ENABLED=false', () => {
  let database: TestDatabase;
  let service: TestService;
  before(async () => {
    database = await createTestDatabase();
    service = await startService(database.db, { CONSOLE_ENABLED: 'false' }, undefined, undefined, 'inject');
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  test('no console path exists: not the sign-in, not the forwarder, not the stream', async () => {
    for (const [method, path] of [['POST', '/console/session'], ['GET', '/console/api/admin/v1/accounts'], ['GET', '/console/live']] as const) {
      const answer = await service.request<ErrorBody>(method, path, { body: method === 'POST' ? { token: ADMIN_TOKEN } : undefined });
      assert.equal(answer.status, 404, `${method} ${path}`);
      assert.equal(answer.body.error.code, 'not_found');
    }
  });
});

describe('a stream through the forwarder', () => {
  let database: TestDatabase;
  let service: TestService;
  const logLines: string[] = [];
  before(async () => {
    database = await createTestDatabase();
    // Over a real connection, as a browser calls it; the log read for what the service thought of it.
    service = await startService(database.db, {}, undefined, { level: 'warn', stream: { write: (line: string) => logLines.push(line) } });
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  test('GET /v1/webhooks/listen is refused at once with 400 in the envelope, nothing logged as unexpected', async () => {
    const account = await createAccount(service);
    const ip = freshIp();
    const signedIn = await service.request<{ csrf_token: string }>('POST', '/console/session', { ip, body: { token: ADMIN_TOKEN } });
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    for (const path of ['/console/api/v1/webhooks/listen', '/console/api/v1/webhooks/listen?events=person.created', '/console/api/v1/webhooks/listen/']) {
      // It used to hang (the forwarder's in-process request never completed): a deadline, not the test's timeout.
      const response = await fetch(`${service.url}${path}`, {
        headers: { cookie, 'latchkey-account': String(account.id), 'x-forwarded-for': ip },
        signal: AbortSignal.timeout(5000),
      }).catch((error: unknown) => assert.fail(`${path}: no answer within 5 s (${String(error)})`));
      const body = (await response.json()) as ErrorBody;
      assert.equal(response.status, 400, path);
      assert.equal(body.error.code, 'invalid_request');
      assert.match(body.error.message, /stream .*the operator console does not forward it/);
    }
    // The forwarder still works for the other webhook routes.
    const list = await service.request('GET', '/console/api/v1/webhooks', { ip, headers: { cookie, 'latchkey-account': String(account.id) } });
    assert.equal(list.status, 200, list.text);
    const errorsLogged = logLines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.level >= 50);
    assert.deepEqual(errorsLogged, []);
  });
});
