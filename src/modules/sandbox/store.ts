// The sandbox clock's offset, kept in the settings table so that a restarted sandbox keeps its time.
import type { Queryable } from '../../platform/db/index.ts';

const OFFSET_KEY = 'sandbox_clock_offset_ms';

export async function readClockOffset(db: Queryable): Promise<number | null> {
  const [row] = await db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [OFFSET_KEY]);
  return row ? Number(row.value) : null;
}

/** Adds `deltaMs` to the stored offset (0 when none) and returns the new offset. */
export async function addToClockOffset(tx: Queryable, deltaMs: number): Promise<number> {
  const [row] = await tx.query<{ value: string }>(
    `INSERT INTO settings (key, value) VALUES ($1, $2)
     ON CONFLICT (key) DO UPDATE SET value = (settings.value::bigint + $3::bigint)::text
     RETURNING value`,
    [OFFSET_KEY, String(deltaMs), deltaMs],
  );
  return Number((row as { value: string }).value);
}
