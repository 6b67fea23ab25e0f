// Locking-system writes that finish asynchronously (a revoked key's removal, README: API notes,
// Revocation): queued as tasks in the caller's transaction, then written by a job that any instance runs,
// claiming tasks with SKIP LOCKED and retrying a refused write on the ladder below until it succeeds.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import type { LockingSystemOperation, LockingSystems } from './connector.ts';
import { claimDueTasks, findAccountLockingSystem, insertTask, markTaskDone, scheduleTaskRetry } from './store.ts';

/** Seconds from a failed attempt to the next: after the 1st, the 2nd, …; the last step repeats. */
export const TASK_RETRY_SECONDS = [60, 300, 1800, 7200, 21_600, 86_400];
/** A claim held longer than this (its instance died) lets another instance take the task. */
const TASK_CLAIM_MS = 120_000;
const TASKS_PER_RUN = 20;

/** The wait after the `attempts`-th failed attempt (attempts counts from 1). */
export function retryDelaySeconds(attempts: number): number {
  return TASK_RETRY_SECONDS[Math.min(attempts, TASK_RETRY_SECONDS.length) - 1] ?? 86_400;
}

/** Queues a write inside the caller's transaction, so it is done only if the change that needs it commits. */
export async function queueLockingSystemTask(
  tx: Queryable,
  task: { accountId: number; operation: LockingSystemOperation; entityId: string },
  now: Date,
): Promise<void> {
  await insertTask(tx, task, now);
}

/** The job that writes due tasks to the accounts' locking systems. */
export function lockingSystemTasksJob(db: Database, clock: Clock, lockingSystems: LockingSystems): Job {
  return {
    name: 'locking-system-tasks',
    everySeconds: 10,
    run: async (): Promise<number> => {
      const now = clock.now();
      const tasks = await claimDueTasks(db, now, new Date(now.getTime() + TASK_CLAIM_MS), TASKS_PER_RUN);
      for (const task of tasks) {
        try {
          const account = await findAccountLockingSystem(db, task.account_id);
          if (!account) throw new Error(`account ${task.account_id} not found`);
          await lockingSystems.forAccount({ id: account.id, lockingSystem: account.locking_system }).write(task.operation, task.entity_id);
          await markTaskDone(db, task.id);
        } catch (error) {
          const retryAt = new Date(clock.now().getTime() + retryDelaySeconds(task.attempts) * 1000);
          await scheduleTaskRetry(db, task.id, retryAt, error instanceof Error ? error.message : String(error));
        }
      }
      return tasks.length;
    },
  };
}
