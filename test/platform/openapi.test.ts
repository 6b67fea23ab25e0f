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

for (const [path, file, admin] of [['/v1/openapi.json', 'docs/openapi.json', false], ['/admin/v1/openapi.json', 'docs/operator-openapi.json', true]] as const) {
  test(`the committed ${file} matches the routes (run npm run openapi after changing them)`, async () => {
    const live = (admin ? await ctx.service.admin<OpenApi>('GET', path) : await ctx.service.request<OpenApi>('GET', path)).body;
    const committed = JSON.parse(await readFile(file, 'utf8')) as OpenApi;
    delete live.servers;
    delete committed.servers;
    assert.deepEqual(live, committed);
  });
}

test('GET /admin/v1/openapi.json describes the operator API and needs ADMIN_TOKEN', async () => {
  assert.equal((await ctx.service.request('GET', '/admin/v1/openapi.json')).status, 401);
  const res = await ctx.service.admin<OpenApi>('GET', '/admin/v1/openapi.json');
  assert.equal(res.status, 200);
  const paths = Object.keys(res.body.paths);
  assert.ok(paths.length >= 20 && paths.every((p) => p.startsWith('/admin/v1/')), paths.join(' '));
});

test('every error answer documents the closed catalogue: error codes and detail codes as enums', async () => {
  const document = (await ctx.service.request<OpenApi>('GET', '/v1/openapi.json')).body;
  type Envelope = { content?: Record<string, { schema?: { $ref?: string } }> };
  type ErrorSchema = { properties: { error: { properties: { code: { enum?: string[] }; details: { items: { $ref: string } } } } } };
  const named = (document as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas;
  const schemaAt = <T>(ref: string | undefined) => named[String(ref).replace('#/components/schemas/', '')] as T;
  let seen = 0;
  for (const methods of Object.values(document.paths)) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status.startsWith('2')) continue;
        const error = schemaAt<ErrorSchema>((response as Envelope).content?.['application/json']?.schema?.$ref).properties.error.properties;
        assert.deepEqual(error.code.enum, [...ERROR_CODES], status);
        assert.deepEqual(schemaAt<{ properties: { code: { enum?: string[] } } }>(error.details.items.$ref).properties.code.enum, [...DETAIL_CODES], status);
        seen += 1;
      }
    }
  }
  assert.ok(seen > 100, `error answers checked: ${seen}`);
});
