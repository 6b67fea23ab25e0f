// The pages of door pollers (GET /v1/events?lock_id=…) asked for together are read together (events/reader.ts,
// listDoorPagesJson): one statement per scope, whatever the number of doors. Each page must still be the page its
// caller would read alone: only its scope's rows, its door's, after its cursor, and everything committed before it
// was asked for.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AccessLogReader } from '../../src/modules/events/reader.ts';
import { AccessLogWriter, type AccessEvent, type AccessLogLock } from '../../src/modules/events/index.ts';
import type { EventQuery } from '../../src/modules/events/schemas.ts';
import type { Caller } from '../../src/platform/auth.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { sqlText, type Database, type Sql } from '../../src/platform/db/database.ts';
import { PageCaches } from '../../src/platform/page-cache.ts';
import { encodeCursor } from '../../src/platform/pagination.ts';
import { overriding } from '../helpers/database.ts';
import { createAccount, createDepartment, createLock } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService();

/** A statement that reads pages of the access log (listEventsJson's or listDoorPagesJson's). */
const readsPages = (sql: Sql) => /FROM access_events e\b/.test(sqlText(sql));

/** The database, with its page reads counted and, while `hold` is set, the next one's answer held (once read) until it resolves. */
function watched(db: Database) {
  const seen = { reads: 0, hold: null as Promise<void> | null, held: () => undefined as void };
  const database = overriding(db, {
    query: async (sql: Sql, params?: readonly unknown[]) => {
      const rows = await db.query(sql, params);
      if (readsPages(sql)) {
        seen.reads++;
        const hold = seen.hold;
        if (hold) {
          seen.hold = null;
          seen.held();
          await hold;
        }
      }
      return rows;
    },
  } as Partial<Database>);
  return { database, seen };
}

/** Two accounts: the first with doors at its root and in a department, the second with doors of its own. */
async function site() {
  const a = await createAccount(ctx.service);
  const dept = await createDepartment(ctx.service, a.rootLocationId, 'Annex');
  const b = await createAccount(ctx.service);
  const lockIds = {
    root: [await createLock(ctx.service, a.rootLocationId, { name: 'Front' }), await createLock(ctx.service, a.rootLocationId, { name: 'Back' })],
    dept: [await createLock(ctx.service, dept, { name: 'Annex 1' }), await createLock(ctx.service, dept, { name: 'Annex 2' })],
    other: [await createLock(ctx.service, b.rootLocationId, { name: 'Elsewhere' })],
  };
  const all = [...lockIds.root, ...lockIds.dept, ...lockIds.other];
  const locks = await ctx.database.db.query<AccessLogLock>(
    'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = ANY($1::bigint[]) ORDER BY k.id',
    [all],
  );
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  let n = 0;
  const record = (lock: AccessLogLock, type: 'access.granted' | 'door.closed' = 'access.granted') =>
    writer.recordBatch(ctx.database.db, [
      {
        lock,
        entry: { gatewayId: null, gatewayEventId: null, type, occurredAt: new Date(Date.now() - 60_000 + n++), result: 'success', reason: null, source: 'gateway', apiKey: null, person: null, key: null },
      },
    ]);
  // Each door's events interleaved with the others', and a door.closed now and then.
  for (let round = 0; round < 5; round++) for (const lock of locks) await record(lock, round === 2 ? 'door.closed' : 'access.granted');
  const callers = {
    root: { accountId: a.id, locationId: a.rootLocationId } as Caller,
    dept: { accountId: a.id, locationId: dept } as Caller,
    other: { accountId: b.id, locationId: b.rootLocationId } as Caller,
  };
  /** What each caller may see of each door: the first account's root sees its doors, the department its own, the second account its own. */
  const visible = { root: [...lockIds.root, ...lockIds.dept], dept: lockIds.dept, other: lockIds.other };
  return { lockIds, all, locks, record, callers, visible };
}

/** The oracle: the page of `lockId` after `afterId` as the spec describes it, from every stored Event of the door. */
async function expectedPage(lockId: number, seen: boolean, afterId: number, limit: number, types: readonly string[]): Promise<Page<AccessEvent>> {
  if (!seen) return { data: [], next_cursor: null };
  const rows = (await ctx.database.db.query<{ data: AccessEvent }>('SELECT coalesce(body::jsonb, data) AS data FROM access_events WHERE lock_id = $1 AND id > $2 ORDER BY id', [lockId, afterId]))
    .map((r) => r.data)
    .filter((e) => types.includes(e.type));
  const data = rows.slice(0, limit);
  return { data, next_cursor: rows.length > limit ? encodeCursor((data.at(-1) as AccessEvent).id, 'events') : null };
}

describe('pages of door pollers', () => {
  test('asked for at once are read in one statement per scope, each the page its caller reads alone: its scope, its door, its cursor', async () => {
    const s = await site();
    const { database, seen } = watched(ctx.database.db);
    const reader = new AccessLogReader(database, new PageCaches(false));
    const [firstId] = (await ctx.database.db.query<{ id: number }>('SELECT min(id)::int AS id FROM access_events WHERE lock_id = ANY($1::bigint[])', [s.all])).map((r) => r.id);
    const asked: Array<{ who: keyof typeof s.callers; query: EventQuery }> = [];
    for (const who of ['root', 'dept', 'other'] as const) {
      for (const lock of s.all) {
        asked.push({ who, query: { lock_id: lock, limit: 2 } });
        asked.push({ who, query: { lock_id: lock, limit: 3, cursor: encodeCursor((firstId as number) + 7, 'events') } });
        asked.push({ who, query: { lock_id: lock, type: 'door.closed' } });
      }
    }
    const pages = await Promise.all(asked.map(({ who, query }) => reader.listJson(s.callers[who], query)));
    assert.equal(seen.reads, 3 + 3, 'one statement per scope and list of types, for 45 pages of 5 doors');
    for (const [i, { who, query }] of asked.entries()) {
      const types = query.type === undefined ? ['access.granted', 'access.denied', 'door.closed', 'door.left_open'] : [query.type];
      const afterId = query.cursor === undefined ? 0 : (firstId as number) + 7;
      const expected = await expectedPage(query.lock_id as number, s.visible[who].includes(query.lock_id as number), afterId, query.limit ?? 50, types);
      assert.deepEqual(JSON.parse(String(pages[i])), expected, `${who} asking ${JSON.stringify(query)}`);
    }
    // Pages read one at a time are the same pages.
    for (const [i, { who, query }] of asked.entries()) assert.equal(String(await reader.listJson(s.callers[who], query)), String(pages[i]));
  });

  test('a page asked for while a read of doors runs is read after it, with everything committed before it was asked', async () => {
    const s = await site();
    const { database, seen } = watched(ctx.database.db);
    const reader = new AccessLogReader(database, new PageCaches(false));
    const [front, back] = s.lockIds.root as [number, number];
    const lockRow = (id: number) => s.locks.find((l) => l.id === id) as AccessLogLock;
    let release = () => undefined as void;
    seen.hold = new Promise<void>((resolve) => (release = resolve));
    const held = new Promise<void>((resolve) => (seen.held = resolve));
    const running = reader.listJson(s.callers.root, { lock_id: front });
    await held; // the read of the front door is running
    await s.record(lockRow(back));
    await s.record(lockRow(front));
    const meanwhile = [reader.listJson(s.callers.root, { lock_id: back }), reader.listJson(s.callers.root, { lock_id: front })];
    release();
    const [before, backPage, frontPage] = (await Promise.all([running, ...meanwhile])).map((page) => JSON.parse(String(page)) as Page<AccessEvent>);
    const ids = async (lock: number) => (await ctx.database.db.query<{ id: number }>('SELECT id::int AS id FROM access_events WHERE lock_id = $1 ORDER BY id', [lock])).map((r) => r.id);
    assert.deepEqual(before?.data.map((e) => e.id), (await ids(front)).slice(0, -1), 'the running read began before the last front-door event');
    assert.deepEqual(backPage?.data.map((e) => e.id), await ids(back), 'the back door: read after its request, with its newest event');
    assert.deepEqual(frontPage?.data.map((e) => e.id), await ids(front), 'the front door again: not the running read, which began before');
    assert.equal(seen.reads, 2, 'the two pages asked for meanwhile were read together');
  });
});
