// Locking-system writes that finish asynchronously (a revoked key's removal, README: API notes,
// Revocation): queued as tasks in the caller's transaction, then written by a job that any instance runs,
// claiming tasks through the work queue (docs/work-queue.md) and retrying a refused write on its ladder
// until it succeeds: tasks have no end state.
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import { STANDARD_LADDER_SECONDS, WorkQueue, type WorkKind } from '../../platform/work-queue.ts';
import type { LockingSystemOperation, LockingSystems } from './connector.ts';
import { claimDueTasks, findAccountLockingSystem, insertTask, makeTasksDue, markTaskDone, scheduleTaskRetry } from './store.ts';

/** The standard ladder, no end state (the last rung repeats until the write is accepted), exact times. */
export const TASK_WORK: WorkKind = {
  name: 'locking-system-tasks',
  ladderSeconds: STANDARD_LADDER_SECONDS,
  endState: null,
  jitterRatio: 0,
  retryAfterCapSeconds: 86_400,
  leaseSeconds: 120,
  batchSize: 20,
};

/** Queues a write inside the caller's transaction, so it is done only if the change that needs it commits. */
export async function queueLockingSystemTask(
  tx: Queryable,
  task: { accountId: number; operation: LockingSystemOperation; entityId: string },
  now: Date,
): Promise<void> {
  await insertTask(tx, task, now);
}

/** The account's locking system is reachable again: its waiting tasks are tried at the next run, not at their rung. */
export async function retryTasksNow(db: Queryable, accountId: number, now: Date): Promise<number> {
  return makeTasksDue(db, accountId, now);
}

/** The job that writes due tasks to the accounts' locking systems. */
export function lockingSystemTasksJob(db: Database, clock: Clock, lockingSystems: LockingSystems): Job {
  const queue = new WorkQueue(TASK_WORK, { claimDue: (lease) => claimDueTasks(db, lease) }, clock);
  return {
    name: 'locking-system-tasks',
    everySeconds: 10,
    run: async (): Promise<number> => {
      const tasks = await queue.claim();
      for (const task of tasks) {
        try {
          const account = await findAccountLockingSystem(db, task.account_id);
          if (!account) throw new Error(`account ${task.account_id} not found`);
          const system = lockingSystems.forAccount({ id: account.id, lockingSystem: account.locking_system });
          await (system.finish ? system.finish(task.operation, task.entity_id) : system.write(task.operation, task.entity_id));
          await markTaskDone(db, task.id);
        } catch (error) {
          const next = queue.next(task.attempts);
          if (next.retry) await scheduleTaskRetry(db, task.id, next.at, error instanceof Error ? error.message : String(error));
        }
      }
      return tasks.length;
    },
  };
}
