// The locking-system port. When an account syncs with an external locking system, person (and later key)
// changes are written there first; a refusal answers 409 lockingsystem_rejected and nothing is saved.
// Adapters: none (locking_system null), the built-in sandbox simulator, and those other modules register
// (UHPPOTE controllers: src/modules/controllers).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { accountExists, findSandboxSettings, recordSandboxWrite, saveSandboxSettings, type SandboxSettings } from './store.ts';

export type LockingSystemOperation =
  | 'person.create'
  | 'person.update'
  | 'person.delete'
  | 'key.create'
  | 'key.update'
  | 'key.delete';

/** `applied`: done (a key change is confirmed at once); `held`: accepted, confirmed later. */
export type WriteOutcome = 'applied' | 'held';

/** A key change not yet saved, as the locking system must be told it (written first). */
export interface KeyChange {
  securityGroups: string[];
  startsAt: Date;
  expiresAt: Date | null;
}

export interface LockingSystem {
  /**
   * Writes one change; throws errors.lockingSystemRejected() when the system refuses it. `change`: what a key
   * becomes, for a key.update written before it is saved.
   */
  write(operation: LockingSystemOperation, entityId: string, change?: KeyChange): Promise<WriteOutcome>;
  /**
   * A queued write (tasks.ts), after the change committed: brings the system in line with what Latchkey holds
   * now; throws to be tried again later. Without it, the task writes again.
   */
  finish?(operation: LockingSystemOperation, entityId: string): Promise<void>;
  /** Why the system cannot hold this (normalised) credential, or null; checked when a key is given one. */
  checkCredential?(credential: string): string | null;
}

/** Builds the locking system of an account, for a kind other modules provide. */
export type LockingSystemFactory = (accountId: number) => LockingSystem;


const noLockingSystem: LockingSystem = { write: async () => 'applied' };

export type SandboxMode = 'accept' | 'reject' | 'hold';

/** The simulator: a mode per account (accept, reject, hold) and an optional real-time delay per write. */
class SandboxLockingSystem implements LockingSystem {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly accountId: number,
  ) {}

  async write(operation: LockingSystemOperation, entityId: string): Promise<WriteOutcome> {
    const settings = await findSandboxSettings(this.db, this.accountId);
    if (settings && settings.delay_ms > 0) await sleep(settings.delay_ms);
    if (settings?.mode === 'reject') throw errors.lockingSystemRejected();
    await recordSandboxWrite(this.db, this.accountId, operation, entityId, this.clock.now());
    // Hold mode accepts every write but leaves key changes unconfirmed until the sandbox confirms them.
    return settings?.mode === 'hold' && operation === 'key.update' ? 'held' : 'applied';
  }
}

/** How the simulator answers for one account from now on; an unknown account is a 422 on `account_id`. */
export async function configureSandbox(db: Database, accountId: number, settings: SandboxSettings): Promise<void> {
  if (!(await accountExists(db, accountId))) throw errors.invalidField('account_id', `No account with id ${accountId}.`);
  await saveSandboxSettings(db, accountId, settings);
}

export class LockingSystems {
  private readonly kinds = new Map<string, LockingSystemFactory>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** A kind of locking system another module provides (`uhppote`). */
  register(kind: string, factory: LockingSystemFactory): void {
    this.kinds.set(kind, factory);
  }

  /** The locking system an account syncs with (accounts.locking_system). */
  forAccount(account: { id: number; lockingSystem: string | null }): LockingSystem {
    if (account.lockingSystem === 'sandbox') return new SandboxLockingSystem(this.db, this.clock, account.id);
    const factory = account.lockingSystem === null ? undefined : this.kinds.get(account.lockingSystem);
    return factory ? factory(account.id) : noLockingSystem;
  }
}
