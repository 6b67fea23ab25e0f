// Starting the locking-system module (src/platform/module.ts): each account's locking system and the queue
// of its writes that finish asynchronously.
import type { Core, Module } from '../../platform/module.ts';
import { LockingSystems } from './connector.ts';
import { lockingSystemSandboxRoutes } from './sandbox-routes.ts';
import { lockingSystemTasksJob } from './tasks.ts';

export interface LockingSystem extends Module {
  systems: LockingSystems;
  /** Runs the tasks due now (the work queue's job), rather than at its next run. */
  runTasksNow(): Promise<number>;
}

export function startLockingSystem(core: Core): LockingSystem {
  const systems = new LockingSystems(core.db, core.clock);
  const tasks = lockingSystemTasksJob(core.db, core.clock, systems);
  core.jobs.register(tasks);
  return { systems, runTasksNow: () => tasks.run(), sandboxRoutes: (app) => lockingSystemSandboxRoutes(app, core.db) };
}
