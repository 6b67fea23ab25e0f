// The wait before trying again something that failed because the other side is away (the database, for
// the LISTEN connection and for gateway messages): doubling from 100 ms, never longer than 5 s. Five lines
// of arithmetic, kept here rather than taken from a retry library: each caller owns its own loop (when to
// stop, what to log, what to do once through), which is what such libraries would want to own.

/** The first wait (attempt 0). */
export const BACKOFF_FIRST_MS = 100;
/** The longest wait between two attempts. */
export const BACKOFF_MAX_MS = 5000;

/** The wait before attempt `attempt` (0, 1, 2, …): min(5000, 100·2ⁿ) milliseconds. */
export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** attempt);
}
