// The locking-system module's surface for the rest of the service: the port to each account's locking
// system, and the queue of writes that finish asynchronously.
export { LockingSystems, type KeyChange, type LockingSystem, type LockingSystemFactory, type LockingSystemOperation, type WriteOutcome } from './connector.ts';
export { lockingSystemTasksJob, queueLockingSystemTask, retryTasksNow } from './tasks.ts';
export { startLockingSystem, type LockingSystem as LockingSystemModule } from './start.ts';
