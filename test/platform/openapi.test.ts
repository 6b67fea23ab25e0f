import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { useTestService } from '../helpers/service.ts';
import { DETAIL_CODES, ERROR_CODES } from '../../src/platform/errors.ts';

interface OpenApi {
  openapi: string;
  servers?: unknown;
  paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown }>>;
}

const ctx = useTestService(undefined, {}, { transport: 'inject' });


test('GET /v1/openapi.json is an OpenAPI 3.1 document of every public route with its responses', async () => {
  const res = await ctx.service.request<OpenApi>('GET', '/v1/openapi.json');
  assert.equal(res.status, 200);
  assert.equal(res.body.openapi, '3.1.0');
  const paths = Object.keys(res.body.paths);
  for (const path of ['/v1/locks', '/v1/locks/{id}', '/v1/security_groups', '/v1/people', '/v1/people/{id}']) assert.ok(paths.includes(path), path);
  assert.ok(!paths.some((p) => p.startsWith('/admin')), 'the operator API stays out of the public document');
  for (const [path, methods] of Object.entries(res.body.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      assert.ok(Object.keys(operation.responses).some((status) => status.startsWith('2')), `${method} ${path} documents its success`);
      for (const status of ['401', '403', '429', '500']) {
        assert.ok(operation.responses[status], `${method} ${path} documents ${status}`);
      }
      assert.ok(operation.security, `${method} ${path} names its scopes`);
    }
  }
});

test('the committed docs/openapi.json matches the routes (run npm run openapi after changing them)', async () => {
  const live = (await ctx.service.request<OpenApi>('GET', '/v1/openapi.json')).body;
  const committed = JSON.parse(await readFile('docs/openapi.json', 'utf8')) as OpenApi;
  delete live.servers;
  delete committed.servers;
  assert.deepEqual(live, committed);
});

test('every error answer documents the closed catalogue: error codes and detail codes as enums', async () => {
  const document = (await ctx.service.request<OpenApi>('GET', '/v1/openapi.json')).body;
  type Envelope = { content?: Record<string, { schema?: { properties?: { error?: { properties?: Record<string, { enum?: string[]; items?: { properties?: { code?: { enum?: string[] } } } }> } } } }> };
  let seen = 0;
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status.startsWith('2')) continue;
        const error = (response as Envelope).content?.['application/json']?.schema?.properties?.error?.properties;
        assert.deepEqual(error?.code?.enum, [...ERROR_CODES], status);
        assert.deepEqual(error?.details?.items?.properties?.code?.enum, [...DETAIL_CODES], status);
        seen += 1;
      }
    }
  }
  assert.ok(seen > 100, `error answers checked: ${seen}`);
});
