// The rules of PeopleService on a fake store (no database, no server): the locking system written first and
// its refusal saving nothing, a failed commit undone there, de-duplication, events only for real changes,
// a move and a deletion each in one transaction with what the keys module does for them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Caller } from '../../src/platform/auth.ts';
import { PageCaches } from '../../src/platform/page-cache.ts';
import { PeopleService, type PeopleServiceLog, type PeopleStore } from '../../src/modules/people/service.ts';
import type { PersonRow } from '../../src/modules/people/store.ts';
import { FakeDatabase, FakeLockingSystems, fixedClock, refusal, where } from '../helpers/fake-database.ts';

const ACCOUNT = 7;
/** Account 7: root location 70 with two sites below it; location 80 is another account's. */
const LOCATIONS = new Map([
  [70, { id: 70, account_id: ACCOUNT, name: 'Head office', path: [70] }],
  [71, { id: 71, account_id: ACCOUNT, name: 'North', path: [70, 71] }],
  [72, { id: 72, account_id: ACCOUNT, name: 'South', path: [70, 72] }],
  [80, { id: 80, account_id: 8, name: 'Elsewhere', path: [80] }],
]);
const PERSON_ID = '01900000-0000-7000-8000-000000000001';

const caller = (locationId = 70): Caller => ({
  apiKeyId: 1,
  apiKeyName: 'test',
  prefix: 'lk_test',
  accountId: ACCOUNT,
  locationId,
  scopes: new Set(),
  lockAllowlist: new Set(),
  reseller: false,
  expiresAt: new Date('2099-01-01T00:00:00Z'),
  revoked: false,
});

function personRow(values: Partial<PersonRow> = {}): PersonRow {
  const location = LOCATIONS.get(values.location_id ?? 71)!;
  return {
    id: PERSON_ID,
    account_id: location.account_id,
    location_id: location.id,
    location_name: location.name,
    location_path: location.path,
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+442079460958',
    company_name: null,
    title: null,
    language: 'en-GB',
    managed: false,
    ...values,
  };
}

/** What the service emits (typed through the store, wherever the outbox lives). */
type DomainEvent = Parameters<PeopleStore['emitDomainEvent']>[1];

/** The people table in memory; every call is logged as "<where> <function> <id>" in the order made. */
function fakeStore(people: PersonRow[] = []) {
  const rows = new Map(people.map((p) => [p.id, { ...p, deleted: false }]));
  const log: string[] = [];
  const events: Array<DomainEvent & { in: string }> = [];
  const live = (scope: number | null) => [...rows.values()].filter((p) => !p.deleted && (scope === null || p.location_path.includes(scope)));
  const hooks: { findDuplicate?: (db: unknown) => PersonRow | null | undefined } = {};
  const store: PeopleStore = {
    async findPerson(db, scope, id) {
      log.push(`${where(db)} findPerson ${id}`);
      const row = live(scope).find((p) => p.id === id);
      return row ? { ...row } : null;
    },
    async findDuplicate(db, scope, accountId, phone, email) {
      log.push(`${where(db)} findDuplicate`);
      const hooked = hooks.findDuplicate?.(db);
      if (hooked !== undefined) return hooked;
      return live(scope).find((p) => p.account_id === accountId && ((phone && p.phone === phone) || (email && p.email === email))) ?? null;
    },
    async peoplePageJson(db) {
      log.push(`${where(db)} peoplePageJson`);
      return '{"data":[],"next_cursor":null}';
    },
    async searchPeople(db) {
      log.push(`${where(db)} searchPeople`);
      return [];
    },
    async accountExists(db) {
      log.push(`${where(db)} accountExists`);
      return true;
    },
    async insertPerson(db, person) {
      log.push(`${where(db)} insertPerson ${person.id}`);
      const location = LOCATIONS.get(person.location_id)!;
      rows.set(person.id, { ...person, location_name: location.name, location_path: location.path, deleted: false });
    },
    async updatePerson(db, id, values) {
      log.push(`${where(db)} updatePerson ${id}`);
      const location = LOCATIONS.get(values.location_id)!;
      rows.set(id, { ...rows.get(id)!, ...values, location_name: location.name, location_path: location.path });
    },
    async softDeletePerson(db, id) {
      log.push(`${where(db)} softDeletePerson ${id}`);
      const row = rows.get(id);
      if (!row || row.deleted) return false;
      row.deleted = true;
      return true;
    },
    async forgetContactDetails(db, id) {
      log.push(`${where(db)} forgetContactDetails ${id}`);
    },
    async findLocationWithAccount(db, locationId) {
      log.push(`${where(db)} findLocationWithAccount ${locationId}`);
      const location = LOCATIONS.get(locationId);
      return location ? { id: location.id, account_id: location.account_id, path: location.path, locking_system: 'sandbox' } : null;
    },
    async findAccountLockingSystem(db) {
      log.push(`${where(db)} findAccountLockingSystem`);
      return 'sandbox';
    },
    async lockKey(db, key) {
      log.push(`${where(db)} lockKey ${key}`);
    },
    async emitDomainEvent(db, event) {
      log.push(`${where(db)} emitDomainEvent ${event.type}`);
      events.push({ ...event, in: where(db) });
    },
    async forgetPersonInDeliveries(db, personId) {
      log.push(`${where(db)} forgetPersonInDeliveries ${personId}`);
    },
  };
  return { store, rows, log, events, hooks };
}

function fixture(people: PersonRow[] = []) {
  const db = new FakeDatabase();
  const lockingSystems = new FakeLockingSystems();
  const { store, rows, log, events, hooks } = fakeStore(people);
  const logged: string[] = [];
  const service = new PeopleService(
    {
      db,
      clock: fixedClock(),
      lockingSystems,
      brandName: 'Latchkey',
      log: { error: (_fields: unknown, msg?: string) => void logged.push(String(msg)) } as PeopleServiceLog,
      keysOfPerson: async () => [],
      revokeEverythingOf: async (tx, personId) => void log.push(`${where(tx)} revokeEverythingOf ${personId}`),
      personMoved: async (tx, personId, accountId) => void log.push(`${where(tx)} personMoved ${personId} ${accountId}`),
      pages: new PageCaches(false),
    },
    store,
  );
  /** The calls that changed something: writes of the store and of the keys module. */
  const writes = () => log.filter((line) => !/ (find|list|search)\w* /.test(`${line} `) && !line.includes(' lockKey '));
  return { service, db, lockingSystems, rows, log, writes, events, hooks, logged };
}

describe('PeopleService: create', () => {
  test('the locking system refuses: 409 lockingsystem_rejected, nothing saved, no transaction, no event', async () => {
    const { service, db, lockingSystems, writes, events } = fixture();
    lockingSystems.answer = () => 'reject';
    const error = await refusal(service.create(caller(), { name: 'Grace Hopper', phone: '+1 202 555 0123', location_id: 71 }));
    assert.equal(error.status, 409);
    assert.equal(error.code, 'lockingsystem_rejected');
    assert.equal(lockingSystems.writes.length, 1, 'asked once');
    assert.deepEqual(db.begun, [], 'no transaction was opened');
    assert.deepEqual(writes(), []);
    assert.deepEqual(events, []);
  });

  test('written to the locking system first, then the row and person.created in one committed transaction', async () => {
    const { service, db, lockingSystems, log, events } = fixture();
    const transactionsWhenAsked: number[] = [];
    lockingSystems.answer = () => (transactionsWhenAsked.push(db.begun.length), 'applied');
    const { person, created } = await service.create(caller(), { name: 'Grace Hopper', phone: '+1 (202) 555-0123', location_id: 71 });
    assert.equal(created, true);
    assert.deepEqual(transactionsWhenAsked, [0], 'asked before any transaction began (none is held open while it answers)');
    assert.equal(person.phone, '+12025550123', 'stored in E.164');
    assert.deepEqual(lockingSystems.writes, [`${ACCOUNT} person.create ${person.id}`]);
    assert.deepEqual(db.committed, ['tx1']);
    const inTx = log.filter((line) => line.startsWith('tx1 ')).map((line) => line.split(' ')[1]);
    assert.deepEqual(inTx, ['lockKey', 'findDuplicate', 'insertPerson', 'findPerson', 'emitDomainEvent']);
    assert.equal(events.length, 1);
    assert.deepEqual({ type: events[0]!.type, in: events[0]!.in, personId: events[0]!.personId, locationId: events[0]!.locationId }, {
      type: 'person.created',
      in: 'tx1',
      personId: person.id,
      locationId: 71,
    });
    assert.deepEqual(events[0]!.data, person, "the event carries the person as stored");
  });

  test('the same phone or e-mail inside the scope: the existing person, unchanged, and the locking system not asked', async () => {
    const existing = personRow();
    const { service, db, lockingSystems, events } = fixture([existing]);
    const { person, created } = await service.create(caller(), { name: 'Someone Else', email: 'ada@example.com' });
    assert.equal(created, false);
    assert.equal(person.id, existing.id);
    assert.equal(person.name, 'Ada Lovelace');
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(db.begun, []);
    assert.deepEqual(events, []);
  });

  test('a concurrent create of the same phone wins the race: the identity is locked, the winner returned, the locking system undone', async () => {
    const winner = personRow({ id: '01900000-0000-7000-8000-0000000000ff' });
    const { service, db, lockingSystems, log, hooks, events } = fixture();
    // Nothing before the transaction; the other create committed by the time this one holds the lock.
    hooks.findDuplicate = (db_) => (where(db_) === 'db' ? null : winner);
    const { person, created } = await service.create(caller(), { name: 'Ada', phone: '+442079460958', email: 'ADA@example.com' });
    assert.equal(created, false);
    assert.equal(person.id, winner.id);
    const locks = log.filter((line) => line.includes(' lockKey '));
    assert.deepEqual(locks, ['tx1 lockKey person:7:email:ada@example.com', 'tx1 lockKey person:7:phone:+442079460958'], 'both identities, in one order');
    assert.ok(log.indexOf(locks[1]!) < log.indexOf('tx1 findDuplicate'), 'looked again only once locked');
    assert.equal(lockingSystems.writes.length, 2);
    assert.match(lockingSystems.writes[1]!, / person\.delete /, 'the create the locking system accepted is undone');
    assert.equal(lockingSystems.writes[1]!.split(' ')[2], lockingSystems.writes[0]!.split(' ')[2], 'the same id');
    assert.deepEqual(db.committed, ['tx1']);
    assert.deepEqual(events, []);
  });

  test('the commit fails after the locking system accepted: the create is undone there and the error goes on (500)', async () => {
    const { service, db, lockingSystems, logged } = fixture();
    db.failNextCommit = new Error('connection lost');
    await assert.rejects(service.create(caller(), { name: 'Grace Hopper', phone: '+12025550123' }), /connection lost/);
    assert.equal(lockingSystems.writes.length, 2);
    const [created, undone] = lockingSystems.writes.map((w) => w.split(' '));
    assert.deepEqual([created![1], undone![1], undone![2]], ['person.create', 'person.delete', created![2]]);
    assert.deepEqual(logged, []);
  });

  test('an undo the locking system refuses is logged for a person to reconcile; the commit error is the answer', async () => {
    const { service, db, lockingSystems, logged } = fixture();
    db.failNextCommit = new Error('connection lost');
    lockingSystems.answer = (operation) => (operation === 'person.delete' ? 'reject' : 'applied');
    await assert.rejects(service.create(caller(), { name: 'Grace Hopper', phone: '+12025550123' }), /connection lost/);
    assert.deepEqual(logged, ['locking system compensation failed; reconcile this person by hand']);
  });

  test("given the request's logger, the failed undo is logged there (under the request id), not on the service's", async () => {
    const { service, db, lockingSystems, logged } = fixture();
    db.failNextCommit = new Error('connection lost');
    lockingSystems.answer = (operation) => (operation === 'person.delete' ? 'reject' : 'applied');
    const requestLines: string[] = [];
    const requestLog: PeopleServiceLog = { error: (_fields: unknown, msg?: string) => void requestLines.push(String(msg)) } as PeopleServiceLog;
    await assert.rejects(service.create(caller(), { name: 'Grace Hopper', phone: '+12025550123' }, requestLog), /connection lost/);
    assert.deepEqual([requestLines, logged], [['locking system compensation failed; reconcile this person by hand'], []]);
  });

  test('every problem of the body at once (422), before the locking system is asked', async () => {
    const { service, lockingSystems } = fixture();
    const error = await refusal(service.create(caller(), { name: 'Latchkey support', phone: '020 7946 0958' }));
    assert.equal(error.status, 422);
    assert.deepEqual(error.details?.map((d) => `${d.field} ${d.code}`), ['name reserved_name', 'phone invalid']);
    assert.deepEqual(lockingSystems.writes, []);
  });

  test("a location outside the key's scope, or of another account, is refused before anything is written", async () => {
    const { service, lockingSystems } = fixture();
    for (const locationId of [72, 80, 999]) {
      const error = await refusal(service.create(caller(71), { name: 'Grace Hopper', location_id: locationId }));
      assert.equal(error.details?.[0]?.field, 'location_id', String(locationId));
    }
    assert.deepEqual(lockingSystems.writes, []);
  });
});

describe('PeopleService: update', () => {
  test('a save that changes nothing (spelling of the language and phone aside) writes and emits nothing', async () => {
    const { service, db, lockingSystems, writes, events } = fixture([personRow()]);
    const person = await service.update(caller(), PERSON_ID, { name: 'Ada Lovelace', phone: '+44 20 7946 0958', language: 'EN-gb', location_id: 71 });
    assert.equal(person.name, 'Ada Lovelace');
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(db.begun, []);
    assert.deepEqual(writes(), []);
    assert.deepEqual(events, []);
  });

  test('person.updated names exactly the fields that changed, in the transaction of the update; no move, no re-reading of keys', async () => {
    const { service, db, lockingSystems, writes, events } = fixture([personRow()]);
    await service.update(caller(), PERSON_ID, { name: 'Ada King', title: 'Countess', email: 'ada@example.com' });
    assert.deepEqual(lockingSystems.writes, [`${ACCOUNT} person.update ${PERSON_ID}`]);
    assert.deepEqual(db.committed, ['tx1']);
    assert.deepEqual(writes(), [`tx1 updatePerson ${PERSON_ID}`, 'tx1 emitDomainEvent person.updated']);
    assert.deepEqual(events[0]!.data.changed_fields, ['name', 'title']);
    assert.equal(events[0]!.data.name, 'Ada King', 'the person as updated');
  });

  test('a move: the keys module works out what their keys open inside the same transaction, and `location` is a changed field', async () => {
    const { service, writes, events } = fixture([personRow()]);
    const person = await service.update(caller(), PERSON_ID, { location_id: 72 });
    assert.deepEqual(person.location, { id: 72, name: 'South' });
    assert.deepEqual(writes(), [`tx1 updatePerson ${PERSON_ID}`, `tx1 personMoved ${PERSON_ID} ${ACCOUNT}`, 'tx1 emitDomainEvent person.updated']);
    assert.deepEqual(events[0]!.data.changed_fields, ['location']);
    assert.equal(events[0]!.locationId, 72, 'the event belongs to where the person is now');
  });

  test('the locking system refuses: 409, nothing saved, no event', async () => {
    const { service, db, lockingSystems, writes, events } = fixture([personRow()]);
    lockingSystems.answer = () => 'reject';
    const error = await refusal(service.update(caller(), PERSON_ID, { name: 'Ada King' }));
    assert.equal(error.code, 'lockingsystem_rejected');
    assert.deepEqual(db.begun, []);
    assert.deepEqual(writes(), []);
    assert.deepEqual(events, []);
  });

  test('a person managed by the service: 403 for update and delete, the locking system not asked', async () => {
    const { service, lockingSystems, writes } = fixture([personRow({ managed: true })]);
    assert.equal((await refusal(service.update(caller(), PERSON_ID, { name: 'Ada King' }))).status, 403);
    assert.equal((await refusal(service.delete(caller(), PERSON_ID))).status, 403);
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(writes(), []);
  });

  test('a person outside the scope is not found (404), not refused', async () => {
    const { service, lockingSystems } = fixture([personRow({ location_id: 72 })]);
    assert.equal((await refusal(service.update(caller(71), PERSON_ID, { name: 'Ada King' }))).status, 404);
    assert.equal((await refusal(service.delete(caller(71), PERSON_ID))).status, 404);
    assert.deepEqual(lockingSystems.writes, []);
  });
});

describe('PeopleService: delete', () => {
  test("the person's keys are revoked, their webhook payloads forgotten, person.deleted emitted and then their contact details forgotten, all in the deletion's transaction", async () => {
    const { service, db, lockingSystems, writes, events } = fixture([personRow()]);
    await service.delete(caller(), PERSON_ID);
    assert.deepEqual(lockingSystems.writes, [`${ACCOUNT} person.delete ${PERSON_ID}`]);
    assert.deepEqual(db.committed, ['tx1']);
    assert.deepEqual(writes(), [
      `tx1 softDeletePerson ${PERSON_ID}`,
      `tx1 forgetPersonInDeliveries ${PERSON_ID}`,
      `tx1 revokeEverythingOf ${PERSON_ID}`,
      'tx1 emitDomainEvent person.deleted',
      `tx1 forgetContactDetails ${PERSON_ID}`,
    ]);
    assert.deepEqual(events[0]!.data, { id: PERSON_ID, name: 'Ada Lovelace', email: 'ada@example.com', location: { id: 71, name: 'North' } });
  });

  test('deleted meanwhile by another request: one event only, nothing revoked twice', async () => {
    const { service, lockingSystems, rows, writes, events } = fixture([personRow()]);
    // Another request's deletion commits while this one writes to the locking system.
    lockingSystems.answer = () => ((rows.get(PERSON_ID)!.deleted = true), 'applied');
    await service.delete(caller(), PERSON_ID);
    assert.deepEqual(writes(), [`tx1 softDeletePerson ${PERSON_ID}`]);
    assert.deepEqual(events, []);
  });

  test('the locking system refuses: 409, the person stays, nothing revoked', async () => {
    const { service, db, lockingSystems, rows, writes } = fixture([personRow()]);
    lockingSystems.answer = () => 'reject';
    assert.equal((await refusal(service.delete(caller(), PERSON_ID))).code, 'lockingsystem_rejected');
    assert.deepEqual(db.begun, []);
    assert.deepEqual(writes(), []);
    assert.equal(rows.get(PERSON_ID)!.deleted, false);
  });
});

describe('PeopleService: reads', () => {
  test('GET /people?phone= that is not an international number is a 400 and reads nothing', async () => {
    const { service, log } = fixture();
    assert.equal((await refusal(service.listJson(caller(), { phone: '020 7946 0958' }))).status, 400);
    assert.deepEqual(log, []);
  });
});
