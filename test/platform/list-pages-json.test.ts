// GET /v1/locks, /v1/people and /v1/keys send pages whose JSON PostgreSQL writes (platform/page-json.ts). The
// oracle is the path it replaced: the same rows read into objects and written by the route's serializer. Every
// page of every listing here must be the same bytes, on both backends, with text that needs escaping (quotes,
// backslashes, control characters, line and paragraph separators, astral characters), nulls and non-nulls in
// every nullable field, timestamps with microseconds (Date keeps milliseconds and truncates), and pages cut
// at every size the walk meets.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Queryable } from '../../src/platform/db/index.ts';
import { serializerCompiler } from '../../src/platform/http.ts';
import { toPage } from '../../src/platform/pagination.ts';
import { LockPage } from '../../src/modules/catalog/schemas.ts';
import { listLocks, locksPageJson, publicLock } from '../../src/modules/catalog/store.ts';
import { KeyPage } from '../../src/modules/keys/schemas.ts';
import { insertKey, keysPageJson, listKeys, toKey } from '../../src/modules/keys/store.ts';
import { PersonPage } from '../../src/modules/people/schemas.ts';
import { listPeople, peoplePageJson, toPerson } from '../../src/modules/people/store.ts';
import { createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService(() => setUp());
const serialize = (schema: unknown) => serializerCompiler({ lazy: false })({ schema }) as (page: unknown) => string;

/** Text a JSON writer must escape, or may get wrong. */
const AWKWARD = ['say "hi"', 'back\\slash', 'tab\tnew\nline\rcr', 'bell\u0007 del\u007f esc\u001b', 'line\u2028para\u2029', 'é ü 中文 😀', '</script>', ''];

let root = 0;
let department = 0;
let db: Queryable;

/** (One root-level hook only: Node 20 does not wait for one before() before starting the next.) */
async function setUp(): Promise<void> {
  db = ctx.database.db;
  const account = await createAccount(ctx.service);
  root = account.rootLocationId;
  department = await createDepartment(ctx.service, root, 'Dept "B"\\');
  await createSecurityGroup(ctx.service, root, 'staff');
  await createSecurityGroup(ctx.service, root, 'night');
  const token = (await createApiKey(ctx.service, root, ['people:write', 'keys:write'])).token;
  const gateways: number[] = [];
  for (const name of ['offline', 'online']) {
    const gateway = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/gateways', { location_id: root, name });
    assert.equal(gateway.status, 201, gateway.text);
    gateways.push(gateway.body.id);
  }
  await db.query('UPDATE gateways SET online = true WHERE id = $1', [gateways[1]]);
  for (let i = 0; i < 23; i++) {
    const location = i % 3 === 0 ? department : root;
    const lock = await createLock(ctx.service, location, {
      name: `Door ${i}`,
      security_groups: i % 4 === 0 ? [] : i % 4 === 1 ? ['staff'] : ['staff', 'night'],
      // Remote locks: online false, true; the others null.
      ...(i % 5 === 0 ? { gateway_id: gateways[0] } : i % 5 === 2 ? { gateway_id: gateways[1] } : {}),
    });
    await db.query('UPDATE locks SET name = $2, serial_number = $3, place = $4 WHERE id = $1', [
      lock, `${AWKWARD[i % AWKWARD.length]} ${i}`, i % 2 === 0 ? null : AWKWARD[(i + 1) % AWKWARD.length], AWKWARD[(i + 2) % AWKWARD.length],
    ]);
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', {
      token,
      body: { name: `Person ${i}`, email: `p${i}@example.com`, ...(i % 2 === 0 ? { phone: `+4420794600${String(i).padStart(2, '0')}` } : {}), location_id: location },
    });
    assert.equal(person.status, 201, person.text);
    await db.query('UPDATE people SET name = $2, company_name = $3, title = $4, language = $5 WHERE id = $1', [
      person.body.id, `${AWKWARD[(i + 3) % AWKWARD.length]} ${i}`, i % 3 === 0 ? null : AWKWARD[i % AWKWARD.length], i % 2 ? 'Dr.' : null, i % 4 ? 'de-AT' : null,
    ]);
    for (let k = 0; k < 2; k++) {
      const id = await insertKey(db, {
        accountId: account.id, personId: person.body.id, invitationId: null, type: k ? 'card' : 'fob', name: `${AWKWARD[(i + k) % AWKWARD.length]} key`,
        groups: k ? ['staff'] : [], startsAt: new Date(Date.UTC(2026, 0, 1 + i)), expiresAt: i % 2 ? null : new Date(Date.UTC(2027, 0, 1 + i)), managed: false, credential: null,
      }, new Date());
      // Microseconds, which Date cannot hold: the page must show the milliseconds truncated, as before.
      if (i % 3 === 1) await db.query(`UPDATE keys SET starts_at = starts_at + interval '0.123999 s', state = 'sent' WHERE id = $1`, [id]);
      if (i === 7 && k === 1) await db.query('UPDATE keys SET revoked_at = now() WHERE id = $1', [id]);
    }
  }
}

/** Walks every page of a listing at `limit`, comparing each page's bytes; returns the number of items seen. */
async function walk<K extends string | number>(
  label: string,
  limit: number,
  json: (after: K | null) => Promise<string>,
  objects: (after: K | null) => Promise<{ page: string; lastKey: K | null; size: number }>,
): Promise<number> {
  let after: K | null = null;
  let seen = 0;
  for (let pages = 0; pages < 100; pages++) {
    const expected = await objects(after);
    assert.equal(await json(after), expected.page, `${label}, limit ${limit}, after ${String(after)}`);
    seen += expected.size;
    if (expected.lastKey === null) return seen;
    after = expected.lastKey;
  }
  throw new Error('the walk did not end');
}

test('lock pages written by PostgreSQL are the bytes the serializer wrote, on every page, at every limit and scope', async () => {
  const write = serialize(LockPage);
  for (const under of [[root], [root, department], [department]]) {
    for (const limit of [1, 2, 7, 50, 200]) {
      const seen = await walk<number>(`locks under ${under.join(',')}`, limit, (after) => locksPageJson(db, under, after, limit), async (after) => {
        const page = toPage((await listLocks(db, under, after, limit + 1)).map(publicLock), limit, (lock) => lock.id, 'locks');
        const last = page.data[page.data.length - 1];
        return { page: write(page), lastKey: page.next_cursor && last ? last.id : null, size: page.data.length };
      });
      assert.equal(seen, under.includes(department) ? 8 : 23);
    }
  }
});

test('person pages written by PostgreSQL are the bytes the serializer wrote, with and without each filter', async () => {
  const write = serialize(PersonPage);
  const filters = [{ email: null, phone: null }, { email: 'P4@EXAMPLE.com', phone: null }, { email: null, phone: '+442079460006' }, { email: 'p5@example.com', phone: '+442079460006' }];
  for (const scope of [root, department]) {
    for (const filter of filters) {
      for (const limit of [1, 3, 50]) {
        await walk<string>(`people in ${scope} ${JSON.stringify(filter)}`, limit, (after) => peoplePageJson(db, scope, filter, after, limit), async (after) => {
          const page = toPage((await listPeople(db, scope, filter, after, limit + 1)).map(toPerson), limit, (person) => person.id, 'people');
          const last = page.data[page.data.length - 1];
          return { page: write(page), lastKey: page.next_cursor && last ? last.id : null, size: page.data.length };
        });
      }
    }
  }
  const all = await peoplePageJson(db, root, { email: null, phone: null }, null, 200);
  assert.equal((JSON.parse(all) as { data: unknown[] }).data.length, 23);
});

test('key pages written by PostgreSQL are the bytes the serializer wrote, with and without each filter', async () => {
  const write = serialize(KeyPage);
  const [someone] = await db.query<{ id: string }>('SELECT person_id AS id FROM keys ORDER BY id LIMIT 1');
  const filters = [
    { personId: null, state: null, securityGroup: null },
    { personId: someone?.id ?? null, state: null, securityGroup: null },
    { personId: null, state: 'sent', securityGroup: null },
    { personId: null, state: null, securityGroup: 'staff' },
    { personId: null, state: 'handed_over', securityGroup: 'staff' },
    { personId: null, state: 'no such state', securityGroup: null },
  ];
  for (const scope of [root, department]) {
    for (const filter of filters) {
      for (const limit of [1, 4, 50]) {
        await walk<number>(`keys in ${scope} ${JSON.stringify(filter)}`, limit, (after) => keysPageJson(db, scope, filter, after, limit), async (after) => {
          const page = toPage((await listKeys(db, scope, filter, after, limit + 1)).map(toKey), limit, (key) => key.id, 'keys');
          const last = page.data[page.data.length - 1];
          return { page: write(page), lastKey: page.next_cursor && last ? last.id : null, size: page.data.length };
        });
      }
    }
  }
  // The revoked key is in neither.
  const all = JSON.parse(await keysPageJson(db, root, filters[0] as (typeof filters)[0], null, 200)) as { data: unknown[] };
  assert.equal(all.data.length, 45);
});
