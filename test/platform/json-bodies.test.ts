// What a JSON body may be before any route sees it: nested at most 32 deep (checked before parsing), UTF-8
// with no unpaired surrogate, and no larger than its route needs (the open routes take a few kilobytes).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_JSON_DEPTH } from '../../src/platform/http.ts';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, freshIp, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let token: string;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  token = (await createApiKey(service, account.rootLocationId, ['people:write', 'people:read'])).token;
}, {}, { transport: 'inject' });

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('nesting depth', () => {
  test(`a body nested deeper than ${MAX_JSON_DEPTH} levels answers 400 invalid_request, on open routes and every other`, async () => {
    for (const [path, options] of [
      ['/console/session', { ip: freshIp() }],
      ['/admin/v1/accounts', { token: ADMIN_TOKEN }],
      ['/v1/people', { token }],
    ] as const) {
      const res = await ctx.service.request<ErrorBody>('POST', path, { ...options, body: `{"token":${nested(MAX_JSON_DEPTH)}}` });
      assert.equal(res.status, 400, path);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.match(res.body.error.message, /nested/);
    }
  });

  test('the depth is read before the body is parsed: a megabyte of open brackets is refused for its depth, not parsed', async () => {
    const res = await ctx.service.request<ErrorBody>('POST', '/console/api/admin/v1/accounts', { ip: freshIp(), body: '['.repeat(1024 * 1024 - 10) });
    assert.equal(res.status, 401, 'the forwarder reads no body without a session');
    const operator = await ctx.service.request<ErrorBody>('POST', '/admin/v1/accounts', { token: ADMIN_TOKEN, body: '['.repeat(1024 * 1024 - 10) });
    assert.equal(operator.status, 400);
    assert.match(operator.body.error.message, /nested/);
  });

  test('within the limit, and brackets inside strings, are ordinary bodies', async () => {
    const res = await ctx.service.request<ErrorBody>('POST', '/admin/v1/accounts', { token: ADMIN_TOKEN, body: `{"name":${nested(MAX_JSON_DEPTH - 1)}}` });
    assert.equal(res.status, 422, 'a wrong type, not a refused body');
    const named = await ctx.service.request<{ name: string }>('POST', '/admin/v1/accounts', {
      token: ADMIN_TOKEN,
      body: `{"name":"${'['.repeat(100)}\\"{{"}`,
    });
    assert.equal(named.status, 201, named.text);
    assert.equal(named.body.name, `${'['.repeat(100)}"{{`);
  });
});

describe('body size of open routes', () => {
  test('POST /console/session and POST /activate/{token} take at most 4 KiB: more answers 413 in the envelope', async () => {
    const big = { token: 'x'.repeat(5 * 1024) };
    for (const path of ['/console/session', `/activate/${'a'.repeat(43)}`]) {
      const res = await ctx.service.request<ErrorBody>('POST', path, { ip: freshIp(), body: big });
      assert.equal(res.status, 413, path);
      assert.equal(res.body.error.code, 'invalid_request');
    }
  });
});

describe('text', () => {
  test('an unpaired surrogate in a string answers 422 validation_failed, detail invalid on its field; a pair is stored', async () => {
    for (const lone of ['\\ud800', '\\udfff', 'a\\ud83dz']) {
      const res = await ctx.service.request<ErrorBody>('POST', '/v1/people', { token, body: `{"name":"Ada ${lone}"}` });
      assert.equal(res.status, 422, lone);
      assert.equal(res.body.error.code, 'validation_failed');
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['name', 'invalid']]);
    }
    const paired = await ctx.service.request<{ name: string }>('POST', '/v1/people', { token, body: '{"name":"Ada \\ud83d\\ude00"}' });
    assert.equal(paired.status, 201, paired.text);
    assert.equal(paired.body.name, 'Ada 😀');
  });

  test('an empty body labelled JSON is no body: a route without one runs, one that needs one answers 422', async () => {
    const send = (method: 'POST' | 'DELETE', url: string) =>
      ctx.service.latchkey.app.inject({ method, url, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: '' });
    const deleted = await send('DELETE', '/v1/people/01a22489-45b8-70ee-b76e-b99152af47a1');
    assert.equal(deleted.statusCode, 404, deleted.body);
    assert.equal((JSON.parse(deleted.body) as ErrorBody).error.code, 'not_found');
    const created = await send('POST', '/v1/people');
    assert.equal(created.statusCode, 422, created.body);
    assert.equal((JSON.parse(created.body) as ErrorBody).error.code, 'validation_failed');
  });

  test('a body that is not UTF-8 answers 400 invalid_request rather than being stored as U+FFFD', async () => {
    const res = await ctx.service.latchkey.app.inject({
      method: 'POST',
      url: '/v1/people',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: Buffer.concat([Buffer.from('{"name":"Ada '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
    });
    assert.equal(res.statusCode, 400);
    assert.equal((JSON.parse(res.body) as ErrorBody).error.code, 'invalid_request');
  });
});
