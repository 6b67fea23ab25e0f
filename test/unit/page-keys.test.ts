// The keys of the page caches are derived from the route's query schema (platform/page-cache.ts, pageKey):
// a filter added to a list's schema is in the key by construction, and a page is never another scope's.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { LockListQuery } from '../../src/modules/catalog/schemas.ts';
import { EventQuery } from '../../src/modules/events/schemas.ts';
import { KeyListQuery } from '../../src/modules/keys/schemas.ts';
import { PersonListQuery } from '../../src/modules/people/schemas.ts';
import { PageCache, pageKey, type PageScope } from '../../src/platform/page-cache.ts';

/** The querystring schemas of the lists served from a page cache (each route declares the same constant). */
const LISTS: Record<string, TObject> = {
  'GET /v1/events': EventQuery,
  'GET /v1/keys': KeyListQuery,
  'GET /v1/locks': LockListQuery,
  'GET /v1/people': PersonListQuery,
};

const scope: PageScope = { accountId: 1, locationId: 10 };

/** Two different values a validated query could hold for a property; a type not known here fails the test. */
function twoValues(name: string, schema: TSchema): [unknown, unknown] {
  switch (schema.type) {
    case 'integer':
    case 'number':
      return [1, 2];
    case 'boolean':
      return [true, false];
    case 'string':
      return schema.format === 'uuid' ? ['0190a1b2-0000-7000-8000-000000000001', '0190a1b2-0000-7000-8000-000000000002'] : ['a', 'b'];
    default:
      throw new Error(`no sample values for ${name} (${String(schema.type)}): teach twoValues its type`);
  }
}

/** A counting producer: each page read from the "database" is numbered. */
function producer() {
  let reads = 0;
  return { produce: async () => `page ${++reads}`, reads: () => reads };
}

describe('page keys are derived from the query schema', () => {
  test('a filter added to a schema is in the key: two queries differing only in it get their own pages', async () => {
    // Tomorrow's filter of GET /v1/events, added to its schema and nowhere else.
    const Extended = Type.Object({ ...EventQuery.properties, door_state: Type.Optional(Type.String()) });
    const pages = new PageCache({ query: Extended, maxBytes: 1_000_000, ttlMs: 60_000 });
    const { produce, reads } = producer();
    const open = await pages.page(scope, { lock_id: 7, door_state: 'open' }, produce);
    const closed = await pages.page(scope, { lock_id: 7, door_state: 'closed' }, produce);
    assert.equal(String(open), 'page 1');
    assert.equal(String(closed), 'page 2', 'not the page of door_state=open');
    assert.equal(String(await pages.page(scope, { lock_id: 7 }, produce)), 'page 3', 'nor the page without the filter');
    assert.equal(String(await pages.page(scope, { lock_id: 7, door_state: 'open' }, produce)), 'page 1', 'the same query is from memory');
    assert.equal(reads(), 3);
    assert.notEqual(pageKey(Extended, scope, { door_state: 'open' }), pageKey(Extended, scope, { door_state: 'closed' }));
  });

  for (const [route, schema] of Object.entries(LISTS)) {
    test(`${route}: every property of its query schema tells two queries apart`, () => {
      const names = Object.keys(schema.properties);
      assert.ok(names.includes('limit') && names.includes('cursor'), 'the page query is part of it');
      for (const name of names) {
        const [one, other] = twoValues(name, schema.properties[name] as TSchema);
        const keys = new Set([
          pageKey(schema, scope, {}),
          pageKey(schema, scope, { [name]: one }),
          pageKey(schema, scope, { [name]: other }),
        ]);
        assert.equal(keys.size, 3, `${name}: absent, ${String(one)} and ${String(other)} are three pages`);
      }
    });
  }

  test('the key is canonical: the order of the fields, an undefined one and a parameter the schema does not declare change nothing', () => {
    const a = pageKey(KeyListQuery, scope, { state: 'sent', limit: 10, person_id: undefined });
    const b = pageKey(KeyListQuery, scope, { limit: 10, state: 'sent' });
    const c = pageKey(KeyListQuery, scope, { limit: 10, state: 'sent', utm_source: 'mail' } as never);
    assert.equal(a, b);
    assert.equal(a, c);
  });

  test('a value of one field cannot pass for another field, or for several', () => {
    assert.notEqual(pageKey(PersonListQuery, scope, { email: 'a' }), pageKey(PersonListQuery, scope, { phone: 'a' }));
    assert.notEqual(pageKey(KeyListQuery, scope, { state: 'a","b' }), pageKey(KeyListQuery, scope, { state: 'a', security_group: 'b' }));
  });
});

describe("a page is never another scope's", () => {
  test('the same query of another location of the account, or of another account, is read afresh', async () => {
    const pages = new PageCache({ query: EventQuery, maxBytes: 1_000_000, ttlMs: 60_000 });
    const { produce, reads } = producer();
    const query = { lock_id: 3 };
    assert.equal(String(await pages.page({ accountId: 1, locationId: 10 }, query, produce)), 'page 1');
    assert.equal(String(await pages.page({ accountId: 1, locationId: 11 }, query, produce)), 'page 2', 'a department of the account');
    assert.equal(String(await pages.page({ accountId: 2, locationId: 10 }, query, produce)), 'page 3', 'another account (ids never coincide, but the key does not rely on it)');
    assert.equal(String(await pages.page({ accountId: 1, locationId: 10 }, query, produce)), 'page 1');
    assert.equal(reads(), 3);
  });

  test('a change of one account leaves the same query of another account its page', async () => {
    const pages = new PageCache({ query: PersonListQuery, maxBytes: 1_000_000, ttlMs: 60_000 });
    const { produce } = producer();
    await pages.page({ accountId: 1, locationId: 10 }, {}, produce);
    await pages.page({ accountId: 2, locationId: 20 }, {}, produce);
    pages.changed({ accounts: [1] });
    assert.equal(String(await pages.page({ accountId: 2, locationId: 20 }, {}, produce)), 'page 2');
    assert.equal(String(await pages.page({ accountId: 1, locationId: 10 }, {}, produce)), 'page 3');
  });
});
