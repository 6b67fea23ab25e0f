// Fakes for services tested without a database (test/unit): a Database whose transactions are only
// labels, and a locking system that records what it was asked. A service's SQL lives in its store, which
// the unit test fakes too, so any statement reaching these fakes is a bug in the test or the service.
import assert from 'node:assert/strict';
import type { Database, Sql, Transaction } from '../../src/platform/db/database.ts';
import { ApiError, errors } from '../../src/platform/errors.ts';
import type { KeyChange, LockingSystem, LockingSystems } from '../../src/modules/locking-system/index.ts';

/** A transaction of the fake database: a label, so a fake store can say which transaction a write joined. */
export class FakeTransaction implements Transaction {
  constructor(readonly label: string) {}

  async query(sql: Sql): Promise<never> {
    throw new Error(`a fake transaction runs no SQL (the service must call its store): ${typeof sql === 'string' ? sql : sql.name}`);
  }

  async script(): Promise<void> {
    throw new Error('a fake transaction runs no scripts');
  }

  async notify(): Promise<void> {}
}

/** Where a store function ran: outside any transaction ('db') or inside the transaction of this label. */
export function where(db: unknown): string {
  return db instanceof FakeTransaction ? db.label : 'db';
}

export class FakeDatabase implements Database {
  readonly engine = 'pglite' as const;
  /** Labels of the transactions begun, committed and rolled back, in order. */
  readonly begun: string[] = [];
  readonly committed: string[] = [];
  readonly rolledBack: string[] = [];
  /** Set to make the next commit fail (after fn resolved), as a lost connection would. */
  failNextCommit: Error | null = null;

  async query(sql: Sql): Promise<never> {
    throw new Error(`a fake database runs no SQL (the service must call its store): ${typeof sql === 'string' ? sql : sql.name}`);
  }

  async appendRows(table: string): Promise<never> {
    throw new Error(`a fake database appends no rows (the service must call its store): ${table}`);
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const tx = new FakeTransaction(`tx${this.begun.length + 1}`);
    this.begun.push(tx.label);
    let result: T;
    try {
      result = await fn(tx);
    } catch (error) {
      this.rolledBack.push(tx.label);
      throw error;
    }
    const failure = this.failNextCommit;
    if (failure) {
      this.failNextCommit = null;
      this.rolledBack.push(tx.label);
      throw failure;
    }
    this.committed.push(tx.label);
    return result;
  }

  async listen(): Promise<void> {}

  channel(name: string): string {
    return `latchkey_unit_${name}`;
  }

  async close(): Promise<void> {}
}

export type LockingSystemAnswer = 'applied' | 'held' | 'reject';

/**
 * The locking systems of every account as one recording fake: `answer` decides each write (default
 * 'applied'); 'reject' throws lockingsystem_rejected as a connector does when the system refuses.
 */
export class FakeLockingSystems implements Pick<LockingSystems, 'forAccount'> {
  readonly writes: string[] = [];
  /** The key change each write carried, in the order of `writes` (null: a write of the key as saved). */
  readonly changes: Array<KeyChange | null> = [];
  answer: (operation: string, entityId: string) => LockingSystemAnswer = () => 'applied';

  forAccount(account: { id: number; lockingSystem: string | null }): LockingSystem {
    return {
      write: async (operation, entityId, change) => {
        this.writes.push(`${account.id} ${operation} ${entityId}`);
        this.changes.push(change ?? null);
        const answer = this.answer(operation, entityId);
        if (answer === 'reject') throw errors.lockingSystemRejected();
        return answer;
      },
    };
  }
}

/** A clock standing still at `at`. */
export function fixedClock(at = '2026-11-20T08:00:00.000Z'): { now(): Date } {
  const now = new Date(at);
  return { now: () => new Date(now) };
}

/** The ApiError a service's call is refused with (fails the test when it succeeds or throws anything else). */
export async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a refusal');
}
