// How the key holder's page follows a command after Open: often while a door usually answers (most are
// confirmed within a few tens of milliseconds), then gently for the rest of the command's timeout.
// Shared with bench/holder.ts, which taps as the page does.

/** Attempts made FAST_MS apart before the page slows down: the first 2 seconds. */
const FAST_ATTEMPTS = 40;
const FAST_MS = 50;
const SLOW_MS = 250;
/** Attempts in all: about 42 s, past the longest unlock timeout the page waits for. */
export const FOLLOW_ATTEMPTS = 200;

/** The wait before asking again after `attempt` (1, 2, …) answers that the command is still published. */
export function followDelayMs(attempt: number): number {
  return attempt < FAST_ATTEMPTS ? FAST_MS : SLOW_MS;
}
