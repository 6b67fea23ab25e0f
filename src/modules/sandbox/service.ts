// The sandbox (SANDBOX=true): a clock that tests and integrators move forward, and later the simulated
// locking system, MQTT publish switch and message outbox.
import type { SandboxClock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { JobRunner } from '../../platform/jobs.ts';

const OFFSET_KEY = 'sandbox_clock_offset_ms';

export class SandboxService {
  constructor(
    private readonly db: Database,
    readonly clock: SandboxClock,
    private readonly jobs: JobRunner,
  ) {}

  /** Restores the clock offset kept in the data store, so a restarted sandbox keeps its time. */
  async start(): Promise<void> {
    const rows = await this.db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [OFFSET_KEY]);
    if (rows[0]) this.clock.setOffset(Number(rows[0].value));
  }

  now(): Date {
    return this.clock.now();
  }

  /** Moves the clock forward and answers only after every job that became due has run. */
  async advance(seconds: number): Promise<Date> {
    const offset = this.clock.offset + Math.round(seconds * 1000);
    await this.db.query(
      `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [OFFSET_KEY, String(offset)],
    );
    this.clock.setOffset(offset);
    await this.jobs.runUntilIdle();
    return this.clock.now();
  }
}
