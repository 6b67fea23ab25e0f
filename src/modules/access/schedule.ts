// Weekly time windows: their checks (after the JSON schema checked the shape) and whether an instant falls
// inside them, read on the wall clock of the door's time zone. Time-zone arithmetic is Luxon's (issue 22:
// a maintained library, not hand-written offsets).
import { DateTime, IANAZone } from 'luxon';
import { detail, type ErrorDetail } from '../../platform/errors.ts';
import { WEEKDAYS, type TimeWindow, type Weekday } from './types.ts';

/** A security group's windows are a weekly timetable, not a calendar: four a day covers any real schedule. */
export const MAX_WINDOWS = 28;

const MINUTES_PER_DAY = 24 * 60;
const HH_MM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;

/**
 * True for an IANA zone name (`Europe/Berlin`, `UTC`). Fixed offsets (`+02:00`) are refused because they
 * ignore daylight saving time, and `local` because it would be the server's zone, not the door's.
 * Intl also takes any case (`europe/berlin`); that spelling is refused so the stored name is the one a
 * gateway's own tz database knows. Aliases (`US/Eastern`, `Etc/UTC`) are IANA names and stay accepted.
 */
export function isValidTimeZone(name: string): boolean {
  if (typeof name !== 'string' || !IANAZone.isValidZone(name)) return false;
  const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  return name === resolved || name.toLowerCase() !== resolved.toLowerCase();
}

/** Minutes since midnight of `HH:MM`, or null; `24:00` (1440) only where `allowEndOfDay`. */
function parseClock(value: unknown, allowEndOfDay: boolean): number | null {
  if (typeof value !== 'string') return null;
  if (value === '24:00') return allowEndOfDay ? MINUTES_PER_DAY : null;
  const match = HH_MM.exec(value);
  return match ? Number(match[1]) * 60 + Number(match[2]) : null;
}

/**
 * The semantic checks of a list of windows, one detail per problem (so a console can mark every field at
 * once). `start === end` is refused: it could mean "never" or "all day", and a door must not guess.
 */
export function checkWindows(windows: TimeWindow[], field = 'windows'): ErrorDetail[] {
  if (windows.length > MAX_WINDOWS) return [detail(field, 'invalid', `At most ${MAX_WINDOWS} time windows are allowed.`)];
  const details: ErrorDetail[] = [];
  windows.forEach((window, i) => {
    const at = `${field}[${i}]`;
    const start = parseClock(window.start, false);
    const end = parseClock(window.end, true);
    if (start === null) details.push(detail(`${at}.start`, 'invalid', 'The start must be a time HH:MM from 00:00 to 23:59.'));
    if (end === null) details.push(detail(`${at}.end`, 'invalid', 'The end must be a time HH:MM from 00:00 to 23:59, or 24:00.'));
    if (start !== null && end !== null && start === end) {
      details.push(detail(`${at}.end`, 'invalid', 'The end must differ from the start; for a whole day use 00:00 to 24:00.'));
    }
    const days: unknown[] = Array.isArray(window.days) ? window.days : [];
    if (days.length === 0) details.push(detail(`${at}.days`, 'invalid', 'A time window needs at least one day.'));
    days.forEach((day, j) => {
      if (!WEEKDAYS.includes(day as Weekday)) {
        details.push(detail(`${at}.days[${j}]`, 'invalid', `A day is one of ${WEEKDAYS.join(', ')}.`));
      } else if (days.indexOf(day) !== j) {
        details.push(detail(`${at}.days[${j}]`, 'invalid', `The day ${String(day)} is listed twice.`));
      }
    });
  });
  return details;
}

/**
 * True when the wall clock of `timeZone` at `at` is inside one of the windows. Luxon gives the wall time
 * the door shows at that instant, which settles DST: in a fall-back hour both instants of 01:30 read 01:30,
 * and in a spring-forward gap no instant reads a time inside the gap. Fail secure: an unknown zone or a
 * malformed window (one that skipped checkWindows) grants nothing.
 */
export function withinWindows(windows: TimeWindow[], timeZone: string, at: Date): boolean {
  const local = DateTime.fromJSDate(at, { zone: timeZone });
  if (!local.isValid) return false;
  const today = WEEKDAYS[local.weekday - 1] as Weekday; // Luxon: 1 = Monday, the order of WEEKDAYS
  const yesterday = WEEKDAYS[(local.weekday + 5) % 7] as Weekday;
  // Whole minutes: windows are set to the minute, and 06:59:59 is still before a 07:00 start.
  const minute = local.hour * 60 + local.minute;
  return windows.some((window) => {
    const start = parseClock(window.start, false);
    const end = parseClock(window.end, true);
    if (start === null || end === null || start === end) return false;
    if (start < end) return window.days.includes(today) && start <= minute && minute < end;
    // Past midnight: the evening part on a listed day, the morning part on the day after one.
    return (window.days.includes(today) && minute >= start) || (window.days.includes(yesterday) && minute < end);
  });
}

/**
 * The windows a key has at a lock through several of its groups: open when any group opens, so null (any
 * time) wins, and otherwise the union, which for "inside any window" is the plain concatenation.
 */
export function mergeWindows(groupWindows: Array<TimeWindow[] | null>): TimeWindow[] | null {
  if (groupWindows.some((windows) => windows === null)) return null;
  return (groupWindows as TimeWindow[][]).flat();
}
