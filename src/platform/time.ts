// Timestamps sent by clients: ISO 8601, parsed as UTC unless they carry their own offset (spec: General rules).
import { Type } from '@sinclair/typebox';
import { FORM } from './validation.ts';

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|z|[+-]\d{2}:?\d{2})?$/;

export const ClientTimestamp = (description?: string) =>
  Type.String({
    pattern: TIMESTAMP.source,
    [FORM]: 'an ISO 8601 date-time such as 2027-01-31T09:00:00Z (UTC unless an offset is given)',
    description: `ISO 8601 date-time; UTC unless an offset is given${description ? `. ${description}` : ''}`,
    examples: ['2027-01-31T09:00:00Z'],
  });

const MIN_INSTANT = new Date('0001-01-01T00:00:00Z').getTime();
const MAX_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime();

/** The instant a client timestamp names, or null when it is not a real date-time (e.g. month 13). */
export function parseClientTimestamp(value: string): Date | null {
  const match = TIMESTAMP.exec(value);
  if (!match) return null;
  const [, y, mo, d, h, mi, s = '0', frac = '0', zone] = match;
  // The fields are checked without the fraction, which is rounded to the millisecond after: 23:59:59.9996 is
  // a real time, however it rounds.
  const ms = Math.round(Number(`0.${frac}`) * 1000);
  // Not Date.UTC, which reads years 0–99 as 1900–1999 (0001-01-01 would be 1901): setUTCFullYear takes the year as given.
  const check = new Date(0);
  check.setUTCFullYear(Number(y), Number(mo) - 1, Number(d));
  check.setUTCHours(Number(h), Number(mi), Number(s), 0);
  const utc = check.getTime();
  if (
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d) ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s) > 59
  ) {
    return null;
  }
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const [hours, minutes] = [Number(digits.slice(0, 2)), Number(digits.slice(2))];
    if (minutes > 59 || hours * 60 + minutes > 14 * 60) return null; // no zone is further from UTC than ±14:00
    offsetMinutes = sign * (hours * 60 + minutes);
  }
  const instant = utc + ms - offsetMinutes * 60_000;
  // Years 1 to 9999 only, after the offset too: PostgreSQL cannot read a later one as written (+010000-…), and
  // 9999-12-31T23:59:59-01:00 answered 500.
  if (instant < MIN_INSTANT || instant > MAX_INSTANT) return null;
  return new Date(instant);
}
