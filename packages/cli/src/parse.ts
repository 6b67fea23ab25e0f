// Parsers of flag and argument values. A bad value is a usage error (exit 2) found before any request;
// values the service judges (timestamps, e-mails, phones) are passed on as written, so its answer names the field.
import { InvalidArgumentError } from 'commander';

/** A positive integer id or count. */
export function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('expected a positive integer.');
  }
  return Number(value);
}

/** A whole number of zero or more. */
export function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError('expected a whole number.');
  return Number(value);
}

/** `a,b,c` (blanks around items dropped); an empty string is the empty list. */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** `1,2,3` as integers. */
export function integerList(value: string): number[] {
  return list(value).map(positiveInteger);
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** `90s`, `15m`, `1h`, `2d`, `1w`, combined as `1h30m`, or a plain number of seconds; decimals allowed (`1.5h`). */
export function durationSeconds(value: string): number {
  const input = value.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(input)) return Number(input);
  const parts = [...input.matchAll(/(\d+(?:\.\d+)?)([smhdw])/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== input) {
    throw new InvalidArgumentError('expected a duration such as 90s, 15m, 1h, 2d or 1h30m.');
  }
  return parts.reduce((sum, part) => sum + Number(part[1]) * (UNIT_SECONDS[part[2] as string] ?? 0), 0);
}

/** A duration in milliseconds (for waits and intervals). */
export function durationMs(value: string): number {
  return Math.round(durationSeconds(value) * 1000);
}

/**
 * A point in time: an ISO 8601 date-time passed on as written (the service parses it, UTC unless it has an
 * offset), or a duration meaning that long ago (`15m`), turned into a timestamp from this machine's clock.
 */
export function sinceTime(value: string, now: () => Date = () => new Date()): string {
  if (/^\d{4}-\d{2}-\d{2}/.test(value.trim())) return value.trim();
  return new Date(now().getTime() - durationMs(value)).toISOString();
}

/** `true`/`false` (also yes/no, 1/0). */
export function boolean(value: string): boolean {
  const input = value.trim().toLowerCase();
  if (['true', 'yes', '1'].includes(input)) return true;
  if (['false', 'no', '0'].includes(input)) return false;
  throw new InvalidArgumentError('expected true or false.');
}

/**
 * What a flag's value reads as when it sends null (`--gateway none`). Commander turns a parser's null into '', so
 * parsers answer this instead, and defined() (kit.ts) puts null in the body for it.
 */
export const NULL: unique symbol = Symbol('null');

/**
 * A value or the word that sends null: `--gateway none`, `--time-zone inherit`. The word is the flag's own
 * (as `--phone-key-allowance unlimited` and `--locking-system none`), so it cannot be read as a value by mistake.
 */
export function orNull<T>(word: string, parse: (value: string) => T): (value: string) => T | typeof NULL {
  return (value) => (value === word ? NULL : parse(value));
}

/** A flag given once per item (`--window … --window …`): the items in order; not given, undefined. */
export function repeated<T>(parse: (value: string) => T): (value: string, previous: T[] | undefined) => T[] {
  return (value, previous) => [...(previous ?? []), parse(value)];
}

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Day = (typeof DAYS)[number];

export interface Window {
  days: Day[];
  start: string;
  end: string;
}

const WINDOW_HELP = 'expected days and times such as mon-fri,08:00-18:00 or sat,sun,09:00-13:00.';

/**
 * A weekly window, `DAYS,START-END`: days are mon … sun, single (`sat`) or ranges (`mon-fri`, `fri-mon` runs over
 * the weekend), comma-separated; times are HH:MM (00:00 to 24:00; an end before the start runs past midnight).
 * The days come out in week order, each once; a one-digit hour gets its zero (`9:00` is sent as `09:00`, the
 * API's HH:MM), and otherwise the times go on as written, for the service to judge (`25:00`).
 */
export function weeklyWindow(value: string): Window {
  const items = list(value.toLowerCase());
  const times = /^(\d{1,2}:\d{2})-(\d{1,2}:\d{2})$/.exec(items.pop() ?? '');
  if (!times || items.length === 0) throw new InvalidArgumentError(WINDOW_HELP);
  const days = new Set<Day>();
  for (const item of items) {
    const ends = item.split('-').map((day) => DAYS.indexOf(day as Day));
    const from = ends[0] ?? -1;
    const to = ends[ends.length - 1] ?? -1;
    if (ends.length > 2 || from < 0 || to < 0) throw new InvalidArgumentError(`unknown day "${item}": ${WINDOW_HELP}`);
    for (let day = from; ; day = (day + 1) % 7) {
      days.add(DAYS[day] as Day);
      if (day === to) break;
    }
  }
  return { days: DAYS.filter((day) => days.has(day)), start: (times[1] as string).padStart(5, '0'), end: (times[2] as string).padStart(5, '0') };
}

/** A window as the CLI writes it (`mon-fri 08:00-18:00`): runs of three days or more as ranges. */
export function windowText(window: Window): string {
  const indexes = window.days.map((day) => DAYS.indexOf(day));
  const runs: string[] = [];
  for (let i = 0; i < indexes.length; ) {
    let j = i;
    while (j + 1 < indexes.length && (indexes[j + 1] as number) === (indexes[j] as number) + 1) j++;
    const run = window.days.slice(i, j + 1);
    runs.push(run.length >= 3 ? `${run[0]}-${run[run.length - 1]}` : run.join(','));
    i = j + 1;
  }
  return `${runs.join(',')} ${window.start}-${window.end}`;
}

/** A board's doors and their locks, `1=7,2=8` (door=lock id); an empty string maps none. */
export function doorLocks(value: string): Array<{ door: number; lock_id: number }> {
  return list(value).map((item) => {
    const match = /^(\d+)=(\d+)$/.exec(item);
    if (!match) throw new InvalidArgumentError('expected door=lock pairs such as 1=7,2=8.');
    return { door: positiveInteger(match[1] as string), lock_id: positiveInteger(match[2] as string) };
  });
}
