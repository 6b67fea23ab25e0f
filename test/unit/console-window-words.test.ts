// The console's security-group windows in words (src/modules/console/web/window-words.ts): the lists show
// what a door will do, so the words must say exactly the days and times the API holds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { daysInWords, windowInWords, windowsInWords } from '../../src/modules/console/web/window-words.ts';

test('days in week order, runs of three or more as a range, two as a list, all seven as every day', () => {
  assert.equal(daysInWords(['mon', 'tue', 'wed', 'thu', 'fri']), 'Mon–Fri');
  assert.equal(daysInWords(['sun', 'sat']), 'Sat, Sun');
  assert.equal(daysInWords(['fri', 'mon', 'wed']), 'Mon, Wed, Fri');
  assert.equal(daysInWords(['mon', 'tue', 'wed', 'fri', 'sat', 'sun']), 'Mon–Wed, Fri–Sun');
  assert.equal(daysInWords(['thu']), 'Thu');
  assert.equal(daysInWords(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']), 'Every day');
});

test('a window: its times, a whole day, and an end before the start running into the next day', () => {
  assert.equal(windowInWords({ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '19:00' }), 'Mon–Fri 07:00–19:00');
  assert.equal(windowInWords({ days: ['sat', 'sun'], start: '00:00', end: '24:00' }), 'Sat, Sun all day');
  assert.equal(windowInWords({ days: ['fri'], start: '22:00', end: '06:00' }), 'Fri 22:00–06:00 (into the next day)');
  assert.equal(windowInWords({ days: ['mon'], start: '07:00', end: '24:00' }), 'Mon 07:00–24:00');
});

test('the windows of a group joined by semicolons; null is at any time', () => {
  assert.equal(windowsInWords(null), 'At any time');
  assert.equal(
    windowsInWords([
      { days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '07:00', end: '19:00' },
      { days: ['sat'], start: '09:00', end: '13:00' },
    ]),
    'Mon–Fri 07:00–19:00; Sat 09:00–13:00',
  );
});
