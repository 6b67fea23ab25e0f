// UHPPOTE boards as an account's external locking system (spec: "written to that system first"). A key change
// is written to every board of the account before it is saved: a board that answers "no" refuses it (409
// lockingsystem_rejected, and the boards already written are put back); a board that does not answer takes the
// change later from the one work queue, and the key stays `sent` until every board holds it. Boards hold no
// people: person writes succeed, and their keys follow through the key writes.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Transaction } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { queueLockingSystemTask, type KeyChange, type LockingSystem, type LockingSystemOperation, type WriteOutcome } from '../locking-system/index.ts';
import type { ControllerSync, SyncOutcome } from './sync.ts';
import { cardNumberOf } from './uhppote/card-number.ts';

/** A task's entity when every key of the account is to be brought in line (rules, doors or a zone changed). */
export const EVERY_KEY = '*';

export interface UhppoteWritesDeps {
  db: Database;
  clock: Clock;
  sync: ControllerSync;
  log: FastifyBaseLogger;
  /** Held key changes every board now holds: `sent` → `handed_over` (the keys module). */
  confirmKeys: (keyIds: number[]) => Promise<unknown>;
}

/** Queues, in the change's transaction, the writes that bring the account's boards in line with it. */
export async function queueBoardWrites(tx: Transaction, accountId: number, keyIds: number[] | null, now: Date): Promise<void> {
  const entities = keyIds === null ? [EVERY_KEY] : keyIds.map(String);
  for (const entityId of entities) await queueLockingSystemTask(tx, { accountId, operation: 'key.update', entityId }, now);
}

const describe = (outcome: SyncOutcome): string => [...outcome.refused, ...outcome.problems].join(' ');

export class UhppoteLockingSystem implements LockingSystem {
  constructor(
    private readonly deps: UhppoteWritesDeps,
    private readonly accountId: number,
  ) {}

  async write(operation: LockingSystemOperation, entityId: string, change?: KeyChange): Promise<WriteOutcome> {
    // People live in Latchkey only; a phone key (an invitation's) presents no card a board could hold.
    if (operation.startsWith('person.') || entityId.startsWith('invitation:')) return 'applied';
    const keyId = Number(entityId);
    const proposals = change && operation === 'key.update' ? new Map([[keyId, change]]) : undefined;
    const outcome = await this.deps.sync.syncKeys(this.accountId, [keyId], proposals);
    if (outcome.refused.length > 0 || outcome.problems.length > 0) {
      this.deps.log.warn({ accountId: this.accountId, keyId, reason: describe(outcome) }, 'a controller refused a key change');
      // What was written to the other boards is put back as the key still is.
      if (proposals) await this.deps.sync.syncKeys(this.accountId, [keyId]).catch(() => undefined);
      throw errors.lockingSystemRejected();
    }
    if (outcome.unreachable.length === 0) return 'applied';
    // The change is saved; the board that did not answer gets it from the work queue (the refresh of the
    // change queues it in the change's transaction too: this one covers a write whose save then fails).
    await this.deps.db.transaction((tx) => queueBoardWrites(tx, this.accountId, [keyId], this.deps.clock.now()));
    return 'held';
  }

  /** Boards hold Wiegand-26 card numbers; a phone key's credential never goes to them (it opens through the service). */
  checkCredential(credential: string): string | null {
    if (credential.startsWith('phone:') || cardNumberOf(credential) !== null) return null;
    return 'A UHPPOTE controller holds Wiegand-26 card numbers only (wiegand26:<facility>:<card>); this account uses UHPPOTE controllers.';
  }

  /** A queued write: the boards are brought in line with the key as saved; a board still away throws (retried). */
  async finish(_operation: LockingSystemOperation, entityId: string): Promise<void> {
    if (entityId.startsWith('invitation:')) return; // a phone key's: nothing of it is on a board (see write)
    const keyIds = entityId === EVERY_KEY ? null : [Number(entityId)];
    const outcome = await this.deps.sync.syncKeys(this.accountId, keyIds);
    if (outcome.unreachable.length > 0) throw new Error(`controllers ${outcome.unreachable.join(', ')} did not answer`);
    if (outcome.refused.length > 0) throw new Error(describe(outcome));
    if (keyIds) await this.deps.confirmKeys(keyIds);
  }
}
