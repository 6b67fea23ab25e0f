// Properties instead of examples: requests drawn for every operation of /v1/openapi.json (valid, almost valid
// and hostile path ids, queries, bodies and headers) never answer a 5xx, always answer in the spec's envelope
// with Cache-Control, and only with statuses the document lists for that operation. A second property draws
// location trees and API keys and checks that no read ever shows a row outside the key's subtree.
// Fixed budget, printed seed: `PROPERTY_SEED=<seed> npm test -- test/platform/properties.test.ts` replays a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ALL_SCOPES, createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { freshIp, useTestService, type HttpResult, type TestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const seed = Number(process.env.PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const REQUEST_RUNS = Number(process.env.PROPERTY_RUNS ?? 600);
const TENANCY_RUNS = Number(process.env.PROPERTY_TENANCY_RUNS ?? 12);
console.log(`# property seed ${seed} (replay with PROPERTY_SEED=${seed})`);

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
}
interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  schema: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, unknown>;
}
interface OpenApi {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, unknown> };
}

/** The document's paths with every `$ref` to a named schema replaced by the schema, so draws see every field. */
function inlineRefs<T>(value: T, schemas: Record<string, unknown>): T {
  if (Array.isArray(value)) return value.map((item) => inlineRefs(item, schemas)) as T;
  if (!value || typeof value !== 'object') return value;
  const { $ref } = value as { $ref?: string };
  if (typeof $ref === 'string' && $ref.startsWith('#/components/schemas/')) return inlineRefs(schemas[$ref.slice(21)], schemas) as T;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, inlineRefs(item, schemas)])) as T;
}

interface Fixtures {
  token: string;
  ids: Record<string, string[]>;
}

const fixtures: Fixtures = { token: '', ids: {} };

const ctx = useTestService(
  async (service) => {
    const account = await createAccount(service);
    const dept = await createDepartment(service, account.rootLocationId);
    await createSecurityGroup(service, account.rootLocationId, 'staff');
    const gateway = await service.admin<{ id: number }>('POST', '/admin/v1/gateways', { location_id: account.rootLocationId, name: 'Bridge' });
    const remote = await createLock(service, account.rootLocationId, { gateway_id: gateway.body.id, security_groups: ['staff'] });
    const plain = await createLock(service, dept);
    const key = await createApiKey(service, account.rootLocationId, ALL_SCOPES);
    fixtures.token = key.token;
    const person = await service.request<{ id: string }>('POST', '/v1/people', {
      token: key.token,
      body: { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+4915112345678' },
    });
    const issued = await service.request<{ invitation_id: number }>('POST', '/v1/keys', {
      token: key.token,
      body: { person_id: person.body.id, security_groups: ['staff'], channel: 'email' },
    });
    const handed = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card' });
    const hook = await service.request<{ id: string }>('POST', '/v1/webhooks', {
      token: key.token,
      body: { url: 'https://localhost:9/hook', events: ['*'] },
    });
    fixtures.ids = {
      lock: [String(remote), String(plain)],
      person: [person.body.id],
      key: handed.status === 201 ? [String(handed.body.id)] : [],
      invitation: [String(issued.body.invitation_id)],
      webhook: hook.status === 201 ? [hook.body.id] : [],
    };
  },
  // Rate limits are not under test here (429 is still a listed answer); the budget would end the run early.
  { API_RATE_LIMIT_PER_MINUTE: '1000000', WEBHOOK_ALLOW_HOSTS: 'localhost' },
  { transport: 'inject' },
);

// ---- arbitraries ----------------------------------------------------------------------------------------

/** Text that breaks naive handling: NUL and other controls, lone surrogates, huge numbers, SQL and path tricks. */
const hostileText = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '1e400',
    'Infinity',
    '-Infinity',
    'NaN',
    '0x7',
    '7.0',
    '7e0',
    '+7',
    ' 7',
    '-1',
    '0',
    '99999999999999999999999',
    "' OR 1=1 --",
    '../../etc/passwd',
    '%',
    '%ff',
    '{}',
    '[]',
    'null',
    '2026-13-45T99:99:99Z',
    'x'.repeat(5000),
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** Percent-encodes any text, lone surrogates included (encodeURIComponent throws on those; they travel as U+FFFD). */
function percentEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0').toUpperCase()}`)).join('');
}

function valueFor(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema) return fc.jsonValue({ maxDepth: 2 });
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => valueFor(s, depth)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1e6, -1e9), max: Math.min(schema.maximum ?? 1e6, 1e9) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'string':
      if (schema.format === 'date-time') return fc.date({ min: new Date('2020-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'email') return fc.emailAddress();
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) });
    case 'array':
      return fc.array(valueFor(schema.items, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
    case 'object': {
      const properties = Object.entries(schema.properties ?? {});
      if (depth > 3 || properties.length === 0) return fc.constant({});
      return fc.record(Object.fromEntries(properties.map(([name, s]) => [name, valueFor(s, depth + 1)])), {
        requiredKeys: schema.required ?? [],
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** Mostly well-formed, sometimes hostile: a value of the schema, a value of another type, hostile text. */
function fieldValue(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 5, arbitrary: valueFor(schema) },
    { weight: 2, arbitrary: hostileText },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  );
}

function bodyFor(schema: JsonSchema): fc.Arbitrary<unknown> {
  const wellFormedish = fc.record(
    Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, s]) => [name, fieldValue(s)])),
    { requiredKeys: [] },
  );
  return fc.oneof(
    { weight: 6, arbitrary: wellFormedish },
    { weight: 1, arbitrary: fc.tuple(wellFormedish, fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })).map(([a, b]) => ({ ...b, ...(a as object) })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
    { weight: 1, arbitrary: fc.constantFrom('{"name": "unterminated', '', 'null', '[', '\u0000', '{"name": "a\\u0000b"}') },
  );
}

function pathValue(name: string, path: string): fc.Arbitrary<string> {
  const kind = name === 'id' ? (/^\/v1\/(\w+)/.exec(path)?.[1] ?? '') : name.replace(/_id$/, '');
  const known = fixtures.ids[kind.replace(/s$/, '').replace(/^(people)$/, 'person')] ?? [];
  return fc.oneof(
    { weight: 4, arbitrary: known.length > 0 ? fc.constantFrom(...known) : fc.constant('1') },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 ** 31 }).map(String) },
    { weight: 1, arbitrary: fc.uuid() },
    // An empty segment would name another route (`/v1/keys/`), not this operation with a bad id.
    { weight: 2, arbitrary: hostileText.filter((t) => t !== '').map((t) => (t === '%' || t === '%ff' ? t : percentEncode(t))) },
  );
}

interface DrawnRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | undefined;
}

function requestFor(path: string, method: string, operation: Operation): fc.Arbitrary<DrawnRequest> {
  const params = operation.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const bodySchema = operation.requestBody?.content['application/json']?.schema;
  return fc
    .record({
      pathValues: fc.tuple(...pathParams.map((p) => pathValue(p.name, path))),
      query: fc.subarray(queryParams).chain((chosen) => fc.tuple(...chosen.map((p) => fieldValue(p.schema).map((v) => [p.name, v] as const)))),
      body: bodySchema ? fc.option(bodyFor(bodySchema), { freq: 8 }) : fc.constant(null),
      auth: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'none', 'garbage', 'basic'),
      contentType: fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'),
      idempotencyKey: fc.option(fc.oneof(fc.uuid(), hostileText.map(percentEncode)), { freq: 3 }),
    })
    .map(({ pathValues, query, body, auth, contentType, idempotencyKey }) => {
      let concrete = path;
      pathParams.forEach((p, i) => (concrete = concrete.replace(`{${p.name}}`, pathValues[i] ?? '')));
      const search = new URLSearchParams();
      for (const [name, value] of query) search.append(name, typeof value === 'string' ? value : JSON.stringify(value));
      const qs = search.toString();
      const headers: Record<string, string> = {};
      if (auth === 'valid') headers.authorization = `Bearer ${fixtures.token}`;
      if (auth === 'garbage') headers.authorization = 'Bearer lk_not_a_real_token';
      if (auth === 'basic') headers.authorization = 'Basic YWRtaW46YWRtaW4=';
      headers['x-forwarded-for'] = freshIp();
      if (idempotencyKey !== null) headers['idempotency-key'] = idempotencyKey;
      let payload: string | undefined;
      if (body !== null) {
        headers['content-type'] = contentType;
        payload = typeof body === 'string' ? body : JSON.stringify(body);
      }
      return { method: method.toUpperCase(), path: qs ? `${concrete}?${qs}` : concrete, headers, body: payload };
    });
}

async function send(service: TestService, request: DrawnRequest): Promise<HttpResult<unknown>> {
  return service.request<unknown>(request.method, request.path, { headers: request.headers, ...(request.body === undefined ? {} : { body: request.body }) });
}

function assertEnvelope(res: HttpResult<unknown>, label: string): void {
  const error = (res.body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  assert.ok(error && typeof error.code === 'string' && typeof error.message === 'string', `${label}: ${res.status} is not in the envelope: ${res.text.slice(0, 300)}`);
  if (error.details !== undefined) {
    assert.ok(Array.isArray(error.details), `${label}: details is not an array`);
    for (const detail of error.details as Array<Record<string, unknown>>) {
      assert.ok(['field', 'code', 'message'].every((k) => typeof detail[k] === 'string'), `${label}: malformed detail ${JSON.stringify(detail)}`);
    }
  }
}

test('any request drawn for any operation of the public document: never a 5xx, always the envelope and Cache-Control, only documented statuses', async () => {
  const { service } = ctx;
  const document = (await service.request<OpenApi>('GET', '/v1/openapi.json')).body;
  // A stream (text/event-stream: GET /v1/webhooks/listen) never ends, so a drawn request that opens one would wait
  // forever for its body: streams are tested where they are read as streams (test/webhooks/listen.test.ts).
  const streams = (operation: Operation) =>
    Object.values(operation.responses).some((response) => Object.keys((response as { content?: object }).content ?? {}).includes('text/event-stream'));
  const operations = Object.entries(inlineRefs(document.paths, document.components?.schemas ?? {})).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([, operation]) => !streams(operation))
      .map(([method, operation]) => ({ path, method, operation })),
  );
  assert.ok(operations.length >= 27, 'every operation but the stream is drawn');
  const drawn = fc.oneof(...operations.map(({ path, method, operation }) => requestFor(path, method, operation).map((request) => ({ request, statuses: Object.keys(operation.responses), label: `${method.toUpperCase()} ${path}` }))));
  await fc.assert(
    fc.asyncProperty(drawn, async ({ request, statuses, label }) => {
      const res = await send(service, request);
      const where = `${label} as ${request.method} ${request.path.slice(0, 200)}`;
      assert.ok(res.status < 500, `${where}: answered ${res.status} ${res.text.slice(0, 300)}`);
      assert.equal(res.headers.get('cache-control'), 'no-store, private', `${where}: Cache-Control`);
      assert.ok(statuses.includes(String(res.status)), `${where}: ${res.status} is not listed in the document (${statuses.join(', ')})`);
      if (res.status >= 400) assertEnvelope(res, where);
      else if (res.status !== 204) assert.equal(typeof res.body, 'object', `${where}: a success without a JSON body`);
    }),
    { seed, numRuns: REQUEST_RUNS, endOnFailure: true, includeErrorInReport: true },
  );
});

// ---- tenancy --------------------------------------------------------------------------------------------

/** A location tree as parent indexes: node i > 0 hangs under parents[i - 1] (< i); node 0 is the root. */
const treeShape = fc.integer({ min: 1, max: 6 }).chain((size) => fc.tuple(...Array.from({ length: size }, (_, i) => fc.integer({ min: 0, max: i }))));

interface Tenancy {
  parents: number[];
  lockAt: number[];
  personAt: number[];
  groupAt: number[];
  keyAt: number[];
}

const tenancy: fc.Arbitrary<Tenancy> = treeShape.chain((parents) => {
  const node = fc.integer({ min: 0, max: parents.length });
  return fc.record({
    parents: fc.constant(parents),
    lockAt: fc.array(node, { minLength: 1, maxLength: 5 }),
    personAt: fc.array(node, { minLength: 1, maxLength: 5 }),
    groupAt: fc.array(node, { maxLength: 3 }),
    keyAt: fc.array(node, { minLength: 1, maxLength: 3 }),
  });
});

async function listAll(service: TestService, token: string, path: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  do {
    const res: HttpResult<Page<Record<string, unknown>>> = await service.request('GET', `${path}${path.includes('?') ? '&' : '?'}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    rows.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return rows;
}

test('for random location trees and keys, no list or single read returns a row outside the key\'s subtree (security groups: or above it)', async () => {
  const { service } = ctx;
  let round = 0;
  await fc.assert(
    fc.asyncProperty(tenancy, async (t) => {
      round++;
      const account = await createAccount(service, { name: `Tenancy ${round}` });
      const locations = [account.rootLocationId];
      for (const parent of t.parents) locations.push(await createDepartment(service, locations[parent] ?? account.rootLocationId, `Dept ${locations.length}`));
      const parentOf = (i: number) => (i === 0 ? -1 : (t.parents[i - 1] ?? 0));
      const within = (node: number, top: number) => {
        for (let n = node; n !== -1; n = parentOf(n)) if (n === top) return true;
        return false;
      };
      const at = (i: number) => locations[i] ?? account.rootLocationId;

      const lockNode = new Map<number, number>();
      for (const n of t.lockAt) lockNode.set(await createLock(service, at(n)), n);
      const groupNode = new Map<string, number>();
      for (const [i, n] of t.groupAt.entries()) groupNode.set((await createSecurityGroup(service, at(n), `g${round}x${i}`)).code, n);
      const personNode = new Map<string, number>();
      const keyNode = new Map<number, number>();
      for (const [i, n] of t.personAt.entries()) {
        const res = await service.admin<{ id: string }>('POST', '/admin/v1/people', { location_id: at(n), name: `Person ${round} ${i}` });
        assert.equal(res.status, 201, res.text);
        personNode.set(res.body.id, n);
        const key = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: res.body.id, type: 'card', name: 'Card' });
        assert.equal(key.status, 201, key.text);
        keyNode.set(key.body.id, n);
      }

      for (const top of t.keyAt) {
        const { token } = await createApiKey(service, at(top), ALL_SCOPES);
        const locks = await listAll(service, token, '/v1/locks');
        assert.deepEqual(
          locks.map((l) => l.id).sort(),
          [...lockNode].filter(([, n]) => within(n, top)).map(([id]) => id).sort(),
          'GET /locks shows exactly the locks of the subtree',
        );
        const people = await listAll(service, token, '/v1/people');
        assert.deepEqual(people.map((p) => p.id).sort(), [...personNode].filter(([, n]) => within(n, top)).map(([id]) => id).sort(), 'GET /people');
        const keys = await listAll(service, token, '/v1/keys');
        assert.deepEqual(keys.map((k) => k.id).sort(), [...keyNode].filter(([, n]) => within(n, top)).map(([id]) => id).sort(), 'GET /keys');
        // The groups the key may give: those of its subtree and those above it (never a sibling branch's).
        const groups = await listAll(service, token, '/v1/security_groups');
        assert.deepEqual(
          groups.map((g) => String(g.code)).filter((code) => groupNode.has(code)).sort(),
          [...groupNode].filter(([, n]) => within(n, top) || within(top, n)).map(([code]) => code).sort(),
          'GET /security_groups shows exactly the groups of the subtree and above it',
        );
        for (const [id, n] of lockNode) assert.equal((await service.request('GET', `/v1/locks/${id}`, { token })).status, within(n, top) ? 200 : 404, `GET /locks/${id}`);
        for (const [id, n] of personNode) assert.equal((await service.request('GET', `/v1/people/${id}`, { token })).status, within(n, top) ? 200 : 404, `GET /people/${id}`);
        for (const [id, n] of keyNode) assert.equal((await service.request('GET', `/v1/keys/${id}`, { token })).status, within(n, top) ? 200 : 404, `GET /keys/${id}`);
      }
    }),
    { seed, numRuns: TENANCY_RUNS, endOnFailure: true, includeErrorInReport: true },
  );
});
