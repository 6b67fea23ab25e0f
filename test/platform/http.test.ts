// The platform rules every response follows: Cache-Control, the error envelope, 400/404/405/422/500.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { withFaults } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, startService, type TestService, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let token: string;
let writer: string;
let lockId: number;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  lockId = await createLock(service, account.rootLocationId);
  token = (await createApiKey(service, account.rootLocationId, ['catalog:read'])).token;
  writer = (await createApiKey(service, account.rootLocationId, ['people:write'])).token;
});

describe('every response', () => {
  test('carries Cache-Control: no-store, private, errors and unknown routes included', async () => {
    const responses = await Promise.all([
      ctx.service.request('GET', '/v1/locks', { token }),
      ctx.service.request('GET', `/v1/locks/${lockId}`, { token }),
      ctx.service.request('GET', '/v1/locks'),
      ctx.service.request('GET', '/v1/locks/999999', { token }),
      ctx.service.request('GET', '/v1/no/such/route', { token }),
      ctx.service.request('GET', '/elsewhere'),
      ctx.service.request('DELETE', '/v1/locks', { token }),
      ctx.service.request('GET', '/v1/locks?limit=x', { token }),
      ctx.service.request('GET', '/v1/openapi.json'),
      ctx.service.admin('GET', '/admin/v1/sandbox/clock'),
      ctx.service.request('POST', '/admin/v1/accounts', { body: {} }),
      ctx.service.admin('POST', '/admin/v1/accounts', { nope: 1 }),
    ]);
    for (const res of responses) assert.equal(res.headers.get('cache-control'), 'no-store, private', `status ${res.status}`);
  });

  test('non-2xx answers use the envelope { error: { code, message } }', async () => {
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks/999999', { token });
    assert.equal(res.status, 404);
    assert.deepEqual(Object.keys(res.body), ['error']);
    assert.equal(res.body.error.code, 'not_found');
    assert.equal(typeof res.body.error.message, 'string');
    assert.equal(res.body.error.details, undefined);
  });
});

describe('routing errors', () => {
  test('an unknown route answers 404 not_found', async () => {
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/unknown', { token });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
  });

  test('an unsupported method on a known path answers 405 invalid_request with Allow', async () => {
    for (const [method, path] of [
      ['DELETE', '/v1/locks'],
      ['POST', `/v1/locks/${lockId}`],
      ['PUT', '/v1/security_groups'],
    ] as const) {
      const res = await ctx.service.request<ErrorBody>(method, path, { token });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.headers.get('allow') ?? '', /GET/);
    }
  });

  test('OPTIONS, TRACE and a HEAD where there is no GET answer 405 too, in the envelope', async () => {
    // fetch refuses TRACE, so these go through node:http.
    const send = (method: string, path: string) =>
      new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
        const req = httpRequest(ctx.service.url + path, { method, headers: { authorization: `Bearer ${token}` } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
        });
        req.on('error', reject).end();
      });
    for (const [method, path] of [
      ['OPTIONS', '/v1/locks'],
      ['TRACE', '/v1/locks'],
      ['OPTIONS', `/v1/locks/${lockId}/unlock`],
      ['HEAD', `/v1/locks/${lockId}/unlock`],
    ] as const) {
      const res = await send(method, path);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.ok(res.allow, `${method} ${path}: Allow`);
      if (method !== 'HEAD') assert.equal((JSON.parse(res.body) as ErrorBody).error.code, 'invalid_request');
    }
    // A HEAD of a path that has GET is still the GET's head.
    assert.equal((await send('HEAD', '/v1/locks')).status, 200);
  });

  test('a 405 is answered to whoever may call the path, always with Allow: any valid key, or ADMIN_TOKEN', async () => {
    for (const [method, path, allow] of [
      ['PUT', '/admin/v1/accounts', 'POST, GET'],
      ['DELETE', '/admin/v1/locks/1', 'PATCH'],
    ] as const) {
      const res = await ctx.service.admin<ErrorBody>(method, path);
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get('allow'), allow, `${method} ${path}`);
      assert.equal(res.headers.get('x-ratelimit-limit'), null, 'the operator API has no rate limits');
      const anonymous = await ctx.service.request<ErrorBody>(method, path);
      assert.equal(anonymous.status, 401, `${method} ${path} without the operator token`);
      assert.equal(anonymous.headers.get('allow'), null);
    }
    const noToken = await ctx.service.request<ErrorBody>('PUT', '/v1/locks');
    assert.equal(noToken.status, 401);
    assert.equal(noToken.body.error.code, 'unauthenticated');
  });

  test('a query parameter outside its set of values is told the set', async () => {
    const res = await ctx.service.admin<ErrorBody>('GET', '/admin/v1/sandbox/outbox?channel=fax');
    assert.equal(res.status, 400);
    assert.equal(res.body.error.message, 'The query parameter channel must be one of "sms", "email".');
  });

  test('malformed route parameters and query strings answer 400 invalid_request', async () => {
    for (const path of ['/v1/locks/abc', '/v1/locks/1.5', '/v1/locks?limit=ten', '/v1/locks?location_id=x', '/v1/security_groups?is_default=2']) {
      const res = await ctx.service.request<ErrorBody>('GET', path, { token });
      assert.equal(res.status, 400, path);
      assert.equal(res.body.error.code, 'invalid_request', path);
    }
  });
});

describe('absurd numbers', () => {
  test('ids and cursors beyond what the database holds answer 400 or 422, never 500', async () => {
    const huge = '99999999999999999999';
    const forged = (tag: string, key: unknown) => Buffer.from(JSON.stringify([tag, key])).toString('base64url');
    const account = await createAccount(ctx.service);
    const wide = (await createApiKey(ctx.service, account.rootLocationId, ['catalog:read', 'people:write', 'events:read', 'keys:read'])).token;
    for (const path of [
      `/v1/locks/${huge}`,
      `/v1/locks?location_id=${huge}`,
      `/v1/locks?cursor=${forged('locks', 1e30)}`,
      `/v1/keys/${huge}`,
      `/v1/events?lock_id=${huge}`,
      `/v1/people?cursor=${forged('people', 'not-a-uuid')}`,
    ]) {
      const res = await ctx.service.request<ErrorBody>('GET', path, { token: wide });
      assert.equal(res.status, 400, path);
      assert.equal(res.body.error.code, 'invalid_request', path);
    }
    const bodies: Array<[string, Record<string, unknown>]> = [
      ['/admin/v1/locations', { parent_id: Number(huge), name: 'x' }],
      ['/admin/v1/accounts', { name: 'x', phone_key_allowance: 1e12 }],
    ];
    for (const [path, body] of bodies) {
      const res = await ctx.service.admin<ErrorBody>('POST', path, body);
      assert.equal(res.status, 422, path);
    }
    const person = await ctx.service.request<ErrorBody>('POST', '/v1/people', { token: wide, body: { name: 'Max', location_id: Number(huge) } });
    assert.equal(person.status, 422);
  });
});

describe('GET /', () => {
  const browser = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

  test('a browser gets a small page pointing to the console and the API references, under a strict CSP', async () => {
    const res = await ctx.service.request('GET', '/', { headers: { accept: browser } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.match(res.headers.get('vary') ?? '', /Accept/i);
    for (const href of ['/console', '/docs', '/admin/docs']) assert.ok(res.text.includes(`href="${href}"`), href);
    assert.doesNotMatch(res.text, /<script/);
  });

  test('a client that asks for JSON, or for anything, keeps the JSON 404', async () => {
    for (const accept of ['application/json', '*/*', 'application/json, text/html;q=0.5']) {
      const res = await ctx.service.request<ErrorBody>('GET', '/', { headers: { accept } });
      assert.equal(res.status, 404, accept);
      assert.equal(res.body.error.code, 'not_found');
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    }
  });
});

describe('body validation (operator API, same rules as the public API)', () => {
  test('each unknown field gets its own unknown_field detail', async () => {
    const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/accounts', { name: 'X', colour: 'red', size: 3 });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'validation_failed');
    assert.deepEqual(
      res.body.error.details?.map((d) => [d.field, d.code]).sort(),
      [
        ['colour', 'unknown_field'],
        ['size', 'unknown_field'],
      ],
    );
  });

  test('a value not in the form a field takes is told that form in words, never as a regular expression', async () => {
    const account = await createAccount(ctx.service);
    const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ann', location_id: account.rootLocationId });
    const cases: Array<[string, string, Record<string, unknown>, string, RegExp]> = [
      ['POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge', expires_at: '2027-01-01' }, 'expires_at', /ISO 8601 date-time/],
      ['POST', '/v1/people', { name: 'Bo', email: 'bo@example.com', language: 'klingon' }, 'language', /ISO 639/],
      ['POST', '/admin/v1/security_groups', { location_id: account.rootLocationId, code: 'x', title: 'X', windows: [{ days: ['mon'], start: '25:00', end: '26:00' }] }, 'windows[0].start', /HH:MM/],
    ];
    for (const [method, path, body, field, form] of cases) {
      const res = path.startsWith('/admin')
        ? await ctx.service.admin<ErrorBody>(method, path, body)
        : await ctx.service.request<ErrorBody>(method, path, { token: writer, body });
      assert.equal(res.status, 422, `${path}: ${JSON.stringify(res.body)}`);
      const detail = res.body.error.details?.find((d) => d.field === field);
      assert.ok(detail, `${field} named: ${JSON.stringify(res.body)}`);
      assert.match(detail.message, form, field);
      assert.doesNotMatch(detail.message, /pattern|\^|\$/, `${field}: ${detail.message}`);
    }
  });

  test('field paths name array indexes, e.g. security_groups[0]', async () => {
    const account = await createAccount(ctx.service);
    const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locks', {
      location_id: account.rootLocationId,
      name: 'Door',
      security_groups: ['ok', 42],
    });
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.error.details?.map((d) => d.field), ['security_groups[1]']);
    const unknownGroup = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/locks', {
      location_id: account.rootLocationId,
      name: 'Door',
      security_groups: ['missing'],
    });
    assert.deepEqual(unknownGroup.body.error.details?.map((d) => [d.field, d.code]), [['security_groups[0]', 'unknown_security_group']]);
  });

  test('a missing required field and a wrong type are invalid details; the body is not coerced', async () => {
    const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/accounts', { reseller: 'true' });
    assert.equal(res.status, 422);
    assert.deepEqual(
      res.body.error.details?.map((d) => [d.field, d.code]).sort(),
      [
        ['name', 'invalid'],
        ['reseller', 'invalid'],
      ],
    );
  });

  test('a body that is not JSON answers 400 invalid_request', async () => {
    const res = await ctx.service.request<ErrorBody>('POST', '/admin/v1/accounts', { token: ADMIN_TOKEN, body: '{"name": ' });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'invalid_request');
  });

  test('a text/plain body, JSON inside or not, answers 415 invalid_request, public and operator API alike', async () => {
    for (const [path, auth, body] of [
      ['/admin/v1/accounts', ADMIN_TOKEN, '{"name": "Acme"}'],
      ['/v1/people', writer, 'name=Ada'],
    ] as const) {
      const res = await ctx.service.request<ErrorBody>('POST', path, { token: auth, body, headers: { 'content-type': 'text/plain' } });
      assert.equal(res.status, 415, `${path}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body.error).sort(), ['code', 'message']);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /application\/json/);
    }
  });

  test('a body over 1 MiB answers 413 in the envelope', async () => {
    const res = await ctx.service.request<ErrorBody>('POST', '/admin/v1/accounts', {
      token: ADMIN_TOKEN,
      body: { name: 'x'.repeat(1024 * 1024 + 10) },
    });
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'invalid_request');
  });
});

describe('unexpected failures', () => {
  let broken: TestService;
  let brokenToken: string;

  before(async () => {
    // A database that fails the lock list the way a lost connection would.
    const failing = withFaults(ctx.database.db, ({ name }) =>
      name === 'catalog.locksPageJson' ? new Error('connection terminated: secret internals') : undefined,
    );
    broken = await startService(failing);
    const account = await createAccount(broken);
    brokenToken = (await createApiKey(broken, account.rootLocationId, ['catalog:read'])).token;
  });
  after(async () => broken?.close());

  test('answer 500 server_error with a request id and no internals', async () => {
    const res = await broken.request<ErrorBody>('GET', '/v1/locks', { token: brokenToken });
    assert.equal(res.status, 500);
    assert.equal(res.body.error.code, 'server_error');
    assert.doesNotMatch(res.text, /secret internals|connection terminated|stack/);
    const requestId = res.headers.get('x-request-id');
    assert.ok(requestId);
    assert.ok(res.body.error.message.includes(requestId));
    assert.equal(res.headers.get('cache-control'), 'no-store, private');
  });
});
