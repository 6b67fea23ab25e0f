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
  // Runs started outside the job's loop (a NOTIFY, a board back) are waited for at close, as the loop's own are
  // (JobRunner.stop): an instance stopped mid-write would leave its tasks claimed until their lease ran out
  // (2 minutes), and its late failure would push back a retry that another instance had just made due.
  const inFlight = new Set<Promise<number>>();
  const runTasksNow = (): Promise<number> => {
    const run = tasks.run();
    inFlight.add(run);
    void run.then(
      () => inFlight.delete(run),
      () => inFlight.delete(run),
    );
    return run;
  };
  return {
    systems,
    runTasksNow,
    sandboxRoutes: (app) => lockingSystemSandboxRoutes(app, core.db),
    close: async () => {
      await Promise.allSettled([...inFlight]);
    },
  };
}
