// GET /v1/events, /v1/locks, /v1/people and /v1/keys answer from per-instance page caches
// (platform/page-cache.ts). These tests attack the caches: a key of a narrower scope asking the same query,
// writes by another instance (only their NOTIFY tells this one), rows removed, and a client reading right
// after its own write.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { LockListQuery } from '../../src/modules/catalog/schemas.ts';
import { AccessLogWriter, type AccessEvent, type AccessLogLock } from '../../src/modules/events/index.ts';
import { EventQuery } from '../../src/modules/events/schemas.ts';
import { KeyListQuery } from '../../src/modules/keys/schemas.ts';
import { PersonListQuery } from '../../src/modules/people/schemas.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService();

async function site() {
  const account = await createAccount(ctx.service);
  const dept = await createDepartment(ctx.service, account.rootLocationId, 'Annex');
  const front = await createLock(ctx.service, account.rootLocationId, { name: 'Front' });
  const annex = await createLock(ctx.service, dept, { name: 'Annex door' });
  const scopes = ['events:read', 'catalog:read', 'locks:control', 'people:read', 'people:write', 'keys:read', 'keys:write'];
  const token = (await createApiKey(ctx.service, account.rootLocationId, scopes, { lock_allowlist: [front] })).token;
  const deptToken = (await createApiKey(ctx.service, dept, scopes)).token;
  return { account, dept, front, annex, token, deptToken };
}

/** Another instance's writer: this service hears of its writes only through the access log's NOTIFY. */
async function writeElsewhere(lockId: number, type = 'access.granted'): Promise<AccessEvent> {
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  const [lock] = await ctx.database.db.query<AccessLogLock>(
    'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1',
    [lockId],
  );
  const entry = { gatewayId: null, gatewayEventId: null, type, occurredAt: new Date(), result: 'success' as const, reason: null, source: 'api', apiKey: null, person: null, key: null };
  const [event] = await writer.recordBatch(ctx.database.db, [{ lock: lock as AccessLogLock, entry }]);
  assert.ok(event);
  return event;
}

async function eventIds(token: string, query = ''): Promise<number[]> {
  const res = await ctx.service.request<Page<AccessEvent>>('GET', `/v1/events${query}`, { token });
  assert.equal(res.status, 200, res.text);
  assert.match(String(res.headers.get('content-type')), /^application\/json; charset=utf-8/);
  return res.body.data.map((e) => e.id);
}

/** Polls until `check` passes, for at most `ms`: well under the pages' 5 s TTL, so only a notification can make it pass. */
async function within<T>(ms: number, read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + ms;
  let value = await read();
  while (!check(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    value = await read();
  }
  return value;
}

describe('GET /v1/events from memory', () => {
  test('a narrower key asking the same query gets its own scope, not the page cached for the wider one', async () => {
    const s = await site();
    const atFront = await writeElsewhere(s.front);
    const atAnnex = await writeElsewhere(s.annex);
    assert.deepEqual(await eventIds(s.token), [atFront.id, atAnnex.id]);
    assert.deepEqual(await eventIds(s.deptToken), [atAnnex.id], 'the department key sees its own location only');
    assert.deepEqual(await eventIds(s.token, `?lock_id=${s.annex}`), [atAnnex.id]);
    assert.deepEqual(await eventIds(s.deptToken, `?lock_id=${s.front}`), [], 'a filter naming a lock outside the scope');
  });

  test("another instance's write and a removal are seen within a second (the access log's NOTIFY), not after the TTL", async () => {
    const s = await site();
    const first = await writeElsewhere(s.front);
    assert.deepEqual(await eventIds(s.token), [first.id]);
    assert.deepEqual(await eventIds(s.token), [first.id], 'asked again (now from memory)');
    const second = await writeElsewhere(s.front, 'door.closed');
    assert.deepEqual(await within(1_000, () => eventIds(s.token), (ids) => ids.length === 2), [first.id, second.id]);
    await ctx.database.db.query('DELETE FROM access_events WHERE id = $1', [first.id]);
    assert.deepEqual(await within(1_000, () => eventIds(s.token), (ids) => ids.length === 1), [second.id], 'a removed entry leaves the page');
  });

  test('a full page stays in memory while events arrive after it; an event committed late with an id on it is there within a second', async () => {
    const s = await site();
    const first = await writeElsewhere(s.front);
    // An id drawn by a writer that has not committed yet (another instance in the middle of a batch):
    // transactions commit out of id order, so its row appears after rows with higher ids.
    const [{ id: lateId } = { id: 0 }] = await ctx.database.db.query<{ id: number }>(`SELECT nextval(pg_get_serial_sequence('access_events', 'id'))::int AS id`);
    const a = await writeElsewhere(s.front);
    await writeElsewhere(s.front);
    assert.deepEqual(await eventIds(s.token, '?limit=2'), [first.id, a.id], 'a full page, without the uncommitted event');
    // A change no notification tells of (entries are never updated): it shows only when the page is read again.
    await ctx.database.db.query(`UPDATE access_events SET body = (body::jsonb || '{"reason": "probe"}')::text WHERE id = $1`, [first.id]);
    await writeElsewhere(s.front); // after the page's last id
    await new Promise((resolve) => setTimeout(resolve, 300)); // its notification has arrived
    const kept = await ctx.service.request<Page<AccessEvent>>('GET', '/v1/events?limit=2', { token: s.token });
    assert.equal(kept.body.data[0]?.reason, null, 'the full page was kept in memory through the append after it');
    // The late writer commits its row, with the id it drew (through the same trigger as every insert).
    await ctx.database.db.query(
      `INSERT INTO access_events (id, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, body)
       SELECT $1, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, (body::jsonb || jsonb_build_object('id', $1::bigint))::text
         FROM access_events WHERE id = $2`,
      [lateId, a.id],
    );
    assert.ok(lateId > first.id && lateId < a.id);
    assert.deepEqual(await within(1_000, () => eventIds(s.token, '?limit=2'), (ids) => ids.includes(lateId)), [first.id, lateId], 'the late event joins the page it belongs on');
  });

  test("another account's writes do not empty this account's pages, and never show in them", async () => {
    const s = await site();
    const other = await site();
    const mine = await writeElsewhere(s.front);
    assert.deepEqual(await eventIds(s.token), [mine.id]);
    await writeElsewhere(other.front);
    assert.deepEqual(await eventIds(s.token), [mine.id]);
  });

  test('a refused unlock is in the very next read of the log, by the client that was refused', async () => {
    const s = await site();
    assert.deepEqual(await eventIds(s.token), [], 'an empty page, kept in memory');
    const refused = await ctx.service.request('POST', `/v1/locks/${s.annex}/unlock`, { token: s.token });
    assert.equal(refused.status, 403, refused.text);
    const after = await ctx.service.request<Page<AccessEvent>>('GET', '/v1/events', { token: s.token });
    assert.deepEqual(after.body.data.map((e) => [e.type, e.reason, e.lock.id]), [['access.denied', 'no_access', s.annex]]);
  });
});

describe('GET /v1/locks from memory', () => {
  test('a narrower key gets its own scope; a lock created or moved is in the very next page', async () => {
    const s = await site();
    const list = async (token: string, query = '') => {
      const res = await ctx.service.request<Page<{ id: number; name: string }>>('GET', `/v1/locks${query}`, { token });
      assert.equal(res.status, 200, res.text);
      return res.body.data.map((l) => l.id);
    };
    assert.deepEqual(await list(s.token), [s.front, s.annex]);
    assert.deepEqual(await list(s.deptToken), [s.annex]);
    assert.deepEqual(await list(s.token, `?location_id=${s.dept}`), [s.annex]);
    const added = await createLock(ctx.service, s.dept, { name: 'Added' });
    assert.deepEqual(await list(s.deptToken), [s.annex, added], 'created through the operator API, seen at once');
    const moved = await ctx.service.admin('PATCH', `/admin/v1/locks/${added}`, { name: 'Renamed' });
    assert.equal(moved.status, 200, moved.text);
    const page = await ctx.service.request<Page<{ id: number; name: string }>>('GET', '/v1/locks', { token: s.deptToken });
    assert.deepEqual(page.body.data.map((l) => l.name), ['Annex door', 'Renamed']);
  });
});

async function ids<T extends { id: number | string }>(path: string, token: string): Promise<Array<T['id']>> {
  const res = await ctx.service.request<Page<T>>('GET', path, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data.map((row) => row.id);
}

describe('GET /v1/people and GET /v1/keys from memory', () => {
  test('a narrower key gets its own scope; a person created by the client is in its very next page', async () => {
    const s = await site();
    const atRoot = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Root Person', location_id: s.account.rootLocationId });
    const atDept = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Dept Person', location_id: s.dept });
    assert.deepEqual(await ids('/v1/people', s.token), [atRoot.body.id, atDept.body.id]);
    assert.deepEqual(await ids('/v1/people', s.deptToken), [atDept.body.id]);
    const created = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: s.deptToken, body: { name: 'New Person', email: 'new@example.com' } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(await ids('/v1/people', s.deptToken), [atDept.body.id, created.body.id], 'read right after the write');
    assert.deepEqual(await ids('/v1/people', s.token), [atRoot.body.id, atDept.body.id, created.body.id]);
  });

  test("another instance's changes to people and keys are seen within a second (their NOTIFY)", async () => {
    const s = await site();
    const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', location_id: s.dept });
    const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge' });
    const names = async () => (await ctx.service.request<Page<{ name: string }>>('GET', '/v1/people', { token: s.deptToken })).body.data.map((p) => p.name);
    const keyNames = async () => (await ctx.service.request<Page<{ name: string }>>('GET', '/v1/keys', { token: s.deptToken })).body.data.map((k) => k.name);
    assert.deepEqual(await names(), ['Ada']);
    assert.deepEqual(await keyNames(), ['Badge']);
    await ctx.database.db.query("UPDATE people SET name = 'Ada Lovelace' WHERE id = $1", [person.body.id]);
    assert.deepEqual(await within(1_000, names, (n) => n[0] === 'Ada Lovelace'), ['Ada Lovelace']);
    await ctx.database.db.query("UPDATE keys SET name = 'Lost badge' WHERE id = $1", [card.body.id]);
    assert.deepEqual(await within(1_000, keyNames, (n) => n[0] === 'Lost badge'), ['Lost badge']);
    // The person moves out of the department: their key leaves the department's pages with them.
    await ctx.database.db.query('UPDATE people SET location_id = $2 WHERE id = $1', [person.body.id, s.account.rootLocationId]);
    assert.deepEqual(await within(1_000, keyNames, (n) => n.length === 0), [], "a key follows its person's scope");
  });

  test("an operator's change is in the client's very next page", async () => {
    const s = await site();
    const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Bo', location_id: s.dept });
    const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge' });
    assert.deepEqual(await ids('/v1/keys', s.deptToken), [card.body.id]);
    const fob = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'fob', name: 'Fob' });
    assert.equal(fob.status, 201, fob.text);
    assert.deepEqual(await ids('/v1/keys', s.deptToken), [card.body.id, fob.body.id], 'handed over by the operator, listed at once');
  });
});

describe("a cached page never shows another scope's rows", () => {
  test('sibling departments and another account asking the same queries each get their own rows, from memory too', async () => {
    const s = await site();
    const other = await site();
    const wing = await createDepartment(ctx.service, s.account.rootLocationId, 'Wing');
    const wingLock = await createLock(ctx.service, wing, { name: 'Wing door' });
    const scopes = ['events:read', 'catalog:read', 'people:read', 'keys:read'];
    const wingToken = (await createApiKey(ctx.service, wing, scopes)).token;
    const rows = async (location: number, lock: number) => {
      const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Same Name', location_id: location });
      const key = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge' });
      assert.equal(key.status, 201, key.text);
      const event = await writeElsewhere(lock);
      return { people: [person.body.id], keys: [key.body.id], locks: [lock], events: [event.id] };
    };
    const annexRows = await rows(s.dept, s.annex);
    const wingRows = await rows(wing, wingLock);
    const otherRows = await rows(other.dept, other.annex);
    const lists = { people: '/v1/people?limit=50', keys: '/v1/keys?limit=50', locks: '/v1/locks?limit=50', events: '/v1/events?limit=50' };
    for (let round = 0; round < 2; round++) {
      for (const [list, path] of Object.entries(lists) as Array<[keyof typeof lists, string]>) {
        const when = round === 0 ? 'read' : 'from memory';
        assert.deepEqual(await ids(path, s.deptToken), annexRows[list], `${list}, ${when}: the Annex key`);
        assert.deepEqual(await ids(path, wingToken), wingRows[list], `${list}, ${when}: the Wing key`);
        assert.deepEqual(await ids(path, other.deptToken), otherRows[list], `${list}, ${when}: another account's key`);
      }
    }
  });

  test('each cached list declares the query schema its key is derived from', async () => {
    type Operation = { parameters?: Array<{ name: string; in: string }> };
    const document = (await ctx.service.request<{ paths: Record<string, { get: Operation }> }>('GET', '/v1/openapi.json')).body;
    for (const [path, schema] of [['/v1/events', EventQuery], ['/v1/keys', KeyListQuery], ['/v1/locks', LockListQuery], ['/v1/people', PersonListQuery]] as const) {
      const declared = (document.paths[path]?.get.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      assert.deepEqual(declared.sort(), Object.keys(schema.properties).sort(), path);
    }
  });
});
