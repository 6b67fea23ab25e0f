// The one access decision (issue 22, "One decision"): every path that opens a door — the online answer to a
// gateway, the building of a gateway's access list, the simulator deciding from its copy, a key holder's
// remote unlock — asks this function, so no path can be more generous than another.
import { withinWindows } from './schedule.ts';
import { GRANTING_KEY_STATES, type AccessKey, type Decision, type DenialReason, type LockAccess } from './types.ts';

const GRANTING: readonly string[] = GRANTING_KEY_STATES;

/**
 * Whether `key` opens a lock at `at`. `key` is null when the credential matched no live key (a revoked key's
 * credential is unknown); `access` is null when none of the key's groups is one of the lock's; `timeZone`
 * is the lock's location's. Checks run in a fixed order, so a denial names the first rule that failed:
 * who (unknown_key), whether the key may open this lock at all (no_access), then when (outside_time_window).
 */
export function decide(key: AccessKey | null, access: LockAccess | null, timeZone: string, at: Date): Decision {
  if (!key) return { granted: false, keyId: null, reason: 'unknown_key' };
  const deny = (reason: DenialReason): Decision => ({ granted: false, keyId: key.id, reason });
  if (!GRANTING.includes(key.state)) return deny('no_access');
  if (!access) return deny('no_access');
  const now = at.getTime();
  // NaN compares false with everything, so an invalid instant is refused explicitly (fail secure).
  if (Number.isNaN(now) || now < key.startsAt.getTime()) return deny('outside_time_window');
  if (key.expiresAt && now >= key.expiresAt.getTime()) return deny('outside_time_window');
  if (access.windows !== null && !withinWindows(access.windows, timeZone, at)) return deny('outside_time_window');
  return { granted: true, keyId: key.id };
}

/** One row of the decision table (README "How a door decides"); the unit tests hold `decide` to every row. */
export interface DecisionTableRow {
  key: 'unknown or revoked' | 'planning, returned or other' | 'handed_over or sent';
  validity: 'any' | 'before starts_at' | 'at or after expires_at' | 'from starts_at, before expires_at';
  group: 'any' | 'none of the lock’s' | 'one of the lock’s';
  window: 'any' | 'outside every window' | 'no windows (any time)' | 'inside a window';
  result: 'granted' | DenialReason;
}

/** The rules in the order `decide` applies them: the first row that matches is the answer. */
export const DECISION_TABLE: readonly DecisionTableRow[] = [
  { key: 'unknown or revoked', validity: 'any', group: 'any', window: 'any', result: 'unknown_key' },
  { key: 'planning, returned or other', validity: 'any', group: 'any', window: 'any', result: 'no_access' },
  { key: 'handed_over or sent', validity: 'any', group: 'none of the lock’s', window: 'any', result: 'no_access' },
  { key: 'handed_over or sent', validity: 'before starts_at', group: 'one of the lock’s', window: 'any', result: 'outside_time_window' },
  { key: 'handed_over or sent', validity: 'at or after expires_at', group: 'one of the lock’s', window: 'any', result: 'outside_time_window' },
  { key: 'handed_over or sent', validity: 'from starts_at, before expires_at', group: 'one of the lock’s', window: 'outside every window', result: 'outside_time_window' },
  { key: 'handed_over or sent', validity: 'from starts_at, before expires_at', group: 'one of the lock’s', window: 'no windows (any time)', result: 'granted' },
  { key: 'handed_over or sent', validity: 'from starts_at, before expires_at', group: 'one of the lock’s', window: 'inside a window', result: 'granted' },
];
