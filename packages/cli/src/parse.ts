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
