// One work queue for everything that claims rows and retries them on a ladder: outgoing messages, webhook
// deliveries, locking-system tasks (docs/work-queue.md). Each kind is a configured schedule (ladder, jitter,
// Retry-After cap, end state) plus a lease and a batch size; its rows and their SQL stay in its module's
// store, which answers one call: claim the due rows. The rules (which rung, how much jitter, what a
// Retry-After may ask, when a row ends) are pure functions, testable without a database.
import type { Clock } from './clock.ts';

/** Seconds before retry n (1-based): 1 m, 5 m, 30 m, 2 h, 6 h, 24 h (README: Messages, Webhooks). */
export const STANDARD_LADDER_SECONDS: readonly number[] = [60, 300, 1800, 7200, 21_600, 86_400];

export interface WorkKind {
  /** Names the kind in logs and docs. */
  name: string;
  /** Seconds before retry n (1-based): the first failed attempt waits ladderSeconds[0]. */
  ladderSeconds: readonly number[];
  /**
   * The status a row ends in when the attempt after the last rung fails too; null: the row never ends and
   * keeps retrying every last rung until it succeeds.
   */
  endState: string | null;
  /**
   * Spreads retries of rows that failed together: a delay of d seconds becomes d × (1 + jitterRatio × u),
   * u uniform in [0, 1). Never earlier than the rung, so "retried after 1 m" still holds. 0: exact.
   */
  jitterRatio: number;
  /** The longest wait a Retry-After hint may ask for; a longer hint is cut to this. */
  retryAfterCapSeconds: number;
  /** How long a claim holds a row: a row whose worker died is claimed again once its lease has run out. */
  leaseSeconds: number;
  /** At most this many rows a claim. */
  batchSize: number;
}

/** What a claim hands to the store: claim rows due at `now`, at most `batchSize`, and hold them until `until`. */
export interface Lease {
  now: Date;
  until: Date;
  batchSize: number;
}

/**
 * The one SQL call a kind's store answers. It claims with FOR UPDATE SKIP LOCKED (several workers and
 * instances never claim one row twice), sets the row's lease (`claimed_until`) to `lease.until` and counts
 * the attempt it claims for, so that a worker that dies mid-attempt still spent one rung.
 */
export interface WorkStore<Item> {
  claimDue(lease: Lease): Promise<Item[]>;
}

/** After a failed attempt: when to try again, or the end state the row takes now. */
export type NextAttempt = { retry: true; delaySeconds: number; at: Date } | { retry: false; endState: string };

export interface FailureHints {
  /** The other side's Retry-After (a 429 or 503), in seconds from now; null or absent: none. */
  retryAfterSeconds?: number | null;
}

/**
 * The rung's delay, in seconds before jitter, after `attemptsMade` attempts (the one that just failed
 * included); or the end state, when the row has used every rung. A kind without an end state stays on its
 * last rung. Fewer than one attempt reads as one.
 */
export function rungAfter(kind: Pick<WorkKind, 'name' | 'ladderSeconds' | 'endState'>, attemptsMade: number): number | { endState: string } {
  const last = kind.ladderSeconds[kind.ladderSeconds.length - 1];
  if (last === undefined) throw new RangeError(`work kind ${kind.name} has an empty ladder`);
  const seconds = kind.ladderSeconds[Math.max(1, Math.floor(attemptsMade)) - 1];
  if (seconds !== undefined) return seconds;
  return kind.endState === null ? last : { endState: kind.endState };
}

/** The rung's delay with the kind's jitter: in [seconds, seconds × (1 + jitterRatio)). `random` is in [0, 1). */
export function withJitter(seconds: number, jitterRatio: number, random: () => number = Math.random): number {
  if (jitterRatio <= 0) return seconds;
  return seconds * (1 + jitterRatio * random());
}

/**
 * The delay before the next attempt: the jittered rung, or the other side's Retry-After when it asks for
 * longer (cut to the kind's cap). A hint never makes a retry earlier than its rung, never adds attempts and
 * never keeps a row from its end state.
 */
export function nextAttempt(kind: WorkKind, attemptsMade: number, now: Date, hints: FailureHints = {}, random: () => number = Math.random): NextAttempt {
  const rung = rungAfter(kind, attemptsMade);
  if (typeof rung !== 'number') return { retry: false, endState: rung.endState };
  let delaySeconds = withJitter(rung, kind.jitterRatio, random);
  const asked = hints.retryAfterSeconds;
  if (typeof asked === 'number' && Number.isFinite(asked)) delaySeconds = Math.max(delaySeconds, Math.min(asked, kind.retryAfterCapSeconds));
  return { retry: true, delaySeconds, at: new Date(now.getTime() + delaySeconds * 1000) };
}

/**
 * A Retry-After header (RFC 9110: delta-seconds or an HTTP date) as seconds from `now`; null when absent or
 * not readable. A date in the past reads as 0.
 */
export function parseRetryAfter(value: string | readonly string[] | null | undefined, now: Date): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  if (Number.isNaN(at) || !/[a-z]/i.test(text)) return null;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/** Refuses a kind whose schedule would misbehave at run time (an empty ladder, a negative jitter …). */
export function checkWorkKind(kind: WorkKind): WorkKind {
  const problems: string[] = [];
  if (kind.ladderSeconds.length === 0) problems.push('an empty ladder');
  if (kind.ladderSeconds.some((s) => !Number.isFinite(s) || s <= 0)) problems.push('a rung that is not a positive number of seconds');
  if (!(kind.jitterRatio >= 0 && kind.jitterRatio <= 1)) problems.push('a jitter ratio outside 0 to 1');
  if (!(kind.retryAfterCapSeconds >= 0)) problems.push('a negative Retry-After cap');
  if (!(kind.leaseSeconds > 0)) problems.push('a lease that is not positive');
  if (!(Number.isInteger(kind.batchSize) && kind.batchSize > 0)) problems.push('a batch size that is not a positive integer');
  if (problems.length > 0) throw new RangeError(`work kind ${kind.name} has ${problems.join(', ')}`);
  return kind;
}

/** A kind's queue: claims due rows through its store and decides what follows a failed attempt. */
export class WorkQueue<Item> {
  constructor(
    readonly kind: WorkKind,
    private readonly store: WorkStore<Item>,
    private readonly clock: Clock,
    private readonly random: () => number = Math.random,
  ) {
    checkWorkKind(kind);
  }

  /**
   * Claims what is due at `now` (the caller's reading of the clock, when other rules share it), at most
   * `limit` rows (never more than the kind's batch size): a caller that keeps a window of work in flight
   * claims only what fits.
   */
  claim(now: Date = this.clock.now(), limit = this.kind.batchSize): Promise<Item[]> {
    const batchSize = Math.max(0, Math.min(this.kind.batchSize, Math.floor(limit)));
    if (batchSize === 0) return Promise.resolve([]);
    return this.store.claimDue({ now, until: new Date(now.getTime() + this.kind.leaseSeconds * 1000), batchSize });
  }

  /** After a failed attempt (`attemptsMade` counts it): the next attempt's time, or the end state. */
  next(attemptsMade: number, hints: FailureHints = {}): NextAttempt {
    return nextAttempt(this.kind, attemptsMade, this.clock.now(), hints, this.random);
  }
}

/**
 * The claim rule every kind's SQL shares, for a row (optionally aliased) with `status`, `next_attempt_at`
 * and `claimed_until`: pending, due at $1 and not held by a live lease.
 */
export function dueAndUnleased(alias = ''): string {
  const c = alias ? `${alias}.` : '';
  return `${c}status = 'pending' AND ${c}next_attempt_at <= $1 AND (${c}claimed_until IS NULL OR ${c}claimed_until < $1)`;
}
