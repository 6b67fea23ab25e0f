// The sandbox (SANDBOX=true): a clock that tests and integrators move forward, and later the simulated
// locking system, MQTT publish switch and message outbox.
import { SANDBOX_CLOCK_CHANNEL } from '../../platform/channels.ts';
import type { SandboxClock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import type { JobRunner } from '../../platform/jobs.ts';
import { addToClockOffset, readClockOffset } from './store.ts';

/**
 * How far the sandbox clock may go. Dates are four-digit years everywhere (the spec's timestamps, the
 * database's date-times): this leaves room for what is computed ahead of the clock, such as expiries.
 */
export const SANDBOX_CLOCK_LIMIT = new Date('9000-01-01T00:00:00Z');

export class SandboxService {
  constructor(
    private readonly db: Database,
    readonly clock: SandboxClock,
    private readonly jobs: JobRunner,
  ) {}

  /**
   * Restores the offset kept in the data store (a restarted sandbox keeps its time) and follows every
   * advance made through any instance, so that all instances on one database read the same time.
   */
  async start(): Promise<void> {
    await this.db.listen(SANDBOX_CLOCK_CHANNEL, (payload) => {
      const offset = Number(payload);
      if (Number.isFinite(offset) && offset > this.clock.offset) this.clock.setOffset(offset);
    });
    const offset = await readClockOffset(this.db);
    if (offset !== null) this.clock.setOffset(offset);
  }

  now(): Date {
    return this.clock.now();
  }

  /** Moves the clock forward and answers only after every job that became due has run. */
  async advance(seconds: number): Promise<Date> {
    const delta = Math.round(seconds * 1000);
    const offset = await this.db.transaction(async (tx) => {
      const value = await addToClockOffset(tx, delta);
      if (Date.now() + value > SANDBOX_CLOCK_LIMIT.getTime()) {
        throw errors.invalidField('seconds', `The sandbox clock may not pass ${SANDBOX_CLOCK_LIMIT.toISOString()}; it reads ${this.clock.now().toISOString()}.`);
      }
      await tx.notify(SANDBOX_CLOCK_CHANNEL, String(value));
      return value;
    });
    this.clock.setOffset(offset);
    await this.jobs.runUntilIdle();
    return this.clock.now();
  }
}
