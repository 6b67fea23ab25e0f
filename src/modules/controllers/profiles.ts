// Security-group windows as a UHPPOTE controller's time profiles (README "Real controllers"). A profile is a
// set of weekdays with up to three segments, each HH:MM to HH:MM with both minutes included, and may link to
// another profile the board tries next. Windows are weekly, start inclusive, end exclusive, to the minute, and
// may run past midnight; `withinWindows` reads them to the minute too. So the translation is exact:
// [start, end) becomes the segment start..end−1 minute, a window past midnight becomes two days' segments,
// days with the same segments share a profile, and a day with more than three takes a linked profile more.
// Nothing is rounded; what cannot be written (no free profile on the board) is refused, never approximated.
import { createHash } from 'node:crypto';
import { WEEKDAYS, type TimeWindow, type Weekday } from '../access/index.ts';

export const SEGMENTS_PER_PROFILE = 3;
/** Profile ids a board takes: 0 and 1 mean "never" and "always" in a card's door permission. */
export const FIRST_PROFILE_ID = 2;
export const LAST_PROFILE_ID = 254;

const DAY_MINUTES = 24 * 60;

export interface Segment {
  start: string;
  end: string;
}

/** One profile of a chain, without its id: the days it covers and their segments (at most three). */
export interface ProfileShape {
  weekdays: Weekday[];
  segments: Segment[];
}

const minutes = (clock: string): number => {
  const [h, m] = clock.split(':').map(Number) as [number, number];
  return h * 60 + m;
};
const clock = (minute: number): string => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

/** Each weekday's open minutes as merged [start, end) intervals, Monday first. */
export function dayIntervals(windows: readonly TimeWindow[]): Array<Array<[number, number]>> {
  const days: Array<Array<[number, number]>> = WEEKDAYS.map(() => []);
  for (const window of windows) {
    const start = minutes(window.start);
    const end = minutes(window.end);
    for (const day of window.days) {
      const d = WEEKDAYS.indexOf(day);
      if (start < end) days[d]!.push([start, end]);
      else {
        // Past midnight: the evening on the day listed, the morning on the day after it.
        days[d]!.push([start, DAY_MINUTES]);
        if (end > 0) days[(d + 1) % 7]!.push([0, end]);
      }
    }
  }
  return days.map((intervals) => {
    const merged: Array<[number, number]> = [];
    for (const [s, e] of intervals.sort((a, b) => a[0] - b[0])) {
      const last = merged.at(-1);
      if (last && s <= last[1]) last[1] = Math.max(last[1], e);
      else merged.push([s, e]);
    }
    return merged;
  });
}

/**
 * The chain of profiles that opens exactly inside `windows` (in order: each links to the next). Empty when the
 * windows open at no minute of the week.
 */
export function profileChain(windows: readonly TimeWindow[]): ProfileShape[] {
  const byDays = new Map<string, { weekdays: Weekday[]; segments: Segment[] }>();
  dayIntervals(windows).forEach((intervals, d) => {
    if (intervals.length === 0) return;
    const segments = intervals.map(([s, e]) => ({ start: clock(s), end: clock(e - 1) }));
    const signature = JSON.stringify(segments);
    const group = byDays.get(signature);
    if (group) group.weekdays.push(WEEKDAYS[d]!);
    else byDays.set(signature, { weekdays: [WEEKDAYS[d]!], segments });
  });
  const chain: ProfileShape[] = [];
  for (const { weekdays, segments } of byDays.values()) {
    for (let i = 0; i < segments.length; i += SEGMENTS_PER_PROFILE) chain.push({ weekdays, segments: segments.slice(i, i + SEGMENTS_PER_PROFILE) });
  }
  return chain;
}

/**
 * A stable name for each profile of a chain, covering the profiles it links to: the same schedule gets the same
 * profile on a board however many keys use it. Returned in chain order.
 */
export function chainDefinitions(chain: readonly ProfileShape[]): string[] {
  const definitions: string[] = [];
  let next = '';
  for (let i = chain.length - 1; i >= 0; i--) {
    const profile = chain[i]!;
    next = createHash('sha256')
      .update(JSON.stringify({ w: profile.weekdays, s: profile.segments, next }))
      .digest('base64url');
    definitions.unshift(next);
  }
  return definitions;
}

/**
 * Why these windows cannot be written to a board exactly, or null. A board reads a segment of 00:00 to 00:00 as
 * empty, so a window whose only minute of a day is 00:00 (00:00–00:01, or the last minute of a night ending at
 * 00:01) would open never there, where Latchkey opens it: refused rather than rounded.
 */
export function windowsProblem(windows: readonly TimeWindow[]): string | null {
  for (const profile of profileChain(windows)) {
    if (profile.segments.some((segment) => segment.start === '00:00' && segment.end === '00:00')) {
      return `A UHPPOTE controller cannot hold a window of the single minute 00:00 on ${profile.weekdays.join(', ')} (its segment 00:00–00:00 means "none"); start or end it on another minute.`;
    }
  }
  return null;
}
