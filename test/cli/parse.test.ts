// The CLI's value parsers: durations for `sandbox advance`, `--since` and waits; ids and lists.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { durationMs, durationSeconds, integerList, list, positiveInteger, sinceTime } from '../../packages/cli/src/parse.ts';

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
