// Client timestamps (README: API notes, "Client timestamps"): ISO 8601, UTC unless an offset is given.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseClientTimestamp } from '../../src/platform/time.ts';

const iso = (value: string) => parseClientTimestamp(value)?.toISOString() ?? null;

test('without an offset a timestamp is UTC; Z, z and +00:00 say the same', () => {
  for (const value of ['2027-01-31T09:00:00', '2027-01-31T09:00:00Z', '2027-01-31T09:00:00z', '2027-01-31T09:00:00+00:00', '2027-01-31 09:00:00Z']) {
    assert.equal(iso(value), '2027-01-31T09:00:00.000Z', value);
  }
});

test('an offset is converted, with or without its colon, across the day boundary', () => {
  assert.equal(iso('2027-01-31T09:00:00+02:00'), '2027-01-31T07:00:00.000Z');
  assert.equal(iso('2027-01-31T09:00:00+0530'), '2027-01-31T03:30:00.000Z');
  assert.equal(iso('2027-01-31T22:30:00-05:00'), '2027-02-01T03:30:00.000Z');
});

test('seconds and fractions are optional; fractions are rounded to the millisecond', () => {
  assert.equal(iso('2027-01-31T09:00Z'), '2027-01-31T09:00:00.000Z');
  assert.equal(iso('2027-01-31T09:00:05.1Z'), '2027-01-31T09:00:05.100Z');
  assert.equal(iso('2027-01-31T09:00:05.123456789Z'), '2027-01-31T09:00:05.123Z');
  assert.equal(iso('2027-01-31T09:00:05.9996Z'), '2027-01-31T09:00:06.000Z');
});

test('dates and times that do not exist are null, not rolled over', () => {
  for (const value of ['2027-13-01T00:00:00Z', '2027-02-29T00:00:00Z', '2027-04-31T00:00:00Z', '2027-01-31T24:00:00Z', '2027-01-31T23:60:00Z', '2027-01-31T23:59:60Z', '2027-01-31T12:60:00Z', '2027-01-31T12:30:60Z', '2027-00-10T00:00:00Z']) {
    assert.equal(parseClientTimestamp(value), null, value);
  }
  assert.equal(iso('2028-02-29T00:00:00Z'), '2028-02-29T00:00:00.000Z', 'a leap day exists in a leap year');
});

test('what is not ISO 8601 date-time is null', () => {
  for (const value of ['', '2027-01-31', '31.01.2027 09:00', '2027-01-31T9:00:00Z', '2027-01-31T09:00:00 Z', '2027-01-31T09:00:00+2', 'tomorrow', '1798675200']) {
    assert.equal(parseClientTimestamp(value), null, JSON.stringify(value));
  }
});

test('an offset beyond ±14:00 or 59 minutes, and an instant past 9999 or before year 1 after its offset, are null', () => {
  for (const value of ['2027-01-31T09:00:00+99:99', '2027-01-31T09:00:00-2359', '2027-01-31T09:00:00+15:00', '2027-01-31T09:00:00+14:30', '2027-01-31T09:00:00+01:60', '9999-12-31T23:59:59-01:00', '9999-12-31T23:59:59.9996Z']) {
    assert.equal(parseClientTimestamp(value), null, value);
  }
  assert.equal(iso('9999-12-31T23:59:59.999Z'), '9999-12-31T23:59:59.999Z');
  assert.equal(iso('2027-01-31T09:00:00-12:00'), '2027-01-31T21:00:00.000Z');
  assert.equal(iso('2027-01-31T09:00:00+14:00'), '2027-01-30T19:00:00.000Z');
});

test('a real time whose fraction rounds into the next second is not refused', () => {
  assert.equal(iso('2030-06-30T23:59:59.9995Z'), '2030-07-01T00:00:00.000Z');
});

test('years 0001 to 0099 are those years, not 1901 to 1999; year 0000 is before the first instant', () => {
  for (const [value, expected] of [
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0001-01-01T00:00:00.000Z', '0001-01-01T00:00:00.000Z'],
    ['0001-01-01T01:00:00+01:00', '0001-01-01T00:00:00.000Z'],
    ['0001-12-31T23:59:59Z', '0001-12-31T23:59:59.000Z'],
    ['0004-02-29T12:00:00Z', '0004-02-29T12:00:00.000Z'],
    ['0050-06-15T08:30:00Z', '0050-06-15T08:30:00.000Z'],
    ['0099-12-31T23:59:59.999Z', '0099-12-31T23:59:59.999Z'],
    ['0100-01-01T00:00:00Z', '0100-01-01T00:00:00.000Z'],
    ['0100-01-01T00:30:00+01:00', '0099-12-31T23:30:00.000Z'],
    ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
    ['1999-12-31T23:59:59Z', '1999-12-31T23:59:59.000Z'],
  ] as const) {
    assert.equal(iso(value), expected, value);
  }
  const first = parseClientTimestamp('0001-01-01T00:00:00Z') as Date;
  assert.equal(first.getUTCFullYear(), 1);
  assert.equal(first.getTime(), -62135596800000);
  for (const value of ['0000-12-31T23:59:59Z', '0000-01-01T00:00:00Z', '0001-01-01T00:00:00+00:01', '0001-01-01T00:59:59+01:00', '0001-02-29T00:00:00Z', '0100-02-29T00:00:00Z', '0099-13-01T00:00:00Z']) {
    assert.equal(parseClientTimestamp(value), null, value);
  }
});
