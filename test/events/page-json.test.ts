// GET /v1/events sends the stored Events as the database writes them out (events/store.ts listEventsJson),
// not through the route's serializer. These tests hold that JSON to the Event schema and to the page the
// spec describes, filtered and paged here from every stored Event, over random entries, filters, cursors and
// page sizes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { TSchema } from '@sinclair/typebox';
import { createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { AccessLogWriter, type AccessEntry, type AccessEvent, type AccessLogLock } from '../../src/modules/events/index.ts';
import { EventSchema } from '../../src/modules/events/schemas.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { decodeCursor, encodeCursor } from '../../src/platform/pagination.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService(undefined, { PAGE_CACHE_ENABLED: 'false' });

/** Asserts that `value` has exactly the properties the schema names, at every level (nothing more is sent). */
function assertExactly(schema: TSchema, value: unknown, path: string): void {
  if (value === null) return;
  const options = (schema.anyOf as TSchema[] | undefined) ?? [schema];
  const objectSchema = options.find((s) => s.type === 'object' || s.$ref !== undefined);
  if (!objectSchema || typeof value !== 'object') return;
  const resolved = objectSchema.$ref ? { properties: { id: {}, name: {} } } : objectSchema; // LocationRef: id and name
  const properties = resolved.properties as Record<string, TSchema>;
  assert.deepEqual(Object.keys(value).sort(), Object.keys(properties).sort(), `${path}: the schema's properties, no more, no fewer`);
  for (const [name, sub] of Object.entries(properties)) assertExactly(sub, (value as Record<string, unknown>)[name], `${path}.${name}`);
}

test('the JSON page the database makes is the page of the objects, with exactly the schema\'s fields, for any filter and page size', async () => {
  const account = await createAccount(ctx.service);
  const dept = await createDepartment(ctx.service, account.rootLocationId, 'Annex');
  const front = await createLock(ctx.service, account.rootLocationId, { name: 'Front "main" door', place: 'Lobby \\ 1' });
  const annex = await createLock(ctx.service, dept, { name: 'Annex – Tür 🚪' });
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['events:read'])).token;
  const locks = await ctx.database.db.query<AccessLogLock>(
    'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = ANY($1::bigint[]) ORDER BY k.id',
    [[front, annex]],
  );
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  const types = ['access.granted', 'access.denied', 'door.closed', 'door.left_open'] as const;
  const entry = fc.record({
    lock: fc.constantFrom(...locks),
    type: fc.constantFrom(...types),
    minutesAgo: fc.integer({ min: 0, max: 600 }),
    person: fc.option(fc.record({ id: fc.uuid(), name: fc.string({ minLength: 1, maxLength: 20 }), email: fc.option(fc.emailAddress(), { nil: null }) }), { nil: null }),
    apiKey: fc.option(fc.record({ id: fc.integer({ min: 1, max: 1000 }), name: fc.string({ minLength: 1, maxLength: 20 }), prefix: fc.constant('lk_abc') }), { nil: null }),
  });
  const entries = fc.sample(fc.array(entry, { minLength: 40, maxLength: 40 }), { numRuns: 1, seed: 25 })[0] ?? [];
  await writer.recordBatch(
    ctx.database.db,
    entries.map((e) => ({
      lock: e.lock,
      entry: {
        gatewayId: null,
        gatewayEventId: null,
        type: e.type,
        occurredAt: new Date(Date.now() - e.minutesAgo * 60_000),
        result: e.type === 'access.denied' ? 'denied' : 'success',
        reason: e.type === 'access.denied' ? 'no_access' : null,
        source: e.apiKey ? 'api' : 'gateway',
        apiKey: e.apiKey,
        person: e.person,
        key: e.person ? { id: 7, name: 'Badge "7"' } : null,
      } satisfies AccessEntry,
    })),
  );
  // The oracle: every stored Event of the account, filtered and paged here as the spec describes GET /events.
  const all = (await ctx.database.db.query<{ data: AccessEvent }>('SELECT coalesce(body::jsonb, data) AS data FROM access_events WHERE account_id = $1 ORDER BY id', [account.id])).map((r) => r.data);
  const expected = (q: Record<string, string | number>): Page<AccessEvent> => {
    const wanted: string[] = q.type === undefined ? [...types] : String(q.type).split(',').filter((t) => (types as readonly string[]).includes(t));
    const after = q.cursor === undefined ? 0 : (decodeCursor(String(q.cursor), 'number', 'events') ?? 0);
    const since = q.since === undefined ? null : Date.parse(String(q.since));
    const limit = q.limit === undefined ? 50 : Number(q.limit);
    const rows = all.filter(
      (e) => e.id > after && wanted.includes(e.type) && (q.lock_id === undefined || e.lock.id === q.lock_id) && (since === null || Date.parse(e.occurred_at) >= since),
    );
    const data = rows.slice(0, limit);
    return { data, next_cursor: rows.length > limit ? encodeCursor((data.at(-1) as AccessEvent).id, 'events') : null };
  };

  await fc.assert(
    fc.asyncProperty(
      fc.record({
        limit: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
        lock_id: fc.option(fc.constantFrom(front, annex), { nil: undefined }),
        type: fc.option(fc.constantFrom('access.granted', 'door.closed,access.denied', 'nothing'), { nil: undefined }),
        since: fc.option(fc.integer({ min: 0, max: 700 }).map((m) => new Date(Date.now() - m * 60_000).toISOString()), { nil: undefined }),
        pages: fc.integer({ min: 1, max: 4 }),
      }),
      async ({ pages, ...query }) => {
        let cursor: string | undefined;
        for (let i = 0; i < pages; i++) {
          const q = Object.fromEntries(Object.entries({ ...query, cursor }).filter(([, v]) => v !== undefined)) as Record<string, string | number>;
          const res = await ctx.service.request<Page<AccessEvent>>('GET', `/v1/events?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`, { token });
          assert.equal(res.status, 200, res.text);
          assert.deepEqual(res.body, expected(q));
          for (const event of res.body.data) assertExactly(EventSchema, event, 'Event');
          if (res.body.next_cursor === null) break;
          cursor = res.body.next_cursor;
        }
      },
    ),
    { numRuns: 40, seed: 25 },
  );
});
