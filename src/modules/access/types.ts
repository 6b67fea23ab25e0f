// The vocabulary of access decisions (README "How a door decides"): what a key, a lock's groups and a
// weekly window are to the one decision function, whoever calls it (the online answer to a gateway, the
// building of a gateway's access list, the gateway simulator deciding from its copy).

/** A day of the week as windows name it (ISO order: Monday first). */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * A weekly time window, in the wall-clock time of the door's time zone: on each of `days`, from `start`
 * (inclusive) to `end` (exclusive), both `HH:MM`; `end` may be `24:00`. An `end` before `start` runs past
 * midnight into the next day (a night shift: `fri 22:00–06:00` covers Saturday until 06:00).
 */
export interface TimeWindow {
  days: Weekday[];
  start: string;
  end: string;
}

/** The key states that may open a door; `planning`, `returned` and `other` never do. */
export const GRANTING_KEY_STATES = ['handed_over', 'sent'] as const;

/** A key as the decision sees it. A revoked key is never given: its credential is unknown. */
export interface AccessKey {
  id: number;
  state: string;
  startsAt: Date;
  /** Exclusive: at `expiresAt` the key no longer opens. */
  expiresAt: Date | null;
}

/**
 * What a key's security groups give it at one lock: null when none of its groups is one of the lock's;
 * otherwise the windows of those groups, merged (`windows: null` when one of them has no windows: at any time).
 */
export interface LockAccess {
  windows: TimeWindow[] | null;
}

export type DenialReason = 'unknown_key' | 'no_access' | 'outside_time_window';

export type Decision = { granted: true; keyId: number } | { granted: false; keyId: number | null; reason: DenialReason };
