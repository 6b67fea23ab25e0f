// The CLI's value parsers: durations for `sandbox advance`, `--since` and waits; ids and lists; weekly windows
// (`--window`) and a board's doors (`--door-locks`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { doorLocks, durationMs, durationSeconds, integerList, list, positiveInteger, sinceTime, weeklyWindow, windowText } from '../../packages/cli/src/parse.ts';

test('durations: 90s, 15m, 1h, 2d, 1w, combined, decimal, or plain seconds', () => {
  const cases: Array<[string, number]> = [['90s', 90], ['15m', 900], ['1h', 3600], ['2d', 172_800], ['1w', 604_800], ['1h30m', 5400], ['1.5h', 5400], ['45', 45], ['0', 0], ['2D', 172_800]];
  for (const [input, seconds] of cases) assert.equal(durationSeconds(input), seconds, input);
  for (const input of ['', 'h', '1 h', '1x', '-5s', '1h-', 'm1', '1hh']) assert.throws(() => durationSeconds(input), /expected a duration/, input);
  assert.equal(durationMs('0.1s'), 100);
});

test('--since: an ISO date-time passes as written; a duration is that long before now', () => {
  assert.equal(sinceTime('2027-01-31T09:00:00+01:00'), '2027-01-31T09:00:00+01:00');
  assert.equal(sinceTime('15m', () => new Date('2027-01-31T09:00:00Z')), '2027-01-31T08:45:00.000Z');
});

test('ids and lists', () => {
  assert.equal(positiveInteger('12'), 12);
  for (const input of ['0', '-1', '1.5', 'abc', '99999999999999999999']) assert.throws(() => positiveInteger(input), /positive integer/, input);
  assert.deepEqual(list(' a, b,,c '), ['a', 'b', 'c']);
  assert.deepEqual(integerList('1,2'), [1, 2]);
});

test('--window: days (single, ranges, over the weekend) in week order, each once, and the times as HH:MM', () => {
  assert.deepEqual(weeklyWindow('mon-fri,08:00-18:00'), { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '18:00' });
  assert.deepEqual(weeklyWindow('SUN,sat,9:00-13:00'), { days: ['sat', 'sun'], start: '09:00', end: '13:00' }, 'a one-digit hour is sent with its zero');
  assert.deepEqual(weeklyWindow('sat,22:00-6:30'), { days: ['sat'], start: '22:00', end: '06:30' });
  assert.deepEqual(weeklyWindow('fri-mon,wed,mon,22:00-06:00').days, ['mon', 'wed', 'fri', 'sat', 'sun']);
  for (const input of ['', 'mon', '08:00-18:00', 'mon,08:00', 'mon-tue-wed,08:00-18:00', 'monday,08:00-18:00', 'mon,8-18', 'mon,9:0-13:00', 'mon,009:00-13:00', 'mon,:00-13:00']) {
    assert.throws(() => weeklyWindow(input), /expected days and times|unknown day/, input);
  }
  assert.equal(windowText(weeklyWindow('mon-fri,08:00-18:00')), 'mon-fri 08:00-18:00');
  assert.equal(windowText(weeklyWindow('sat,sun,mon,wed,09:00-13:00')), 'mon,wed,sat,sun 09:00-13:00');
  assert.equal(windowText(weeklyWindow('mon-wed,fri,00:00-24:00')), 'mon-wed,fri 00:00-24:00');
});

test('--door-locks: door=lock pairs; an empty string maps none', () => {
  assert.deepEqual(doorLocks('1=7, 2=8'), [{ door: 1, lock_id: 7 }, { door: 2, lock_id: 8 }]);
  assert.deepEqual(doorLocks(''), []);
  for (const input of ['1', '1=', '=7', '1:7', '0=7']) assert.throws(() => doorLocks(input), /door=lock|positive integer/, input);
});
