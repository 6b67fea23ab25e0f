// The end of the access log grown in memory (events/tail-pages.ts): a page at the end of a listing takes the
// entries this instance appends instead of being read again. Each test sets the pages the service sends
// against the same query read from the database, byte for byte: a grown page may never show a row outside
// the key's scope or its filter, miss a row, or keep a row that was deleted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AccessLogReader } from '../../src/modules/events/reader.ts';
import type { EventQuery } from '../../src/modules/events/schemas.ts';
import { AccessLogWriter, type AccessEvent, type AccessLogLock } from '../../src/modules/events/index.ts';
import type { Caller } from '../../src/platform/auth.ts';
import { systemClock } from '../../src/platform/clock.ts';
import type { Database } from '../../src/platform/db/index.ts';
import { PageCaches } from '../../src/platform/page-cache.ts';
import { overriding, withFaults } from '../helpers/database.ts';
import { createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, waitFor } from '../helpers/gateways.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService();
const connect = gatewayClients();

/** Reads of an events page from the database by the service under test (PAGE_ROWS), counted. */
let pageReads = 0;
let service: TestService;

/** A service of its own, whose reads of pages this file counts (its hooks run inside the root's, on its database). */
function useCountingService(): void {
  before(async () => {
    service = await startService(
      withFaults(ctx.database.db, ({ text }) => {
        if (/FROM access_events e\b/.test(text)) pageReads++;
        return undefined;
      }),
    );
  });
  after(() => service.close());
}

async function site() {
  const account = await createAccount(service);
  const dept = await createDepartment(service, account.rootLocationId, 'Annex');
  const gateway = await createGateway(service, account.rootLocationId);
  const front = await createLock(service, account.rootLocationId, { name: 'Front', gateway_id: gateway.id });
  const annex = await createLock(service, dept, { name: 'Annex "door" \\ ü', gateway_id: gateway.id });
  // A name with a control character is refused now (README: API notes, "Names on one line"); one stored before the
  // rule still reaches the log, so the key's name is given one by SQL.
  const person = await service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Zoë "Door"', email: 'zoe@example.com', location_id: account.rootLocationId });
  const card = await service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge 1' });
  await ctx.database.db.query("UPDATE keys SET name = 'Badge' || chr(10) || '1' WHERE id = $1", [card.body.id]);
  const root = { accountId: account.id, locationId: account.rootLocationId, token: (await createApiKey(service, account.rootLocationId, ['events:read'])).token };
  const department = { accountId: account.id, locationId: dept, token: (await createApiKey(service, dept, ['events:read'])).token };
  const client = await connect(gateway);
  let n = 0;
  /** Publishes door events and waits for their acknowledgement, which comes once they are committed (and the pages grown). */
  const send = (...events: Array<Record<string, unknown>>) =>
    Promise.all(
      events.map((event) =>
        client.publishAsync(`latchkey/v1/gateways/${gateway.id}/events`, JSON.stringify({ id: `e${n++}`, occurred_at: '2026-11-20T08:00:00Z', key_id: null, reason: null, ...event }), { qos: 1 }),
      ),
    );
  const lockRow = async (lockId: number) =>
    (
      await ctx.database.db.query<AccessLogLock>(
        'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id, l.path AS location_path FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1',
        [lockId],
      )
    )[0] as AccessLogLock;
  return { account, dept, front, annex, personId: person.body.id, cardId: card.body.id, root, department, send, lockRow, client };
}

type Reader = { accountId: number; locationId: number; token: string };

/** The page as the service sends it, and as a reader with no page cache reads it from the database. */
async function bothWays(who: Reader, query: EventQuery): Promise<{ sent: string; read: string }> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  const res = await service.request<Page<AccessEvent>>('GET', `/v1/events${qs ? `?${qs}` : ''}`, { token: who.token });
  assert.equal(res.status, 200, res.text);
  const fresh = new AccessLogReader(ctx.database.db, new PageCaches(false));
  const read = String(await fresh.listJson({ accountId: who.accountId, locationId: who.locationId } as Caller, query));
  return { sent: res.text, read };
}

/** Asserts that the service sends what the database holds for the query; returns the page. */
async function matches(who: Reader, query: EventQuery, name = JSON.stringify(query)): Promise<Page<AccessEvent>> {
  const { sent, read } = await bothWays(who, query);
  assert.equal(sent, read, name);
  return JSON.parse(sent) as Page<AccessEvent>;
}

describe('pages at the end of the access log', () => {
  useCountingService();
  test('grow with what this instance appends, without reading the database, and match a read byte for byte', async () => {
    const s = await site();
    const pollers: Array<[string, Reader, EventQuery]> = [
      ['everything', s.root, {}],
      ['three a page', s.root, { limit: 3 }],
      ['one lock', s.root, { lock_id: s.front }],
      ['one person', s.root, { person_id: s.personId }],
      ['door types', s.root, { type: 'door.closed,door.left_open' }],
      ['since nine', s.root, { since: '2026-11-20T09:00:00Z' }],
      ['no door type', s.root, { type: 'unlock.failed' }],
      ['the department', s.department, {}],
      ['the department, two a page', s.department, { limit: 2 }],
      ['the department asking for a lock outside it', s.department, { lock_id: s.front }],
    ];
    for (const [, who, query] of pollers) await bothWays(who, query); // each page read once, and kept
    await s.send({ lock_id: s.front, type: 'access.granted', key_id: s.cardId });
    const before = pageReads;
    for (const [name, who, query] of pollers) await matches(who, query, name);
    assert.equal(pageReads, before, 'every page came from memory');

    // A batch across locks, types, holders and times: two pages fill ('three a page', 'the department, two a page')
    // and are read again, as only a read may hand out a next page; the others grow.
    await s.send(
      { lock_id: s.annex, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T10:00:00Z' },
      { lock_id: s.annex, type: 'door.left_open', occurred_at: '2026-11-20T10:05:00Z' },
      { lock_id: s.front, type: 'access.denied', key_id: 424242, reason: 'no_access', occurred_at: '2026-11-20T11:00:00Z' },
      { lock_id: s.front, type: 'door.closed', occurred_at: '2026-11-20T08:30:00Z' },
      { lock_id: s.annex, type: 'door.closed', occurred_at: '2026-11-20T12:00:00Z' },
    );
    const grown = pageReads;
    for (const [name, who, query] of pollers) {
      const page = await matches(who, query, name);
      if (who === s.department) assert.ok(!page.data.some((e) => e.lock.id === s.front), `${name}: no row outside the key's scope`);
    }
    assert.equal(pageReads, grown + 2, 'the two pages that filled were read, the others grew from memory');
    const threeAPage = await matches(s.root, { limit: 3 });
    assert.equal(threeAPage.data.length, 3);
    assert.notEqual(threeAPage.next_cursor, null, 'the page filled: it has a next page');

    // The pollers move on to the next pages, which are read once and then grow in turn.
    const next: Array<[string, Reader, EventQuery]> = [
      ['after three', s.root, { limit: 3, cursor: threeAPage.next_cursor as string }],
      ['the department, after two', s.department, { limit: 2, cursor: (await matches(s.department, { limit: 2 })).next_cursor as string }],
    ];
    for (const [name, who, query] of next) await matches(who, query, name);
    await s.send({ lock_id: s.annex, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T13:00:00Z' }, { lock_id: s.front, type: 'door.closed' });
    const moved = pageReads;
    for (const [name, who, query] of [...pollers, ...next]) await matches(who, query, name);
    assert.equal(pageReads, moved + 1, "'after three' filled and was read; the rest grew or stayed");
  });

  test("are left alone by the account's other writes, and an entry a request of this instance records is in its next read", async () => {
    const s = await site();
    const writer = await createApiKey(service, s.account.rootLocationId, ['people:write', 'keys:write', 'locks:control'], { lock_allowlist: [s.annex] });
    const pollers: Array<[Reader, EventQuery]> = [
      [s.root, {}],
      [s.root, { lock_id: s.front }],
      [s.department, { limit: 2 }],
    ];
    await s.send({ lock_id: s.front, type: 'access.granted', key_id: s.cardId });
    for (const [who, query] of pollers) await matches(who, query);
    const before = pageReads;
    // A person and a key of the account change: no Event of the log can (each holds what was true when it happened).
    const renamed = await service.request('PUT', `/v1/people/${s.personId}`, { token: writer.token, body: { name: 'Zoë Renamed' } });
    assert.equal(renamed.status, 200, renamed.text);
    const relabelled = await service.request('PATCH', `/v1/keys/${s.cardId}`, { token: writer.token, body: { name: 'Badge 2' } });
    assert.equal(relabelled.status, 200, relabelled.text);
    for (const [who, query] of pollers) await matches(who, query);
    assert.equal(pageReads, before, 'no page read again after writes that cannot change the log');
    // A write that does add to the log: an unlock of a lock off the key's allowlist is refused and recorded.
    const refused = await service.request('POST', `/v1/locks/${s.front}/unlock`, { token: writer.token });
    assert.equal(refused.status, 403, refused.text);
    const page = await matches(s.root, { lock_id: s.front });
    assert.deepEqual(
      page.data.map((e) => [e.type, e.source]),
      [
        ['access.granted', 'gateway'],
        ['access.denied', 'api'],
      ],
      'the refusal is in the next read of the instance that recorded it',
    );
    for (const [who, query] of pollers) await matches(who, query);
  });

  test("another instance's entries and a deletion drop the pages they may change: read again, they match the database", async () => {
    const s = await site();
    await s.send({ lock_id: s.front, type: 'access.granted', key_id: s.cardId });
    const queries: Array<[Reader, EventQuery]> = [
      [s.root, {}],
      [s.department, {}],
      [s.root, { lock_id: s.annex }],
    ];
    for (const [who, query] of queries) await bothWays(who, query);
    // Written by another instance: this one hears of it by the access log's notification only.
    const elsewhere = new AccessLogWriter(ctx.database.db, systemClock, service.latchkey.app.log);
    const entry = { gatewayId: null, gatewayEventId: null, type: 'access.denied', occurredAt: new Date(), result: 'denied' as const, reason: 'no_access', source: 'api', apiKey: null, person: null, key: null };
    const [other] = await elsewhere.recordBatch(ctx.database.db, [{ lock: await s.lockRow(s.annex), entry }]);
    assert.ok(other);
    const ids = async () => (JSON.parse((await bothWays(s.department, {})).sent) as Page<AccessEvent>).data.map((e) => e.id);
    await waitFor(async () => (await ids()).includes(other.id), 'the other instance’s entry on the department’s page', 1_000);
    for (const [who, query] of queries) await matches(who, query);
    // Then this instance appends again (its page grows), and an entry is deleted (every page of the account goes).
    await s.send({ lock_id: s.annex, type: 'door.closed' });
    for (const [who, query] of queries) await matches(who, query);
    await ctx.database.db.query('DELETE FROM access_events WHERE id = $1', [other.id]);
    await waitFor(async () => !(await ids()).includes(other.id), 'the deleted entry gone', 1_000);
    for (const [who, query] of queries) await matches(who, query);
  });

  test('entries stored before the log kept JSON text (jsonb data, migration 023) are read with the new ones, and pages grow from them', async () => {
    const s = await site();
    await s.send({ lock_id: s.annex, type: 'access.granted', key_id: s.cardId });
    // That opening as a row written before migration 023: its Event in data (jsonb), no body.
    const [opening] = await ctx.database.db.query<{ id: number }>(
      `UPDATE access_events SET data = body::jsonb, body = NULL WHERE lock_id = $1 RETURNING id::int AS id`,
      [s.annex],
    );
    assert.ok(opening);
    const queries: Array<[Reader, EventQuery]> = [
      [s.root, {}],
      [s.department, { lock_id: s.annex }],
    ];
    // No page of this account was read before: the old row comes as jsonb's text, byte for byte what a read gives.
    const pages = [];
    for (const [who, query] of queries) pages.push(await matches(who, query));
    assert.deepEqual(pages.map((p) => p.data.map((e) => e.id)), [[opening.id], [opening.id]]);
    // A door.closed takes its person and key from the old opening; the pages grow with it.
    await s.send({ lock_id: s.annex, type: 'door.closed' });
    const before = pageReads;
    const grown = await matches(s.department, { lock_id: s.annex });
    assert.equal(pageReads, before, 'grown from memory');
    assert.deepEqual(grown.data.map((e) => [e.type, e.person?.id ?? null, e.key?.id ?? null]), [
      ['access.granted', s.personId, s.cardId],
      ['door.closed', s.personId, s.cardId],
    ]);
    await matches(s.root, {});
  });

  test('a person id in upper case is the same poller: its page grows with that person\'s entries', async () => {
    const s = await site();
    const upper = { person_id: s.personId.toUpperCase() };
    await matches(s.root, upper);
    await s.send({ lock_id: s.front, type: 'access.granted', key_id: s.cardId });
    const page = await matches(s.root, upper, 'the upper-case poller after an opening by that person');
    assert.equal(page.data.length, 1);
    assert.deepEqual(await matches(s.root, { person_id: s.personId }), page, 'one page for both spellings');
  });

  test("a page never fills from memory: another instance's earlier entry, its notification late, is not left behind a next_cursor", async () => {
    const s = await site();
    // This reader hears the access log's notifications 300 ms late (a busy LISTEN connection, a burst queued ahead).
    const late = overriding(ctx.database.db, {
      listen: (channel: Parameters<Database['listen']>[0], handler: (payload: string) => void) => ctx.database.db.listen(channel, (payload) => void setTimeout(() => handler(payload), 300)),
    });
    const reader = new AccessLogReader(late, new PageCaches(true));
    await reader.start();
    const here = new AccessLogWriter(ctx.database.db, systemClock, service.latchkey.app.log, reader);
    const elsewhere = new AccessLogWriter(ctx.database.db, systemClock, service.latchkey.app.log);
    const caller = { accountId: s.root.accountId, locationId: s.root.locationId } as Caller;
    const lock = await s.lockRow(s.front);
    const entry = { gatewayId: null, gatewayEventId: null, type: 'access.denied', occurredAt: new Date(), result: 'denied' as const, reason: 'no_access', source: 'api', apiKey: null, person: null, key: null };
    const twoAPage: EventQuery = { limit: 2 };
    assert.equal(String(await reader.listJson(caller, twoAPage)), '{"data":[],"next_cursor":null}');
    const [other] = await elsewhere.recordBatch(ctx.database.db, [{ lock, entry }]); // committed first, heard of later
    await here.recordBatch(ctx.database.db, [{ lock, entry }, { lock, entry }, { lock, entry }]);
    const served = JSON.parse(String(await reader.listJson(caller, twoAPage))) as Page<AccessEvent>;
    assert.equal(served.data[0]?.id, other?.id, "the other instance's entry opens the page");
    const fresh = new AccessLogReader(ctx.database.db, new PageCaches(false));
    assert.deepEqual(served, JSON.parse(String(await fresh.listJson(caller, twoAPage))), 'the page a read gives');
  });
});
