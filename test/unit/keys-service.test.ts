// The rules of KeysService on a fake store (no database, no server): what a change of a key may touch, the
// locking system written first and its refusal saving nothing, the state a change leaves (kept, `sent` or
// `handed_over` with key.activated), revocation in one transaction with its event once, and the
// confirmations of held changes.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Caller } from '../../src/platform/auth.ts';
import { PageCaches } from '../../src/platform/page-cache.ts';
import { KeysService, type KeysStore } from '../../src/modules/keys/service.ts';
import type { AccountRow, KeyRow } from '../../src/modules/keys/store.ts';
import { FakeDatabase, FakeLockingSystems, fixedClock, refusal, where } from '../helpers/fake-database.ts';

/** Account 1 syncs with an external locking system; account 2 has none (its gateways are the locking system). */
const EXTERNAL = 1;
const OWN_GATEWAYS = 2;
const ACCOUNTS: AccountRow[] = [
  { id: EXTERNAL, sms_enabled: false, locking_system: 'sandbox' },
  { id: OWN_GATEWAYS, sms_enabled: false, locking_system: null },
];
const GROUPS = new Set(['staff', 'night']);
const STARTS = new Date('2026-11-01T00:00:00Z');

const caller = (accountId = EXTERNAL): Caller => ({
  apiKeyId: 1,
  apiKeyName: 'test',
  prefix: 'lk_test',
  accountId,
  locationId: accountId * 10,
  scopes: new Set(),
  lockAllowlist: new Set(),
  reseller: false,
  expiresAt: new Date('2099-01-01T00:00:00Z'),
  revoked: false,
});

function keyRow(values: Partial<KeyRow> = {}): KeyRow {
  const accountId = values.account_id ?? EXTERNAL;
  return {
    id: 5,
    account_id: accountId,
    person_id: '01900000-0000-7000-8000-000000000001',
    person_name: 'Ada Lovelace',
    person_email: 'ada@example.com',
    person_location_id: accountId * 10,
    invitation_id: 3,
    type: 'digital',
    name: 'Front door',
    state: 'handed_over',
    security_groups: ['staff'],
    starts_at: STARTS,
    expires_at: null,
    managed_in_locking_system: false,
    credential_box: null,
    ...values,
  };
}

/** Keys in memory; every call is logged as "<where> <function> <ids>" in the order made. */
function fakeStore(keys: KeyRow[]) {
  const rows = new Map(keys.map((k) => [k.id, { ...k, revoked: false }]));
  const log: string[] = [];
  const events: Array<{ type: string; key: number; state: string; in: string }> = [];
  const live = (scope: number | null) => [...rows.values()].filter((k) => !k.revoked && (scope === null || k.person_location_id === scope));
  /** `sent` keys of the accounts `which` selects become `handed_over`; their ids. */
  const confirm = (ids: number[] | null, which: (a: AccountRow) => boolean, accountId?: number) =>
    live(null)
      .filter((k) => (ids === null || ids.includes(k.id)) && (accountId === undefined || k.account_id === accountId))
      .filter((k) => k.state === 'sent' && which(ACCOUNTS.find((a) => a.id === k.account_id)!))
      .map((k) => ((k.state = 'handed_over'), k.id));
  const store: KeysStore = {
    async findKey(db, scope, id) {
      log.push(`${where(db)} findKey ${id}`);
      const row = live(scope).find((k) => k.id === id);
      return row ? { ...row } : null;
    },
    async lockLiveKey(db, id) {
      log.push(`${where(db)} lockLiveKey ${id}`);
      const row = live(null).find((k) => k.id === id);
      return row ? { ...row } : null;
    },
    async keysPageJson(db) {
      log.push(`${where(db)} keysPageJson`);
      return '{"data":[],"next_cursor":null}';
    },
    async keysOfPerson(db) {
      log.push(`${where(db)} keysOfPerson`);
      return [];
    },
    async liveKeysOfPerson(db, personId) {
      log.push(`${where(db)} liveKeysOfPerson`);
      return live(null).filter((k) => k.person_id === personId);
    },
    async updateKey(db, id, values) {
      log.push(`${where(db)} updateKey ${id} ${values.state}`);
      const row = rows.get(id)!;
      Object.assign(row, { name: values.name, security_groups: values.groups, starts_at: values.startsAt, expires_at: values.expiresAt, state: values.state });
    },
    async markKeyRevoked(db, id) {
      log.push(`${where(db)} markKeyRevoked ${id}`);
      const row = rows.get(id);
      if (!row || row.revoked) return false;
      Object.assign(row, { revoked: true, state: 'returned' });
      return true;
    },
    async confirmAppliedKeys(db, ids) {
      log.push(`${where(db)} confirmAppliedKeys`);
      return confirm(ids, (a) => a.locking_system === null);
    },
    async confirmHeldKeys(db, accountId) {
      log.push(`${where(db)} confirmHeldKeys ${accountId}`);
      return confirm(null, () => true, accountId);
    },
    async confirmLockingSystemKeys(db, ids) {
      log.push(`${where(db)} confirmLockingSystemKeys`);
      return confirm(ids, (a) => a.locking_system !== null);
    },
    async findAccount(db, id) {
      log.push(`${where(db)} findAccount ${id}`);
      return ACCOUNTS.find((a) => a.id === id) ?? null;
    },
    async unknownSecurityGroups(db, _locationId, codes) {
      log.push(`${where(db)} unknownSecurityGroups`);
      return codes.flatMap((code, index) => (GROUPS.has(code) ? [] : [{ field: `security_groups[${index}]`, code: 'unknown_security_group', message: code }]));
    },
    async queueLockingSystemTask(db, task) {
      log.push(`${where(db)} queueLockingSystemTask ${task.operation} ${task.entityId}`);
    },
    async emitKeyEvent(db, type, key) {
      log.push(`${where(db)} emitKeyEvent ${type} ${key.id}`);
      events.push({ type, key: key.id, state: key.state, in: where(db) });
    },
  };
  return { store, rows, log, events };
}

function fixture(keys: KeyRow[] = [keyRow()], options: { revocationEnabled?: boolean } = {}) {
  const db = new FakeDatabase();
  const lockingSystems = new FakeLockingSystems();
  const { store, rows, log, events } = fakeStore(keys);
  const service = new KeysService(
    {
      db,
      clock: fixedClock(),
      lockingSystems,
      revocationEnabled: options.revocationEnabled ?? true,
      pages: new PageCaches(false),
      access: {
        async refresh(tx, accountId, keyIds, awaiting = []) {
          log.push(`${where(tx)} refresh ${accountId} [${keyIds?.join(',')}] awaiting [${awaiting.join(',')}]`);
          return [];
        },
      },
    },
    store,
  );
  /** The calls that changed something: writes of the store and of the access lists. */
  const writes = () => log.filter((line) => !/ (find\w*|lockLiveKey|list\w*|keysOfPerson|liveKeysOfPerson|unknownSecurityGroups)( |$)/.test(line));
  return { service, store, db, lockingSystems, rows, log, writes, events };
}

describe('KeysService: a change of a key', () => {
  test('a fob managed in the locking system: its access cannot change (422 naming each field), its name can', async () => {
    const { service, lockingSystems, writes } = fixture([keyRow({ type: 'fob', managed_in_locking_system: true })]);
    const error = await refusal(service.updateKey(caller(), 5, { name: 'Fob 2', security_groups: ['night'], expires_at: null }));
    assert.equal(error.status, 422);
    assert.deepEqual(error.details?.map((d) => `${d.field} ${d.code}`), ['security_groups not_editable', 'expires_at not_editable']);
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(writes(), []);
    assert.equal((await service.updateKey(caller(), 5, { name: 'Fob 2' })).name, 'Fob 2');
  });

  test('every problem at once (bad date-time, unknown group, expiry not after start), before the locking system is asked', async () => {
    const { service, lockingSystems, writes } = fixture();
    const error = await refusal(service.updateKey(caller(), 5, { starts_at: 'yesterday', security_groups: ['staff', 'cleaners'] }));
    assert.deepEqual(error.details?.map((d) => `${d.field} ${d.code}`), ['starts_at invalid', 'security_groups[1] unknown_security_group']);
    const order = await refusal(service.updateKey(caller(), 5, { starts_at: '2026-12-01T00:00:00Z', expires_at: '2026-12-01T00:00:00Z' }));
    assert.deepEqual(order.details?.map((d) => `${d.field} ${d.code}`), ['expires_at invalid'], 'an expiry equal to the start is not after it');
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(writes(), []);
  });

  test('a change that changes nothing (groups in another order, the same instant in another zone) is not written anywhere', async () => {
    const { service, db, lockingSystems, writes, events } = fixture([keyRow({ security_groups: ['staff', 'night'] })]);
    const key = await service.updateKey(caller(), 5, { name: 'Front door', security_groups: ['night', 'staff'], starts_at: '2026-11-01T01:00:00+01:00' });
    assert.equal(key.state, 'handed_over');
    assert.deepEqual(lockingSystems.writes, []);
    assert.deepEqual(db.begun, []);
    assert.deepEqual(writes(), []);
    assert.deepEqual(events, []);
  });

  test('the locking system refuses: 409 lockingsystem_rejected, nothing saved, no transaction', async () => {
    const { service, db, lockingSystems, writes, events } = fixture();
    lockingSystems.answer = () => 'reject';
    const error = await refusal(service.updateKey(caller(), 5, { security_groups: ['night'] }));
    assert.equal(error.code, 'lockingsystem_rejected');
    assert.deepEqual(lockingSystems.writes, [`${EXTERNAL} key.update 5`]);
    assert.deepEqual(db.begun, []);
    assert.deepEqual(writes(), []);
    assert.deepEqual(events, []);
  });

  test('the locking system took the change but the save failed: it is put back to the key as saved, and the failure answered', async () => {
    const { service, db, lockingSystems } = fixture();
    db.failNextCommit = new Error('connection lost');
    await assert.rejects(service.updateKey(caller(), 5, { security_groups: ['night'] }), /connection lost/);
    assert.deepEqual(db.rolledBack, ['tx1']);
    assert.deepEqual(lockingSystems.writes, [`${EXTERNAL} key.update 5`, `${EXTERNAL} key.update 5`]);
    assert.deepEqual(lockingSystems.changes, [{ securityGroups: ['night'], startsAt: STARTS, expiresAt: null }, null], 'the second write carries no change: the key as saved');
    // The put-back failing too still answers the save's failure (reconciliation brings the system in line).
    const again = fixture();
    again.db.failNextCommit = new Error('connection lost');
    let writes = 0;
    again.lockingSystems.answer = () => (++writes === 2 ? 'reject' : 'applied');
    await assert.rejects(again.service.updateKey(caller(), 5, { security_groups: ['night'] }), /connection lost/);
    assert.equal(again.lockingSystems.writes.length, 2);
  });

  test('a rename keeps the state and touches no access list; no event', async () => {
    const { service, lockingSystems, writes, events } = fixture([keyRow({ state: 'sent' })]);
    const key = await service.updateKey(caller(), 5, { name: 'Back door' });
    assert.equal(key.state, 'sent');
    assert.deepEqual(lockingSystems.writes, [`${EXTERNAL} key.update 5`], 'the locking system is told of a rename too');
    assert.deepEqual(writes(), ['tx1 updateKey 5 sent']);
    assert.deepEqual(events, []);
  });

  test('an access change the locking system applied: handed_over, access lists refreshed and key.activated, in one transaction', async () => {
    const { service, db, writes, events } = fixture([keyRow({ state: 'sent' })]);
    const key = await service.updateKey(caller(), 5, { security_groups: ['staff', 'night'] });
    assert.equal(key.state, 'handed_over');
    assert.deepEqual(db.committed, ['tx1']);
    assert.deepEqual(writes(), ['tx1 updateKey 5 handed_over', `tx1 refresh ${EXTERNAL} [5] awaiting []`, 'tx1 emitKeyEvent key.activated 5']);
    assert.deepEqual(events, [{ type: 'key.activated', key: 5, state: 'handed_over', in: 'tx1' }]);
  });

  test('an access change the locking system held: sent, and no event until it confirms', async () => {
    const { service, lockingSystems, writes, events } = fixture();
    lockingSystems.answer = () => 'held';
    const key = await service.updateKey(caller(), 5, { expires_at: '2027-01-01T00:00:00Z' });
    assert.equal(key.state, 'sent');
    assert.deepEqual(writes(), ['tx1 updateKey 5 sent', `tx1 refresh ${EXTERNAL} [5] awaiting []`]);
    assert.deepEqual(events, []);
  });

  test('a key revoked while the locking system answered: 404, nothing written to it, and its removal queued again', async () => {
    const { service, rows, lockingSystems, writes, events } = fixture();
    const revoke = () => void Object.assign(rows.get(5)!, { revoked: true, state: 'returned' });
    lockingSystems.answer = () => (revoke(), 'applied');
    const error = await refusal(service.updateKey(caller(), 5, { security_groups: ['night'] }));
    assert.equal(error.status, 404);
    assert.deepEqual(writes(), ['tx1 queueLockingSystemTask key.delete 5']);
    assert.deepEqual(events, []);
  });

  test('a key returned while the locking system answered: an access change is 422 not_editable and the locking system is put back; a rename keeps returned', async () => {
    const { service, rows, lockingSystems, writes, events } = fixture();
    const returnIt = () => void Object.assign(rows.get(5)!, { state: 'returned' });
    lockingSystems.answer = () => (returnIt(), 'applied');
    const error = await refusal(service.updateKey(caller(), 5, { name: 'Back', starts_at: '2026-12-01T00:00:00Z' }));
    assert.deepEqual(error.details?.map((d) => `${d.field} ${d.code}`), ['starts_at not_editable']);
    assert.deepEqual(writes(), ['tx1 queueLockingSystemTask key.update 5']);
    assert.deepEqual(events, []);
    assert.equal(rows.get(5)!.state, 'returned');

    const renamed = fixture();
    renamed.lockingSystems.answer = () => (Object.assign(renamed.rows.get(5)!, { state: 'returned' }), 'applied');
    assert.equal((await renamed.service.updateKey(caller(), 5, { name: 'Back' })).state, 'returned');
    assert.deepEqual(renamed.writes(), ['tx1 updateKey 5 returned']);
  });

  test("without an external locking system, a key presenting a credential waits (sent) for the gateways; one without is handed over at once", async () => {
    const withCredential = fixture([keyRow({ account_id: OWN_GATEWAYS, credential_box: 'sealed' })]);
    const waiting = await withCredential.service.updateKey(caller(OWN_GATEWAYS), 5, { security_groups: ['night'] });
    assert.equal(waiting.state, 'sent');
    assert.deepEqual(withCredential.writes(), ['tx1 updateKey 5 sent', `tx1 refresh ${OWN_GATEWAYS} [5] awaiting [5]`]);
    assert.deepEqual(withCredential.events, []);

    const without = fixture([keyRow({ account_id: OWN_GATEWAYS })]);
    assert.equal((await without.service.updateKey(caller(OWN_GATEWAYS), 5, { security_groups: ['night'] })).state, 'handed_over');
    assert.deepEqual(without.writes(), ['tx1 updateKey 5 handed_over', `tx1 refresh ${OWN_GATEWAYS} [5] awaiting []`, 'tx1 emitKeyEvent key.activated 5']);
  });
});

describe('KeysService: revocation', () => {
  test('switched off on this server: 503 and nothing read or written', async () => {
    const { service, log } = fixture([keyRow()], { revocationEnabled: false });
    assert.equal((await refusal(service.revokeKey(caller(), 5))).status, 503);
    assert.deepEqual(log, []);
  });

  test('the key is revoked, the access lists refreshed, its removal from the locking system queued and key.revoked emitted, in one transaction', async () => {
    const { service, db, lockingSystems, writes, events } = fixture();
    await service.revokeKey(caller(), 5);
    assert.deepEqual(db.committed, ['tx1']);
    assert.deepEqual(writes(), ['tx1 markKeyRevoked 5', `tx1 refresh ${EXTERNAL} [5] awaiting []`, 'tx1 queueLockingSystemTask key.delete 5', 'tx1 emitKeyEvent key.revoked 5']);
    assert.deepEqual(events, [{ type: 'key.revoked', key: 5, state: 'returned', in: 'tx1' }], 'the event shows the key returned');
    assert.deepEqual(lockingSystems.writes, [], 'the locking system is written later, by the queued task, never inside the transaction');
  });

  test('without an external locking system nothing is queued', async () => {
    const { service, writes } = fixture([keyRow({ account_id: OWN_GATEWAYS })]);
    await service.revokeKey(caller(OWN_GATEWAYS), 5);
    assert.deepEqual(writes(), ['tx1 markKeyRevoked 5', `tx1 refresh ${OWN_GATEWAYS} [5] awaiting []`, 'tx1 emitKeyEvent key.revoked 5']);
  });

  test('revoked meanwhile by another request: no event, nothing queued or refreshed (the other request did it)', async () => {
    const { service, store, log, writes, events } = fixture();
    // Another request revoked the key after this one read it: the store's update finds it revoked already.
    store.markKeyRevoked = async (db, id) => (log.push(`${where(db)} markKeyRevoked ${id}`), false);
    await service.revokeKey(caller(), 5);
    assert.deepEqual(writes(), ['tx1 markKeyRevoked 5']);
    assert.deepEqual(events, []);
  });

  test("a person's deletion: each of their live keys is revoked inside the deletion's transaction, none of another person's", async () => {
    const other = '01900000-0000-7000-8000-000000000002';
    const { service, db, writes, events } = fixture([keyRow({ id: 5 }), keyRow({ id: 6 }), keyRow({ id: 7, person_id: other })]);
    await db.transaction((tx) => service.revokeKeysOf(tx, keyRow().person_id, new Date()));
    assert.deepEqual(writes().filter((line) => line.includes('markKeyRevoked')), ['tx1 markKeyRevoked 5', 'tx1 markKeyRevoked 6']);
    assert.deepEqual(events.map((e) => `${e.in} ${e.type} ${e.key}`), ['tx1 key.revoked 5', 'tx1 key.revoked 6']);
  });

  test("a person's move refreshes their live keys' access in the move's transaction, and nothing when they hold none", async () => {
    const { service, db, writes } = fixture([keyRow({ id: 5 }), keyRow({ id: 6 })]);
    await db.transaction((tx) => service.personMoved(tx, keyRow().person_id, EXTERNAL));
    await db.transaction((tx) => service.personMoved(tx, '01900000-0000-7000-8000-0000000000aa', EXTERNAL));
    assert.deepEqual(writes(), [`tx1 refresh ${EXTERNAL} [5,6] awaiting []`]);
  });
});

describe('KeysService: confirmations of held changes', () => {
  test('each key the locking system confirms becomes handed_over with its key.activated, in the confirmation\'s transaction', async () => {
    const { service, events } = fixture([keyRow({ id: 5, state: 'sent' }), keyRow({ id: 6, state: 'sent' }), keyRow({ id: 7, state: 'handed_over' })]);
    assert.equal(await service.confirmLockingSystemWrites([5, 6, 7]), 2);
    assert.deepEqual(events, [
      { type: 'key.activated', key: 5, state: 'handed_over', in: 'tx1' },
      { type: 'key.activated', key: 6, state: 'handed_over', in: 'tx1' },
    ]);
  });

  test('an empty confirmation opens no transaction', async () => {
    const { service, db } = fixture();
    assert.equal(await service.confirmLockingSystemWrites([]), 0);
    assert.deepEqual(db.begun, []);
  });

  test("the sandbox's confirmation of an account's held changes: key.activated for each", async () => {
    const { service, events } = fixture([keyRow({ id: 5, state: 'sent' }), keyRow({ id: 8, state: 'sent', account_id: OWN_GATEWAYS })]);
    assert.equal(await service.confirmHeldChanges(EXTERNAL), 1);
    assert.deepEqual(events.map((e) => `${e.type} ${e.key}`), ['key.activated 5']);
  });

  test("the gateways' confirmation: inside the caller's transaction, key.activated for each key applied", async () => {
    const { service, db, events } = fixture([keyRow({ id: 5, state: 'sent', account_id: OWN_GATEWAYS })]);
    await db.transaction((tx) => service.confirmApplied(tx, [5]));
    assert.deepEqual(events, [{ type: 'key.activated', key: 5, state: 'handed_over', in: 'tx1' }]);
  });
});
