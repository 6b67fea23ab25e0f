// Windows as a board's time profiles decide exactly as `decide` does (README "Real controllers"): random
// weekly windows (past midnight, 24:00, several a day, more than three segments on a day) are turned into a
// profile chain, written to a simulated board that decides the way the hardware does, and a card is swiped at
// random minutes and seconds of the week; the board's answer must be withinWindows' answer every time.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { withinWindows } from '../../src/modules/access/schedule.ts';
import { WEEKDAYS, type TimeWindow } from '../../src/modules/access/types.ts';
import { chainDefinitions, profileChain, windowsProblem } from '../../src/modules/controllers/profiles.ts';
import type { TimeProfile } from '../../src/modules/controllers/uhppote/codec.ts';
import { startSimulatedController, type SimulatedController } from '../helpers/uhppote-simulator.ts';

let board: SimulatedController;
let boardTime = '2027-01-04 00:00:00';
before(async () => {
  board = await startSimulatedController({ serial: 99000001, now: () => boardTime });
});
after(async () => board?.close());

const CARD = 10000001;
const clock = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

/** Writes the chain for `windows` to the board as the sync does (tail first, each linking to the next). */
function writeChain(windows: TimeWindow[]): number {
  board.profiles.clear();
  const chain = profileChain(windows);
  assert.equal(new Set(chainDefinitions(chain)).size, chain.length);
  let next = 0;
  for (let i = chain.length - 1; i >= 0; i--) {
    const shape = chain[i]!;
    const weekdays = { mon: false, tue: false, wed: false, thu: false, fri: false, sat: false, sun: false };
    for (const day of shape.weekdays) weekdays[day] = true;
    const profile: TimeProfile = { id: i + 2, from: '2000-01-01', to: '2099-12-31', weekdays, segments: shape.segments, linkedTo: next };
    board.profiles.set(profile.id, profile);
    next = profile.id;
  }
  // No profile at all: the windows open at no minute, and the door permission is 0 (never).
  board.cards.set(CARD, { card: CARD, from: '2000-01-01', to: '2099-12-31', doors: [next, 0, 0, 0], pin: 0 });
  return next;
}

const minute = fc.integer({ min: 0, max: 1439 });
const windowArbitrary = fc
  .record({
    days: fc.subarray([...WEEKDAYS], { minLength: 1 }),
    start: minute,
    end: fc.oneof({ weight: 5, arbitrary: minute }, { weight: 1, arbitrary: fc.constant(1440) }),
  })
  .filter((w) => w.start !== w.end)
  .map((w): TimeWindow => ({ days: w.days, start: clock(w.start), end: clock(w.end) }));

test('a board holding the profile chain of random windows opens exactly when withinWindows does, at every sampled instant of the week', () => {
  fc.assert(
    fc.property(
      fc.array(windowArbitrary, { minLength: 1, maxLength: 6 }),
      fc.array(fc.record({ day: fc.integer({ min: 0, max: 6 }), minute, second: fc.integer({ min: 0, max: 59 }) }), { minLength: 20, maxLength: 40 }),
      (windows, instants) => {
        fc.pre(windowsProblem(windows) === null);
        writeChain(windows);
        for (const { day, minute: m, second } of instants) {
          // 2027-01-04 is a Monday; the board's wall time is UTC here (zones are the monitor's business).
          const date = `2027-01-${String(4 + day).padStart(2, '0')}`;
          boardTime = `${date} ${clock(m)}:${String(second).padStart(2, '0')}`;
          const expected = withinWindows(windows, 'UTC', new Date(`${date}T${clock(m)}:${String(second).padStart(2, '0')}Z`));
          assert.equal(board.swipe(CARD, 1).granted, expected, `${JSON.stringify(windows)} at ${boardTime}`);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('the edges: the first minute of a window opens, its end minute does not, 24:00 and past midnight included', () => {
  writeChain([
    { days: ['mon'], start: '09:00', end: '17:00' },
    { days: ['fri'], start: '22:00', end: '06:00' },
    { days: ['sun'], start: '23:00', end: '24:00' },
  ]);
  const at = (time: string) => {
    boardTime = time;
    return board.swipe(CARD, 1).granted;
  };
  assert.equal(at('2027-01-04 08:59:59'), false);
  assert.equal(at('2027-01-04 09:00:00'), true);
  assert.equal(at('2027-01-04 16:59:59'), true);
  assert.equal(at('2027-01-04 17:00:00'), false);
  assert.equal(at('2027-01-08 21:59:59'), false); // Friday evening before the night
  assert.equal(at('2027-01-08 23:30:00'), true);
  assert.equal(at('2027-01-09 05:59:59'), true); // Saturday morning, the same night
  assert.equal(at('2027-01-09 06:00:00'), false);
  assert.equal(at('2027-01-10 23:59:59'), true); // Sunday until 24:00
  assert.equal(at('2027-01-11 00:00:00'), false); // and not into Monday
});

test('a day with more than three segments takes a linked profile, and the link is followed', () => {
  const windows: TimeWindow[] = ['01', '03', '05', '07', '09'].map((h) => ({ days: ['tue'], start: `${h}:00`, end: `${h}:30` }));
  const chain = profileChain(windows);
  assert.deepEqual(chain.map((p) => p.segments.length), [3, 2]);
  writeChain(windows);
  boardTime = '2027-01-05 09:15:00';
  assert.equal(board.swipe(CARD, 1).granted, true, 'the fifth segment, in the linked profile');
  boardTime = '2027-01-05 09:45:00';
  assert.equal(board.swipe(CARD, 1).granted, false);
});

test('a window whose only minute of a day is 00:00 is refused, never rounded', () => {
  assert.match(windowsProblem([{ days: ['mon'], start: '00:00', end: '00:01' }]) ?? '', /00:00/);
  assert.match(windowsProblem([{ days: ['sun'], start: '22:00', end: '00:01' }]) ?? '', /mon/);
  assert.equal(windowsProblem([{ days: ['mon'], start: '00:00', end: '00:02' }]), null);
});
