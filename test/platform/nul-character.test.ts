// U+0000 in any text a client sends (body, query string, path) is refused in the envelope, never a 500:
// PostgreSQL text cannot hold it. One walk over every declared route's schema, public and operator API.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { declaredRoutes } from '../../src/platform/route-table.ts';
import { ALL_SCOPES, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

interface Schema {
  type?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  format?: string;
  minLength?: number;
  minimum?: number;
  minItems?: number;
  const?: unknown;
  enum?: unknown[];
}

const WITH_NUL = 'a\u0000b';

/** A value the schema accepts, so that without the NUL rule the request would get as far as it can. */
function sample(schema: Schema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.anyOf) return sample(schema.anyOf.find((s) => s.type !== 'null') ?? (schema.anyOf[0] as Schema));
  switch (schema.type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((name) => [name, sample(schema.properties?.[name] ?? {})]));
    case 'array':
      return schema.minItems && schema.items ? [sample(schema.items)] : [];
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'email') return 'someone@example.com';
      if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (schema.format === 'uri') return 'https://93.184.215.14/hook';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return 'x';
  }
}

const takesText = (schema: Schema): boolean =>
  schema.type === 'string' || typeof schema.const === 'string' || (schema.anyOf ?? []).some(takesText);

/** Every place in a body schema where a string goes, as a path of keys and array indexes. */
function stringPlaces(schema: Schema, at: Array<string | number> = []): Array<Array<string | number>> {
  if (takesText(schema)) return [at];
  if (schema.type === 'object') {
    return Object.entries(schema.properties ?? {}).flatMap(([name, property]) => stringPlaces(property, [...at, name]));
  }
  if (schema.type === 'array' && schema.items) return stringPlaces(schema.items, [...at, 0]);
  const branch = (schema.anyOf ?? []).find((s) => s.type === 'object' || s.type === 'array');
  return branch ? stringPlaces(branch, at) : [];
}

function withValueAt(body: unknown, at: Array<string | number>, value: unknown): unknown {
  const [head, ...rest] = at;
  if (head === undefined) return value;
  if (typeof head === 'number') return [withValueAt(Array.isArray(body) ? body[0] : undefined, rest, value)];
  const object = body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  return { ...object, [head]: withValueAt(object[head], rest, value) };
}

const fieldName = (at: Array<string | number>): string =>
  at.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`)).join('');

let token: string;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  token = (await createApiKey(service, account.rootLocationId, ALL_SCOPES)).token;
}, {}, { transport: 'inject' });

test('a NUL character in any string of any route (body, query, path) answers 400/422 in the envelope, never 500', async () => {
  const routes = declaredRoutes(ctx.service.latchkey.app);
  assert.ok(routes.length > 40, 'the walk sees the routes');
  const cases: Array<{ label: string; method: string; path: string; body?: unknown; place: 'body' | 'query' | 'params'; field: string }> = [];

  for (const route of routes) {
    const schema = (route.schema ?? {}) as { body?: Schema; querystring?: Schema; params?: Schema };
    for (const method of route.methods.filter((m) => m !== 'HEAD' && m !== 'OPTIONS')) {
      const params = schema.params?.properties ?? {};
      const pathWith = (nulIn?: string) =>
        route.url.replace(/:([A-Za-z_]+)/g, (_match, name: string) =>
          encodeURIComponent(name === nulIn ? WITH_NUL : String(sample(params[name] ?? { type: 'string' }))),
        );
      const body = schema.body ? sample(schema.body) : undefined;
      for (const name of Object.keys(params)) {
        cases.push({ label: `${method} ${route.url} path ${name}`, method, path: pathWith(name), body, place: 'params', field: name });
      }
      for (const name of Object.keys(schema.querystring?.properties ?? {})) {
        const query = `?${encodeURIComponent(name)}=${encodeURIComponent(WITH_NUL)}`;
        cases.push({ label: `${method} ${route.url} query ${name}`, method, path: pathWith() + query, body, place: 'query', field: name });
      }
      for (const at of schema.body ? stringPlaces(schema.body) : []) {
        const withNul = withValueAt(body, at, WITH_NUL);
        cases.push({ label: `${method} ${route.url} body ${fieldName(at)}`, method, path: pathWith(), body: withNul, place: 'body', field: fieldName(at) });
      }
    }
  }
  // Both APIs and every part are covered, among them the fields that reached PostgreSQL before.
  for (const expected of ['GET /v1/people query email', 'POST /v1/people body name', 'POST /admin/v1/accounts body name', 'GET /activate/:token path token']) {
    assert.ok(cases.some((c) => c.label === expected), expected);
  }
  assert.ok(cases.length > 60, `${cases.length} cases`);

  const failures: string[] = [];
  for (const c of cases) {
    const route = routes.find((r) => c.label.startsWith(`${c.method} ${r.url} `));
    const bearer = route?.access.kind === 'admin' ? ADMIN_TOKEN : route?.access.kind === 'public' ? token : null;
    const res = await ctx.service.request<ErrorBody>(c.method, c.path, { token: bearer, body: c.body });
    const expectedStatus = c.place === 'body' ? 422 : 400;
    const named =
      c.place === 'body'
        ? res.body?.error?.details?.some((d) => d.field === c.field && d.code === 'invalid' && /NUL/.test(d.message))
        : res.body?.error?.code === 'invalid_request' && res.body.error.message.includes(c.field) && /NUL/.test(res.body.error.message);
    if (res.status !== expectedStatus || !named || res.headers.get('cache-control') !== 'no-store, private') {
      failures.push(`${c.label}: ${res.status} ${res.text.slice(0, 160)}`);
    }
  }
  assert.deepEqual(failures, []);
});

test('a NUL character in a body field name is refused too', async () => {
  const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/accounts', { name: 'Acme', [`na${WITH_NUL}me`]: 'x' });
  assert.equal(res.status, 422);
  assert.ok(res.body.error.details?.some((d) => d.code === 'invalid' && /NUL/.test(d.message)));
});
