// The SQL of the locking-system area: the table of pending locking-system writes (tasks) and the
// sandbox simulator's settings and record of writes.
import type { Queryable } from '../../platform/db/index.ts';
import { dueAndUnleased, type Lease } from '../../platform/work-queue.ts';
import type { LockingSystemOperation, SandboxMode } from './connector.ts';

// ---- tasks ------------------------------------------------------------------------------------

export interface ClaimedTask {
  id: number;
  account_id: number;
  operation: LockingSystemOperation;
  entity_id: string;
  /** Attempts so far, this one included. */
  attempts: number;
}

export async function insertTask(
  db: Queryable,
  task: { accountId: number; operation: LockingSystemOperation; entityId: string },
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO locking_system_tasks (account_id, operation, entity_id, status, next_attempt_at, created_at)
     VALUES ($1, $2, $3, 'pending', $4, $4)`,
    [task.accountId, task.operation, task.entityId, now],
  );
}

/** Claims up to `limit` due tasks until `claimedUntil`, counting the attempt; other instances skip them. */
export async function claimDueTasks(db: Queryable, lease: Lease): Promise<ClaimedTask[]> {
  return db.query<ClaimedTask>(
    `UPDATE locking_system_tasks SET claimed_until = $2, attempts = attempts + 1
      WHERE id IN (SELECT id FROM locking_system_tasks WHERE ${dueAndUnleased()}
                    ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING id, account_id, operation, entity_id, attempts`,
    [lease.now, lease.until, lease.batchSize],
  );
}

/** An account's waiting tasks become due now (its locking system is reachable again). */
export async function makeTasksDue(db: Queryable, accountId: number, now: Date): Promise<number> {
  const rows = await db.query(
    `UPDATE locking_system_tasks SET next_attempt_at = $2 WHERE account_id = $1 AND status = 'pending' AND next_attempt_at > $2 RETURNING id`,
    [accountId, now],
  );
  return rows.length;
}

export async function markTaskDone(db: Queryable, id: number): Promise<void> {
  await db.query(`UPDATE locking_system_tasks SET status = 'done', claimed_until = NULL, last_error = NULL WHERE id = $1`, [id]);
}

export async function scheduleTaskRetry(db: Queryable, id: number, nextAttemptAt: Date, error: string): Promise<void> {
  await db.query(`UPDATE locking_system_tasks SET next_attempt_at = $2, claimed_until = NULL, last_error = $3 WHERE id = $1`, [
    id,
    nextAttemptAt,
    error,
  ]);
}

/** The locking system an account syncs with (accounts.locking_system), or null when there is no such account. */
export async function findAccountLockingSystem(db: Queryable, accountId: number): Promise<{ id: number; locking_system: string | null } | null> {
  const [row] = await db.query<{ id: number; locking_system: string | null }>('SELECT id, locking_system FROM accounts WHERE id = $1', [accountId]);
  return row ?? null;
}

// ---- the sandbox simulator --------------------------------------------------------------------

export interface SandboxSettings {
  mode: SandboxMode;
  delay_ms: number;
}

export async function findSandboxSettings(db: Queryable, accountId: number): Promise<SandboxSettings | null> {
  const [row] = await db.query<SandboxSettings>('SELECT mode, delay_ms FROM sandbox_locking_systems WHERE account_id = $1', [accountId]);
  return row ?? null;
}

export async function saveSandboxSettings(db: Queryable, accountId: number, settings: SandboxSettings): Promise<void> {
  await db.query(
    `INSERT INTO sandbox_locking_systems (account_id, mode, delay_ms) VALUES ($1, $2, $3)
     ON CONFLICT (account_id) DO UPDATE SET mode = EXCLUDED.mode, delay_ms = EXCLUDED.delay_ms`,
    [accountId, settings.mode, settings.delay_ms],
  );
}

export async function recordSandboxWrite(db: Queryable, accountId: number, operation: LockingSystemOperation, entityId: string, at: Date): Promise<void> {
  await db.query('INSERT INTO sandbox_locking_system_writes (account_id, operation, entity_id, at) VALUES ($1, $2, $3, $4)', [
    accountId,
    operation,
    entityId,
    at,
  ]);
}

export async function accountExists(db: Queryable, accountId: number): Promise<boolean> {
  return (await db.query('SELECT id FROM accounts WHERE id = $1', [accountId])).length > 0;
}
