// The SQL of the locking-system area: the sandbox simulator's settings and record of writes.
import type { Queryable } from '../../platform/db/index.ts';
import type { LockingSystemOperation, SandboxMode } from './connector.ts';

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
