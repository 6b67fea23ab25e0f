// The rules of keys (spec: Key, states; Endpoints/Keys): reads, changes written to the locking system
// first, revocation, and the sandbox's confirmation of changes the locking system held.
import type { Caller } from '../../platform/auth.ts';
import { CATALOG_CHANNEL } from '../../platform/channels.ts';
import type { Database, Queryable, Transaction } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { everyAccount, ROWS_CHANGED, type PageCache } from '../../platform/page-cache.ts';
import { clampLimit, decodeCursor } from '../../platform/pagination.ts';
import { GRANTING_KEY_STATES, type AccessLists } from '../access/index.ts';
import { unknownSecurityGroups } from '../catalog/index.ts';
import { queueLockingSystemTask, type LockingSystems } from '../locking-system/index.ts';
import { accountOf, emitKeyEvent, lockingSystemOf, timestamp, type KeysDeps } from './common.ts';
import { KeyListQuery, type EmbeddedKey, type Key, type KeyUpdate } from './schemas.ts';
import * as storeModule from './store.ts';
import { toKey, type AccountRow, type KeyRow } from './store.ts';

/**
 * What the service reads and writes (Immich's repositories): its store's functions, and the writes of other
 * modules that join its transactions (the catalog's groups, the locking system's task queue, key events).
 * Passed in, so that its rules run in the unit tier on a fake (test/unit/keys-service.test.ts); production
 * takes `keysStore`.
 */
export type KeysStore = Pick<
  typeof storeModule,
  | 'findKey'
  | 'lockLiveKey'
  | 'keysPageJson'
  | 'keysOfPerson'
  | 'liveKeysOfPerson'
  | 'updateKey'
  | 'markKeyRevoked'
  | 'confirmAppliedKeys'
  | 'confirmHeldKeys'
  | 'confirmLockingSystemKeys'
  | 'findAccount'
> & {
  unknownSecurityGroups: typeof unknownSecurityGroups;
  queueLockingSystemTask: typeof queueLockingSystemTask;
  emitKeyEvent: typeof emitKeyEvent;
};

/** 422 not_editable on each access field sent: a key that opens nothing (returned, planning, other) takes only a rename. */
function notEditable(body: KeyUpdate, state: string) {
  const sent = (['security_groups', 'starts_at', 'expires_at'] as const).filter((field) => body[field] !== undefined);
  return errors.validation(sent.map((field) => ({ field, code: 'not_editable', message: `${field} of a key in state ${state} cannot be changed; only its name can.` })));
}

export const keysStore: KeysStore = { ...storeModule, unknownSecurityGroups, queueLockingSystemTask, emitKeyEvent };

/** The part of the keys area's dependencies this service uses (a unit test builds no more). */
export type KeysServiceDeps = Pick<KeysDeps, 'db' | 'clock' | 'revocationEnabled' | 'pages'> & {
  lockingSystems: Pick<LockingSystems, 'forAccount'>;
  access: Pick<AccessLists, 'refresh'>;
};

/** Pages of GET /v1/keys kept per instance, by bytes of JSON; dropped on every change (see PageCache). */
const PAGE_CACHE_BYTES = 8 * 2 ** 20;
const PAGE_CACHE_TTL_MS = 30_000;

export class KeysService {
  private readonly pages: PageCache<typeof KeyListQuery>;

  constructor(
    private readonly deps: KeysServiceDeps,
    private readonly store: KeysStore = keysStore,
  ) {
    this.pages = deps.pages.create({ query: KeyListQuery, maxBytes: PAGE_CACHE_BYTES, ttlMs: PAGE_CACHE_TTL_MS });
  }

  /**
   * Follows what changes a page: keys, people (a key is in scope where its person is) and locations (the
   * scope tree, through the catalog's channel).
   */
  async start(): Promise<void> {
    await this.pages.follow(this.db, [
      { channel: ROWS_CHANGED.keys },
      { channel: ROWS_CHANGED.people },
      { channel: CATALOG_CHANNEL, parse: everyAccount },
    ]);
  }

  /** GET /v1/keys as the JSON sent, from memory when nothing changed since, else as PostgreSQL writes it. */
  async listJson(caller: Caller, query: KeyListQuery): Promise<Buffer> {
    return this.pages.page(caller, query, async () =>
      this.store.keysPageJson(this.db, caller.locationId, this.listFilter(query), decodeCursor(query.cursor, 'number', 'keys'), clampLimit(query.limit)),
    );
  }

  private listFilter(query: KeyListQuery): { personId: string | null; state: string | null; securityGroup: string | null } {
    return { personId: query.person_id ?? null, state: query.state ?? null, securityGroup: query.security_group ?? null };
  }

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  async getKey(caller: Caller, id: number): Promise<Key> {
    const row = await this.store.findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    return toKey(row);
  }

  /** The person's live keys inside a scope, as a Person shows them. */
  async keysOfPerson(scopeLocationId: number, personId: string): Promise<EmbeddedKey[]> {
    return this.store.keysOfPerson(this.db, scopeLocationId, personId);
  }

  async updateKey(caller: Caller, id: number, body: KeyUpdate): Promise<Key> {
    const row = await this.store.findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    const details: ErrorDetail[] = [];
    if (row.managed_in_locking_system) {
      for (const field of ['security_groups', 'starts_at', 'expires_at'] as const) {
        if (body[field] !== undefined) details.push({ field, code: 'not_editable', message: `${field} of a fob managed in the locking system cannot be changed.` });
      }
      if (details.length > 0) throw errors.validation(details);
    }
    const startsAt = body.starts_at === undefined ? row.starts_at : timestamp(body.starts_at, 'starts_at', details);
    const expiresAt = body.expires_at === undefined ? row.expires_at : body.expires_at === null ? null : timestamp(body.expires_at, 'expires_at', details);
    if (body.security_groups) details.push(...(await this.store.unknownSecurityGroups(this.db, row.person_location_id, body.security_groups)));
    if (startsAt && expiresAt && expiresAt.getTime() <= startsAt.getTime()) {
      details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be after starts_at.' });
    }
    if (details.length > 0) throw errors.validation(details);

    const groups = body.security_groups ?? row.security_groups;
    const renamed = body.name !== undefined && body.name !== row.name;
    const accessChanged =
      !sameSet(groups, row.security_groups) || !sameInstant(startsAt, row.starts_at) || !sameInstant(expiresAt, row.expires_at);
    if (!renamed && !accessChanged) return toKey(row);
    // A change is written to the locking system and makes the key `sent`: a key that opens nothing (returned,
    // planning, other) would open doors again. Only its name changes (the spec's transitions start at handed_over).
    if (accessChanged && !(GRANTING_KEY_STATES as readonly string[]).includes(row.state)) throw notEditable(body, row.state);

    const account = await accountOf(this.db, row.account_id, this.store.findAccount);
    // Written to the locking system first; a refusal changes nothing.
    const lockingSystem = lockingSystemOf(this.deps.lockingSystems, account);
    const outcome = await lockingSystem.write('key.update', String(id), { securityGroups: groups, startsAt: startsAt ?? row.starts_at, expiresAt });
    // Without an external one, Latchkey's gateways are the locking system: a key that presents a credential
    // waits (`sent`) until every gateway holding it has applied the change (confirmed in refresh when none does).
    const waitsForGateways = accessChanged && account.locking_system === null && row.credential_box !== null;
    const now = this.now();
    let result: Key | 'gone' | { notGranting: string };
    try {
      result = await this.db.transaction(async (tx): Promise<Key | 'gone' | { notGranting: string }> => {
        // The key as it is now: revoked or returned while the locking system answered, it takes no change, and the
        // locking system, told of this one, is brought back in line with it (a task, retried until it takes).
        const current = await this.store.lockLiveKey(tx, id);
        const stale = !current ? 'gone' : accessChanged && !(GRANTING_KEY_STATES as readonly string[]).includes(current.state) ? { notGranting: current.state } : null;
        if (stale) {
          if (accessChanged && account.locking_system) {
            await this.store.queueLockingSystemTask(tx, { accountId: account.id, operation: stale === 'gone' ? 'key.delete' : 'key.update', entityId: String(id) }, now);
          }
          return stale;
        }
        const live = current as KeyRow;
        // A pure rename keeps the state; any other change is `sent` until the locking system confirms it.
        const state = !accessChanged ? live.state : outcome === 'applied' && !waitsForGateways ? 'handed_over' : 'sent';
        await this.store.updateKey(tx, id, { name: body.name ?? row.name, groups, startsAt: startsAt ?? row.starts_at, expiresAt, state }, now);
        if (accessChanged) await this.deps.access.refresh(tx, row.account_id, [id], waitsForGateways ? [id] : []);
        const updated = (await this.store.findKey(tx, null, id)) as KeyRow;
        if (accessChanged && state === 'handed_over') await this.store.emitKeyEvent(tx, 'key.activated', updated, now);
        return toKey(updated);
      });
    } catch (error) {
      // The locking system took a change the database did not save (a lost connection, a failed commit): it is
      // put back to the key as saved (a write without a change), so that no door opens on a change nobody sees.
      // Should that write fail too, the locking system's reconciliation brings it back in line.
      await lockingSystem.write('key.update', String(id)).catch(() => undefined);
      throw error;
    }
    if (result === 'gone') throw errors.notFound('key');
    if ('notGranting' in result) throw notEditable(body, result.notGranting);
    return result;
  }

  async revokeKey(caller: Caller, id: number): Promise<void> {
    if (!this.deps.revocationEnabled) throw errors.revocationDisabled();
    const row = await this.store.findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    const account = await accountOf(this.db, row.account_id, this.store.findAccount);
    await this.db.transaction((tx) => this.revokeInTransaction(tx, row, account, this.now()));
  }

  /** Inside a person's deletion: every live key of theirs is revoked, as DELETE /keys/{id} would. */
  async revokeKeysOf(tx: Transaction, personId: string, now: Date): Promise<void> {
    for (const row of await this.store.liveKeysOfPerson(tx, personId)) {
      await this.revokeInTransaction(tx, row, await accountOf(tx, row.account_id, this.store.findAccount), now);
    }
  }

  /**
   * Inside a person's move to another location: a key's security groups are read at its holder's location,
   * so what their live keys open may change (gateway lists, online answers).
   */
  async personMoved(tx: Transaction, personId: string, accountId: number): Promise<void> {
    const keyIds = (await this.store.liveKeysOfPerson(tx, personId)).map((row) => row.id);
    if (keyIds.length > 0) await this.deps.access.refresh(tx, accountId, keyIds);
  }

  /** The key expires at once and leaves every read; its removal from the locking system is queued. */
  private async revokeInTransaction(tx: Transaction, row: KeyRow, account: AccountRow, now: Date): Promise<void> {
    if (!(await this.store.markKeyRevoked(tx, row.id, now))) return; // revoked meanwhile: one event only
    await this.deps.access.refresh(tx, row.account_id, [row.id]);
    if (account.locking_system) {
      await this.store.queueLockingSystemTask(tx, { accountId: account.id, operation: 'key.delete', entityId: String(row.id) }, now);
    }
    await this.store.emitKeyEvent(tx, 'key.revoked', { ...row, state: 'returned' }, now);
  }

  /** Keys whose change every gateway holding them has applied: `sent` → `handed_over`, key.activated. */
  async confirmApplied(tx: Queryable, keyIds: number[]): Promise<void> {
    const now = this.now();
    for (const id of await this.store.confirmAppliedKeys(tx, keyIds, now)) await this.store.emitKeyEvent(tx, 'key.activated', (await this.store.findKey(tx, null, id)) as KeyRow, now);
  }

  /** An external locking system confirmed these keys' held changes (`sent` → `handed_over`, key.activated). */
  async confirmLockingSystemWrites(keyIds: number[]): Promise<number> {
    if (keyIds.length === 0) return 0;
    const now = this.now();
    return this.db.transaction(async (tx) => {
      const ids = await this.store.confirmLockingSystemKeys(tx, keyIds, now);
      for (const id of ids) await this.store.emitKeyEvent(tx, 'key.activated', (await this.store.findKey(tx, null, id)) as KeyRow, now);
      return ids.length;
    });
  }

  /** Sandbox: confirms every held key change of an account (`sent` to `handed_over`, key.activated). */
  async confirmHeldChanges(accountId: number): Promise<number> {
    const now = this.now();
    // An unknown account is told as the sandbox's PUT tells it, not confirmed as "0 changes".
    if (!(await this.store.findAccount(this.db, accountId))) throw errors.invalidField('account_id', `No account with id ${accountId}.`);
    return this.db.transaction(async (tx) => {
      const ids = await this.store.confirmHeldKeys(tx, accountId, now);
      for (const id of ids) await this.store.emitKeyEvent(tx, 'key.activated', (await this.store.findKey(tx, null, id)) as KeyRow, now);
      return ids.length;
    });
  }
}

function sameSet(a: string[], b: string[]): boolean {
  const left = new Set(a);
  return left.size === new Set(b).size && b.every((x) => left.has(x));
}

function sameInstant(a: Date | null, b: Date | null): boolean {
  return (a?.getTime() ?? null) === (b?.getTime() ?? null);
}
