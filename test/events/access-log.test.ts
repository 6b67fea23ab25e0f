// Door activity over real MQTT (embedded broker) into the access log, and GET /events.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients } from '../helpers/gateways.ts';
import { AccessLogWriter, type AccessEvent, type AccessLogLock, type GatewayEvent, type WriteGuard } from '../../src/modules/events/index.ts';
import { BATCH_CONTEXT } from '../../src/modules/events/store.ts';
import { systemClock } from '../../src/platform/clock.ts';
import type { Database } from '../../src/platform/db/database.ts';
import { sequentialScans, withFaults } from '../helpers/database.ts';
import { startService, useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

/** The Event object of GET /events and of the webhooks. */
type Event = AccessEvent;

const ctx = useTestService();
const connect = gatewayClients();

async function site() {
  const account = await createAccount(ctx.service);
  const dept = await createDepartment(ctx.service, account.rootLocationId, 'Annex');
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const front = await createLock(ctx.service, account.rootLocationId, { name: 'Front', place: 'Lobby', gateway_id: gateway.id });
  const annex = await createLock(ctx.service, dept, { name: 'Annex door', gateway_id: gateway.id });
  const elsewhere = await createLock(ctx.service, account.rootLocationId, { name: 'Not on this gateway' });
  const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada Door', email: 'ada@example.com', location_id: account.rootLocationId });
  const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Ada badge' });
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['events:read'])).token;
  const deptToken = (await createApiKey(ctx.service, dept, ['events:read'])).token;
  const client = await connect(gateway);
  const send = (event: Record<string, unknown>) =>
    client.publishAsync(`latchkey/v1/gateways/${gateway.id}/events`, JSON.stringify({ occurred_at: '2026-11-20T08:00:00Z', key_id: null, reason: null, ...event }), {
      qos: 1,
    });
  return { account, dept, gateway, front, annex, elsewhere, personId: person.body.id, cardId: card.body.id, token, deptToken, send };
}

async function events(token: string, query = ''): Promise<Event[]> {
  const res = await ctx.service.request<Page<Event>>('GET', `/v1/events${query}`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function settle(token: string, count: number): Promise<Event[]> {
  for (let i = 0; i < 100; i++) {
    const got = await events(token, '?limit=200');
    if (got.length >= count) return got;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return events(token, '?limit=200');
}

describe('door activity', () => {
  test('is stored once per gateway event id, in order, with person and key from key_id', async () => {
    const s = await site();
    await s.send({ id: 'e1', lock_id: s.front, type: 'access.granted', key_id: s.cardId });
    await s.send({ id: 'e1', lock_id: s.front, type: 'access.granted', key_id: s.cardId }); // repeated delivery
    await s.send({ id: 'e2', lock_id: s.front, type: 'door.closed', occurred_at: '2026-11-20T08:00:09Z' });
    await s.send({ id: 'e3', lock_id: s.annex, type: 'access.denied', key_id: 999999, reason: 'no_access' });
    await s.send({ id: 'e4', lock_id: s.elsewhere, type: 'access.granted' }); // not this gateway's lock: dropped
    await s.send({ id: 'e5', lock_id: s.front, type: 'door.exploded' }); // not a door type: dropped
    const log = await settle(s.token, 3);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await events(s.token)).length, 3, 'each event once; foreign and malformed ones dropped');
    assert.ok((log[0] as Event).id < (log[1] as Event).id && (log[1] as Event).id < (log[2] as Event).id);
    const [granted, closed, denied] = log as [Event, Event, Event];
    assert.deepEqual(granted, {
      id: granted.id,
      type: 'access.granted',
      occurred_at: '2026-11-20T08:00:00.000Z',
      result: 'success',
      reason: null,
      source: 'gateway',
      api_key: null,
      lock: { id: s.front, name: 'Front', place: 'Lobby' },
      location: { id: s.account.rootLocationId, name: 'Acme' },
      person: { id: s.personId, name: 'Ada Door', email: 'ada@example.com' },
      key: { id: s.cardId, name: 'Ada badge' },
    });
    assert.deepEqual([closed.type, closed.person, closed.key], ['door.closed', granted.person, granted.key], 'inherits from the opening');
    assert.deepEqual([denied.type, denied.result, denied.reason, denied.person, denied.key], ['access.denied', 'denied', 'unknown_key', null, null]);
    const outbox = await ctx.database.db.query<{ type: string; data: Event }>(
      `SELECT type, data FROM domain_events WHERE account_id = $1 AND type LIKE 'access.%' ORDER BY id`,
      [s.account.id],
    );
    assert.deepEqual(outbox.map((e) => e.data), [granted, denied], 'the same Event objects go to webhooks');
  });
});

describe('a batch of door events (what arrived while the previous batch was written)', () => {
  test('carries a reason only on a refusal, and only one of the spec: unknown_key for a key the account does not hold', async () => {
    const s = await site();
    const log = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
    const event = (id: string, type: GatewayEvent['type'], keyId: number | null, reason: string | null): GatewayEvent => ({
      id,
      lock_id: s.front,
      type,
      occurred_at: '2026-11-20T08:00:00Z',
      key_id: keyId,
      reason,
    });
    const stored = await log.ingestBatch(s.gateway.id, [
      event('r1', 'access.granted', null, 'exit_button'), // an opening with no key: a success, no reason
      event('r2', 'access.granted', 999999, null), // an opening by a key unknown here: no refusal reason on a success
      event('r3', 'door.left_open', null, 'held'),
      event('r4', 'access.denied', s.cardId, 'outside_time_window'),
      event('r5', 'access.denied', s.cardId, 'anti_passback'), // not a reason of the spec
      event('r6', 'access.denied', 999999, 'no_access'), // the key is nobody's
      event('r7', 'access.denied', null, null),
    ]);
    assert.deepEqual(
      stored.map((e) => e && [e.type, e.result, e.reason, e.key?.id ?? null]),
      [
        ['access.granted', 'success', null, null],
        ['access.granted', 'success', null, null],
        ['door.left_open', 'success', null, null],
        ['access.denied', 'denied', 'outside_time_window', s.cardId],
        ['access.denied', 'denied', null, s.cardId],
        ['access.denied', 'denied', 'unknown_key', null],
        ['access.denied', 'denied', 'unknown_key', null],
      ],
    );
  });
  test('keeps receipt order, drops repeats inside and outside the batch, and inherits from openings in the batch', async () => {
    const s = await site();
    const other = await createAccount(ctx.service);
    const stranger = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Eve', location_id: other.rootLocationId });
    const strangerCard = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: stranger.body.id, type: 'card', name: 'Eve badge' });
    const log = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
    const at = '2026-11-20T08:00:00Z';
    const event = (id: string, lockId: number, type: GatewayEvent['type'], keyId: number | null = null): GatewayEvent => ({ id, lock_id: lockId, type, occurred_at: at, key_id: keyId, reason: null });

    const [opened] = await log.ingestBatch(s.gateway.id, [event('b0', s.annex, 'access.granted', s.cardId)]);
    const batch = await log.ingestBatch(s.gateway.id, [
      event('b1', s.front, 'access.granted', s.cardId),
      event('b1', s.front, 'access.granted', s.cardId), // repeated inside the batch
      event('b0', s.annex, 'access.granted', s.cardId), // stored by the previous batch
      event('b2', s.annex, 'door.closed'), // opened in the previous batch
      event('b3', s.front, 'door.left_open'), // opened earlier in this batch
      event('b4', s.annex, 'access.granted', strangerCard.body.id), // another account's key
      event('b5', s.annex, 'door.closed'), // opened by b4: nobody known
      event('b6', s.elsewhere, 'access.granted'), // not on this gateway
    ]);
    assert.deepEqual(
      batch.map((e) => e && [e.type, e.lock.id, e.person?.id ?? null, e.key?.id ?? null, e.reason]),
      [
        ['access.granted', s.front, s.personId, s.cardId, null],
        null,
        null,
        ['door.closed', s.annex, s.personId, s.cardId, null],
        ['door.left_open', s.front, s.personId, s.cardId, null],
        ['access.granted', s.annex, null, null, null],
        ['door.closed', s.annex, null, null, null],
        null,
      ],
    );
    const ids = batch.flatMap((e) => (e ? [e.id] : []));
    assert.ok((opened?.id ?? Infinity) < (ids[0] as number), 'after the previous batch');
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids ascend in order of receipt');
    const stored = await events(s.token, '?limit=200');
    assert.deepEqual(stored.map((e) => e.id), [opened?.id, ...ids]);
    assert.deepEqual(stored.slice(1), batch.filter((e) => e !== null), 'what GET /events shows is what was stored');
    const outbox = await ctx.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM domain_events WHERE account_id = $1 AND type LIKE ANY('{access.%,door.%}')`, [s.account.id]);
    assert.equal(outbox[0]?.n, 6, 'one webhook event per stored entry');
  });
});

describe('the repeats of a batch', () => {
  test('are found by one index probe per event, never a scan of the log, whatever the planner knows of it', async () => {
    const s = await site();
    const log = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
    const at = '2026-11-20T08:00:00Z';
    // A log grown since its last statistics, as a new site's is: 20 batches of 300 door events.
    for (let b = 0; b < 20; b++) {
      await log.ingestBatch(s.gateway.id, Array.from({ length: 300 }, (_, i): GatewayEvent => ({ id: `r${b}-${i}`, lock_id: s.front, type: 'door.closed', occurred_at: at, key_id: null, reason: null })));
    }
    const again = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? `r7-${i}` : `new-${i}`));
    const params = [[s.front], again.map(() => s.gateway.id), again, [], []];
    assert.deepEqual(await sequentialScans(ctx.database.db, 'access_events', BATCH_CONTEXT.text, params), [], 'no sequential scan of access_events');
    const [context] = await ctx.database.db.query<{ seen: Array<[number, string]> }>(BATCH_CONTEXT.text, params);
    assert.deepEqual(
      (context?.seen ?? []).map(([, id]) => id).sort(),
      again.filter((id) => id.startsWith('r7-')).sort(),
      'exactly the stored ones are repeats',
    );
  });
});

describe('a guarded write (how a lock command ends together with its outcome)', () => {
  test('writes the entries only when the guard changes a row, in the same statement', async () => {
    const s = await site();
    const log = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
    const [lock] = await ctx.database.db.query<AccessLogLock>(
      'SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1',
      [s.front],
    );
    const entry = { gatewayId: null, gatewayEventId: null, type: 'access.granted', occurredAt: new Date(), result: 'success' as const, reason: null, source: 'api', apiKey: null, person: null, key: null };
    const flag = `guard-test-${s.account.id}`;
    const guard: WriteGuard = { name: 'testFlag', sql: (param) => `UPDATE settings SET value = 'used' WHERE key = ${param(1)} AND value = 'fresh' RETURNING key`, params: [flag] };
    assert.deepEqual(await log.recordBatch(ctx.database.db, [{ lock: lock as AccessLogLock, entry }], guard), [null], 'no such flag: nothing written');
    await ctx.database.db.query(`INSERT INTO settings (key, value) VALUES ($1, 'fresh')`, [flag]);
    const [written] = await log.recordBatch(ctx.database.db, [{ lock: lock as AccessLogLock, entry }], guard);
    assert.equal(written?.type, 'access.granted');
    assert.deepEqual(await log.recordBatch(ctx.database.db, [{ lock: lock as AccessLogLock, entry }], guard), [null], 'the flag is used: nothing written');
    const rows = await ctx.database.db.query<{ id: number }>('SELECT id FROM access_events WHERE lock_id = $1', [s.front]);
    assert.deepEqual(rows.map((r) => r.id), [written?.id]);
  });
});

/**
 * The test database, but away while `away()` says so, and refusing as data (SQLSTATE 22021) a write of
 * access-log entries that carries the text `poison`.
 */
function troubledDatabase(db: Database, away: () => boolean): Database {
  return withFaults(db, ({ name, params }) => {
    if (away()) return new Error('the database went away');
    if (name?.startsWith('accessLog.record') && JSON.stringify(params).includes('poison')) return Object.assign(new Error('invalid byte sequence'), { code: '22021' });
    return undefined;
  });
}

/** A second service on the troubled database, with a gateway, one lock on it and the gateway connected. */
async function troubledSite() {
  let away = false;
  const service = await startService(troubledDatabase(ctx.database.db, () => away));
  const account = await createAccount(service);
  const gateway = await createGateway(service, account.rootLocationId);
  const lock = await createLock(service, account.rootLocationId, { name: 'Front', gateway_id: gateway.id });
  const client = await connect(gateway);
  const publish = (event: Record<string, unknown>) =>
    client.publishAsync(`latchkey/v1/gateways/${gateway.id}/events`, JSON.stringify({ lock_id: lock, type: 'door.closed', occurred_at: '2026-11-20T08:00:00Z', ...event }), { qos: 1 });
  const storedIds = async () =>
    (await ctx.database.db.query<{ gateway_event_id: string }>('SELECT gateway_event_id FROM access_events WHERE gateway_id = $1 ORDER BY id', [gateway.id])).map((r) => r.gateway_event_id);
  return { service, account, publish, storedIds, setAway: (value: boolean) => void (away = value) };
}

describe('door events the database cannot take at once', () => {
  test('are kept while it is away and stored in order once it is back; an event it refuses is dropped alone', async () => {
    const { service, account, publish, storedIds: stored, setAway } = await troubledSite();
    try {
      const token = (await createApiKey(service, account.rootLocationId, ['events:read'])).token;
      const send = (id: string, type = 'door.closed', lockId?: number) => publish({ id, type, ...(lockId === undefined ? {} : { lock_id: lockId }) });
      setAway(true);
      const first = send('first');
      await new Promise((resolve) => setTimeout(resolve, 300)); // its write fails and is retried; the next ones wait behind it
      const rest = [
        send('second'),
        send('poison'),
        send('third'),
        send('bad\u0000id'), // refused on receipt: PostgreSQL cannot store NUL
        send('huge', 'door.closed', 2 ** 60), // beyond what an id can be: refused on receipt
        send('last', 'access.granted'),
      ];
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual(await stored(), []);
      setAway(false);
      await Promise.all([first, ...rest]);
      for (let i = 0; i < 100 && (await stored()).length < 4; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(await stored(), ['first', 'second', 'third', 'last']);
      assert.equal((await service.request<Page<Event>>('GET', '/v1/events', { token })).body.data.length, 4, 'and GET /events shows them');
    } finally {
      await service.close();
    }
  });
});

describe('a backlog of door events while the database is away', () => {
  test('stops reading the gateway once 1,000 wait, and stores them all when the database is back', async () => {
    const { service, publish, storedIds, setAway } = await troubledSite();
    try {
      setAway(true);
      let acknowledged = 0;
      const total = 1500;
      const sent = Array.from({ length: total }, (_, i) => publish({ id: `b${i}` }).then(() => void acknowledged++));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.ok(acknowledged < total, `the broker stopped reading the gateway (${acknowledged} of ${total} acknowledged)`);
      setAway(false);
      await Promise.all(sent);
      const count = async () => (await storedIds()).length;
      for (let i = 0; i < 100 && (await count()) < total; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await count(), total);
    } finally {
      await service.close();
    }
  });
});

describe('GET /events', () => {
  test('covers locks in scope only and filters by since, lock, person and type', async () => {
    const s = await site();
    await s.send({ id: 'a', lock_id: s.front, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T08:00:00Z' });
    await s.send({ id: 'b', lock_id: s.annex, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T09:00:00Z' });
    await s.send({ id: 'c', lock_id: s.annex, type: 'door.left_open', occurred_at: '2026-11-20T10:00:00Z' });
    await settle(s.token, 3);
    const ids = async (token: string, query: string) => (await events(token, query)).map((e) => [e.lock.id, e.type]);
    assert.deepEqual(await ids(s.deptToken, ''), [
      [s.annex, 'access.granted'],
      [s.annex, 'door.left_open'],
    ]);
    assert.deepEqual(await ids(s.token, `?lock_id=${s.front}`), [[s.front, 'access.granted']]);
    assert.deepEqual(await ids(s.token, '?since=2026-11-20T09:00:00'), [
      [s.annex, 'access.granted'],
      [s.annex, 'door.left_open'],
    ]);
    assert.deepEqual(await ids(s.token, '?since=2026-11-20T10:30:00%2B01:00'), [[s.annex, 'door.left_open']]);
    assert.deepEqual(await ids(s.token, '?since=2030-01-01T00:00:00Z'), [], 'after every event: an empty page, not a 500');
    assert.deepEqual(await ids(s.token, '?type=door.left_open,door.closed'), [[s.annex, 'door.left_open']]);
    assert.deepEqual(await ids(s.token, '?type=unlock.failed,lock.online'), []);
    assert.equal((await events(s.token, `?person_id=${s.personId}`)).length, 3);
    const first = await ctx.service.request<Page<Event>>('GET', '/v1/events?limit=2', { token: s.token });
    const rest = await ctx.service.request<Page<Event>>('GET', `/v1/events?limit=2&cursor=${first.body.next_cursor}`, { token: s.token });
    assert.equal(rest.body.data.length, 1);
    assert.equal(rest.body.next_cursor, null);
    assert.equal((await ctx.service.request('GET', '/v1/events?since=yesterday', { token: s.token })).status, 400);
  });

  test('since keeps receipt order and finds an event received before others of an earlier time', async () => {
    const s = await site();
    // Received in this order; the gateway's clock puts 'late' after 'early', which arrived later.
    await s.send({ id: 'late', lock_id: s.front, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T11:00:00Z' });
    await s.send({ id: 'old', lock_id: s.front, type: 'door.closed', occurred_at: '2026-11-20T08:00:00Z' });
    await s.send({ id: 'early', lock_id: s.annex, type: 'access.granted', key_id: s.cardId, occurred_at: '2026-11-20T10:00:00Z' });
    await s.send({ id: 'older', lock_id: s.annex, type: 'door.closed', occurred_at: '2026-11-20T07:00:00Z' });
    const all = await settle(s.token, 4);
    const since = async (query: string) => (await events(s.token, query)).map((e) => e.occurred_at);
    assert.deepEqual(await since('?since=2026-11-20T09:00:00Z'), ['2026-11-20T11:00:00.000Z', '2026-11-20T10:00:00.000Z']);
    assert.deepEqual(await since('?since=2026-11-20T10:30:00Z'), ['2026-11-20T11:00:00.000Z']);
    assert.deepEqual(await since('?since=2026-11-20T12:00:00Z'), []);
    // Later pages go on from the cursor with the same filter.
    const first = await ctx.service.request<Page<Event>>('GET', '/v1/events?since=2026-11-20T09:00:00Z&limit=1', { token: s.token });
    assert.deepEqual(first.body.data.map((e) => e.id), [all[0]?.id]);
    const rest = await ctx.service.request<Page<Event>>('GET', `/v1/events?since=2026-11-20T09:00:00Z&limit=1&cursor=${first.body.next_cursor}`, { token: s.token });
    assert.deepEqual(rest.body.data.map((e) => e.id), [all[2]?.id]);
  });
});
