// The sandbox (SANDBOX=true): a clock that tests and integrators move forward, and later the simulated
// locking system, MQTT publish switch and message outbox.
import type { SandboxClock } from '../../platform/clock.ts';
import { notify, type Database } from '../../platform/db/index.ts';
import type { JobRunner } from '../../platform/jobs.ts';

const OFFSET_KEY = 'sandbox_clock_offset_ms';
const CLOCK_CHANNEL = 'sandbox_clock';

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
    await this.db.listen(CLOCK_CHANNEL, (payload) => {
      const offset = Number(payload);
      if (Number.isFinite(offset) && offset > this.clock.offset) this.clock.setOffset(offset);
    });
    const rows = await this.db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [OFFSET_KEY]);
    if (rows[0]) this.clock.setOffset(Number(rows[0].value));
  }

  now(): Date {
    return this.clock.now();
  }

  /** Moves the clock forward and answers only after every job that became due has run. */
  async advance(seconds: number): Promise<Date> {
    const delta = Math.round(seconds * 1000);
    const offset = await this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ value: string }>(
        `INSERT INTO settings (key, value) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET value = (settings.value::bigint + $3::bigint)::text
         RETURNING value`,
        [OFFSET_KEY, String(delta), delta],
      );
      const value = (row as { value: string }).value;
      await notify(this.db, tx, CLOCK_CHANNEL, value);
      return Number(value);
    });
    this.clock.setOffset(offset);
    await this.jobs.runUntilIdle();
    return this.clock.now();
  }
}
