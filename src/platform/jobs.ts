// Background work: one registry of jobs, run by the same loop in every instance. Each run handles what is
// due on the service clock and says how much it did; the sandbox clock's advance drives runUntilIdle().
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from './db/errors.ts';

export interface Job {
  name: string;
  /** How often the loop runs it, in real seconds. */
  everySeconds: number;
  /** Handles due work; returns how many items it handled (0 = nothing was due). Must be safe to run concurrently. */
  run(): Promise<number>;
  /** Resolves when work the job started outside run() (e.g. on a NOTIFY) has finished. */
  settled?(): Promise<void>;
}

export class JobRunner {
  private readonly jobs: Job[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly running = new Set<Promise<unknown>>();
  private stopped = true;

  constructor(private readonly log: FastifyBaseLogger) {}

  register(job: Job): void {
    this.jobs.push(job);
  }

  get names(): string[] {
    return this.jobs.map((j) => j.name);
  }

  /** Whether the loop is started and not stopped (GET /readyz). */
  get started(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    for (const job of this.jobs) {
      // A run still going when the next is due (the database is slow or away) is not joined by another:
      // runs piling up would hold every connection of the pool once it is back.
      let busy = false;
      const timer = setInterval(() => {
        if (busy) return;
        busy = true;
        void this.runOnce(job).finally(() => (busy = false));
      }, job.everySeconds * 1000);
      timer.unref();
      this.timers.push(timer);
    }
  }

  /** Jobs whose last run found the database away: told once per outage, not at every run. */
  private readonly waitingForDatabase = new Set<string>();

  private async runOnce(job: Job): Promise<number> {
    const run = job.run();
    this.running.add(run);
    try {
      const handled = await run;
      if (this.waitingForDatabase.delete(job.name)) this.log.info({ job: job.name }, 'job runs again: the database is back');
      return handled;
    } catch (error) {
      if (!isDatabaseUnavailable(error)) this.log.error({ err: error, job: job.name }, 'job failed');
      else if (!this.waitingForDatabase.has(job.name)) {
        this.waitingForDatabase.add(job.name);
        this.log.warn({ err: error, job: job.name }, 'job waits: the database is unavailable');
      }
      return 0;
    } finally {
      this.running.delete(run);
    }
  }

  /** Runs every job until none has anything left to do (bounded, so a job that never settles cannot hang it). */
  async runUntilIdle(maxRounds = 50): Promise<void> {
    for (let round = 0; round < maxRounds; round++) {
      await this.settled();
      let handled = 0;
      for (const job of this.jobs) handled += await this.runOnce(job);
      if (handled === 0) return this.settled();
    }
  }

  private async settled(): Promise<void> {
    await Promise.all(this.jobs.map((job) => job.settled?.()));
  }

  /** Stops scheduling and waits for the runs in flight. */
  async stop(): Promise<void> {
    if (this.stopped && this.timers.length === 0) return;
    this.stopped = true;
    for (const timer of this.timers.splice(0)) clearInterval(timer);
    await Promise.allSettled([...this.running]);
  }
}

/** Rows of one statement of a retention purge (webhook payloads, the outbox, messages). */
export const PURGE_BATCH = 5000;
/**
 * Statements of one purge in one run of a retention job: 40 a run every 5 minutes keeps up with 660 rows a second,
 * far over a site's day, in short statements that never hold the embedded database long.
 */
const PURGE_MAX_BATCHES = 40;

/** Runs a purge's statements (each of at most PURGE_BATCH rows) while they come full, up to PURGE_MAX_BATCHES; returns the rows. */
export async function purgeWhileFull(batch: () => Promise<number>): Promise<number> {
  let handled = 0;
  for (let run = 0; run < PURGE_MAX_BATCHES; run++) {
    const rows = await batch();
    handled += rows;
    if (rows < PURGE_BATCH) break;
  }
  return handled;
}
