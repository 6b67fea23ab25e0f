// Weekly time windows in words, as the security-group list shows them ("Mon–Fri 07:00–19:00"). Plain code, no
// DOM: test/unit/console-window-words.test.ts holds it to its examples.
import { DAYS, type Day, type TimeWindow } from './types.ts';

export const DAY_WORDS: Record<Day, string> = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' };
export const DAY_NAMES: Record<Day, string> = { mon: 'Monday', tue: 'Tuesday', wed: 'Wednesday', thu: 'Thursday', fri: 'Friday', sat: 'Saturday', sun: 'Sunday' };

/** A window the editor starts a new row with: office hours. */
export const NEW_WINDOW: TimeWindow = { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '19:00' };

/** Days in week order, runs of three or more as a range: "Mon–Fri", "Sat, Sun", "Mon, Wed, Fri", "Every day". */
export function daysInWords(days: readonly Day[]): string {
  const on = DAYS.map((d) => days.includes(d));
  if (on.every(Boolean)) return 'Every day';
  const parts: string[] = [];
  for (let i = 0; i < DAYS.length; i++) {
    if (!on[i]) continue;
    let j = i;
    while (j + 1 < DAYS.length && on[j + 1]) j++;
    const first = DAY_WORDS[DAYS[i] as Day];
    const last = DAY_WORDS[DAYS[j] as Day];
    if (j - i >= 2) parts.push(`${first}–${last}`);
    else for (let k = i; k <= j; k++) parts.push(DAY_WORDS[DAYS[k] as Day]);
    i = j;
  }
  return parts.join(', ');
}

/** One window in words: "Mon–Fri 07:00–19:00", "Sat, Sun all day", "Fri 22:00–06:00 (into the next day)". */
export function windowInWords(window: TimeWindow): string {
  const days = daysInWords(window.days);
  if (window.start === '00:00' && window.end === '24:00') return `${days} all day`;
  const overnight = window.end < window.start ? ' (into the next day)' : '';
  return `${days} ${window.start}–${window.end}${overnight}`;
}

/** A group's windows in words; null is "At any time". */
export function windowsInWords(windows: readonly TimeWindow[] | null): string {
  if (windows === null) return 'At any time';
  return windows.map(windowInWords).join('; ');
}
