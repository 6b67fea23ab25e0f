// The one access decision (issue 22, "One decision"), read as rules. A property holds `decide`, `withinWindows`
// and `mergeWindows` against a plain reference model written apart from them (wall clock from Intl, not Luxon;
// windows as arcs on the circle of the week's minutes), over random keys, groups, windows, instants and zones,
// DST nights included. Then explicit cases that try to get in where they must not.
// Printed seed: `PROPERTY_SEED=<seed> npm test -- test/unit/access-decision.test.ts` replays a failure.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { DECISION_TABLE, decide } from '../../src/modules/access/decision.ts';
import { checkWindows, isValidTimeZone, MAX_WINDOWS, mergeWindows, withinWindows } from '../../src/modules/access/schedule.ts';
import { WEEKDAYS, type AccessKey, type Decision, type TimeWindow, type Weekday } from '../../src/modules/access/types.ts';

const seed = Number(process.env.PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.PROPERTY_RUNS ?? 3000);
console.log(`# property seed ${seed} (replay with PROPERTY_SEED=${seed})`);

// ---- The reference model ------------------------------------------------------------------------------

const WEEK = 7 * 1440;
const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes since Monday 00:00 on the wall clock of `zone` at `at`, read with Intl. */
function weekMinute(zone: string, at: Date): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    formats.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(at).map((part) => [part.type, part.value]));
  const day = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'].indexOf(parts.weekday as string);
  assert.ok(day >= 0);
  return day * 1440 + Number(parts.hour) * 60 + Number(parts.minute);
}

const clock = (text: string): number => Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5));

/** A window is, for each of its days, an arc of the week from the start that lasts until the end (wrapping). */
function referenceInside(windows: TimeWindow[], zone: string, at: Date): boolean {
  const now = weekMinute(zone, at);
  return windows.some((window) => {
    const start = clock(window.start);
    const end = clock(window.end);
    const length = end > start ? end - start : end + 1440 - start;
    return window.days.some((day) => {
      const from = WEEKDAYS.indexOf(day) * 1440 + start;
      return (((now - from) % WEEK) + WEEK) % WEEK < length;
    });
  });
}

/** Every rule that fails, in the order of the table; the first is the reason. Groups: the lock's among the key's. */
function referenceDecide(key: AccessKey | null, groups: Array<TimeWindow[] | null>, zone: string, at: Date): Decision {
  if (key === null) return { granted: false, keyId: null, reason: 'unknown_key' };
  const failed: Array<'no_access' | 'outside_time_window'> = [];
  if (key.state !== 'handed_over' && key.state !== 'sent') failed.push('no_access');
  if (groups.length === 0) failed.push('no_access');
  const started = key.startsAt.getTime() <= at.getTime();
  const notExpired = key.expiresAt === null || at.getTime() < key.expiresAt.getTime();
  if (!started || !notExpired) failed.push('outside_time_window');
  if (!groups.some((windows) => windows === null || referenceInside(windows, zone, at))) failed.push('outside_time_window');
  const reason = failed[0];
  return reason ? { granted: false, keyId: key.id, reason } : { granted: true, keyId: key.id };
}

/** What the caller hands `decide`: no access when none of the key's groups is the lock's, else their merge. */
const accessOf = (groups: Array<TimeWindow[] | null>) => (groups.length === 0 ? null : { windows: mergeWindows(groups) });

// ---- Draws ----------------------------------------------------------------------------------------------

const ZONES = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'UTC'];
const STATES = ['planning', 'handed_over', 'sent', 'returned', 'other'];
const FROM = Date.UTC(2024, 0, 1);
const TO = Date.UTC(2031, 0, 1) - 60_000; // the last minute of 2030
const HOUR = 3_600_000;

/** DST changes (UTC instants), to draw instants close to them. */
const TRANSITIONS = [
  { zone: 'Europe/Berlin', at: '2024-03-31T01:00:00Z' },
  { zone: 'Europe/Berlin', at: '2024-10-27T01:00:00Z' },
  { zone: 'Europe/Berlin', at: '2030-03-31T01:00:00Z' },
  { zone: 'Europe/Berlin', at: '2030-10-27T01:00:00Z' },
  { zone: 'America/New_York', at: '2024-03-10T07:00:00Z' },
  { zone: 'America/New_York', at: '2024-11-03T06:00:00Z' },
  { zone: 'America/New_York', at: '2027-03-14T07:00:00Z' },
  { zone: 'America/New_York', at: '2027-11-07T06:00:00Z' },
  { zone: 'Australia/Lord_Howe', at: '2024-04-06T15:00:00Z' }, // 02:00 +11 back to 01:30 +10:30
  { zone: 'Australia/Lord_Howe', at: '2024-10-05T15:30:00Z' }, // 02:00 +10:30 on to 02:30 +11
].map((t) => ({ zone: t.zone, at: Date.parse(t.at) }));

/** A minute-aligned instant, or one a millisecond either side of a minute, or anywhere. */
const jitter = fc.oneof(fc.constantFrom(0, -1, 1), fc.integer({ min: 0, max: 59_999 }));
const moment = fc.oneof(
  fc.record({ zone: fc.constantFrom(...ZONES), minute: fc.integer({ min: FROM / 60_000, max: TO / 60_000 }), jitter }).map(({ zone, minute, jitter }) => ({
    zone,
    at: new Date(minute * 60_000 + jitter),
  })),
  fc.record({ t: fc.constantFrom(...TRANSITIONS), minutes: fc.integer({ min: -180, max: 180 }), jitter }).map(({ t, minutes, jitter }) => ({
    zone: t.zone,
    at: new Date(t.at + minutes * 60_000 + jitter),
  })),
);

const hhmm = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, '0')}:${String(minute % 60).padStart(2, '0')}`;

/** Windows whose edges are often the minute of `at` or one either side, so boundaries are met, not hoped for. */
function windowsNear(localMinute: number) {
  const edge = fc.oneof(fc.integer({ min: 0, max: 1439 }), fc.constantFrom(-1, 0, 1).map((d) => (localMinute + d + 1440) % 1440));
  const window = fc
    .record({
      days: fc.subarray([...WEEKDAYS], { minLength: 1 }),
      start: edge,
      end: fc.oneof({ weight: 5, arbitrary: edge }, { weight: 1, arbitrary: fc.constant(1440) }),
    })
    .filter(({ start, end }) => start !== end)
    .map(({ days, start, end }): TimeWindow => ({ days, start: hhmm(start), end: end === 1440 ? '24:00' : hhmm(end) }));
  return fc.array(window, { maxLength: 3 });
}

const offset = fc.oneof(fc.constantFrom(0, -1, 1, -HOUR, HOUR), fc.integer({ min: -400 * 24 * HOUR, max: 400 * 24 * HOUR }));

const scenario = moment.chain(({ zone, at }) =>
  fc.record({
    zone: fc.constant(zone),
    at: fc.constant(at),
    key: fc.option(
      fc.record({ id: fc.nat(), state: fc.constantFrom(...STATES), starts: offset, expires: fc.option(offset) }).map(
        ({ id, state, starts, expires }): AccessKey => ({
          id,
          state,
          startsAt: new Date(at.getTime() + starts),
          expiresAt: expires === null ? null : new Date(at.getTime() + expires),
        }),
      ),
      { freq: 8 },
    ),
    groups: fc.array(fc.option(windowsNear(weekMinute(zone, at) % 1440), { freq: 5 }), { maxLength: 3 }),
  }),
);

test('decide, withinWindows and mergeWindows agree with the reference model (property)', () => {
  fc.assert(
    fc.property(scenario, ({ zone, at, key, groups }) => {
      for (const windows of groups) {
        if (windows === null) continue;
        assert.deepEqual(checkWindows(windows), [], 'the draws are valid windows');
        assert.equal(withinWindows(windows, zone, at), referenceInside(windows, zone, at), 'one group');
      }
      const merged = mergeWindows(groups);
      const anyGroupOpen = groups.some((windows) => windows === null || referenceInside(windows, zone, at));
      assert.equal(merged === null || withinWindows(merged, zone, at), anyGroupOpen, 'merged groups open when one of them does');
      assert.deepEqual(decide(key, accessOf(groups), zone, at), referenceDecide(key, groups, zone, at));
    }),
    { seed, numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
  );
});

// ---- Explicit cases -------------------------------------------------------------------------------------

const at = (iso: string) => new Date(iso);
const KEY: AccessKey = { id: 7, state: 'handed_over', startsAt: at('2024-01-01T00:00:00Z'), expiresAt: null };
const win = (days: Weekday[], start: string, end: string): TimeWindow[] => [{ days, start, end }];
const granted: Decision = { granted: true, keyId: 7 };
const outside: Decision = { granted: false, keyId: 7, reason: 'outside_time_window' };

/** Each instant (UTC) of `cases` against `windows` in `zone`, through decide: true = must open. */
function expectAt(zone: string, windows: TimeWindow[], cases: Array<[string, boolean]>) {
  for (const [instant, open] of cases) {
    assert.deepEqual(decide(KEY, { windows }, zone, at(instant)), open ? granted : outside, `${zone} ${JSON.stringify(windows)} at ${instant}`);
    assert.equal(referenceInside(windows, zone, at(instant)), open, `reference at ${instant}`);
  }
}

describe('window edges', () => {
  test('start inclusive, end exclusive: not a minute (or a millisecond) early, not at the end (Berlin, UTC+1 in January)', () => {
    expectAt('Europe/Berlin', win(['mon', 'tue', 'wed', 'thu', 'fri'], '07:00', '19:00'), [
      ['2024-01-15T05:59:00Z', false], // Monday 06:59
      ['2024-01-15T05:59:59.999Z', false],
      ['2024-01-15T06:00:00Z', true], // 07:00
      ['2024-01-15T17:59:59.999Z', true],
      ['2024-01-15T18:00:00Z', false], // 19:00
      ['2024-01-20T10:00:00Z', false], // Saturday
    ]);
  });

  test('a night shift runs into the next day, and only after a listed day', () => {
    expectAt('Europe/Berlin', win(['fri'], '22:00', '06:00'), [
      ['2024-01-19T20:59:00Z', false], // Friday 21:59
      ['2024-01-19T21:00:00Z', true], // Friday 22:00
      ['2024-01-20T04:59:59.999Z', true], // Saturday 05:59:59
      ['2024-01-20T05:00:00Z', false], // Saturday 06:00
      ['2024-01-20T21:00:00Z', false], // Saturday 22:00: Saturday is not listed
      ['2024-01-19T04:00:00Z', false], // Friday 05:00: the morning after Thursday, not listed
    ]);
  });

  test('24:00 is the end of the day; a Sunday night runs into Monday', () => {
    expectAt('UTC', win(['sun'], '20:00', '24:00'), [
      ['2024-01-21T23:59:59.999Z', true],
      ['2024-01-22T00:00:00Z', false],
    ]);
    expectAt('UTC', win(['sun'], '22:00', '02:00'), [
      ['2024-01-22T01:59:00Z', true], // Monday 01:59
      ['2024-01-22T02:00:00Z', false],
      ['2024-01-22T22:00:00Z', false], // Monday 22:00
    ]);
  });

  test('a window and a group without windows: the group opens at any time; merged lists open where any does', () => {
    const morning = win(['mon'], '08:00', '09:00');
    const evening = win(['mon'], '18:00', '19:00');
    assert.equal(mergeWindows([morning, null]), null);
    assert.deepEqual(mergeWindows([morning, evening]), [...morning, ...evening]);
    assert.deepEqual(mergeWindows([]), []);
    expectAt('UTC', mergeWindows([morning, evening]) as TimeWindow[], [
      ['2024-01-15T08:30:00Z', true],
      ['2024-01-15T12:00:00Z', false],
      ['2024-01-15T18:30:00Z', true],
    ]);
    assert.deepEqual(decide(KEY, { windows: [] }, 'UTC', at('2024-01-15T08:30:00Z')), outside, 'an empty list opens at no time');
  });
});

describe('DST nights: the wall clock the door shows decides', () => {
  const minutes = (fromIso: string, toIso: string) => {
    const out: Date[] = [];
    for (let t = Date.parse(fromIso); t < Date.parse(toIso); t += 60_000) out.push(new Date(t), new Date(t + 59_999));
    return out;
  };

  test('Berlin, spring forward (31 March 2024, 02:00 CET becomes 03:00 CEST): no instant is in 02:00–03:00', () => {
    for (const instant of minutes('2024-03-30T22:00:00Z', '2024-03-31T04:00:00Z')) {
      assert.equal(withinWindows(win(['sun'], '02:00', '03:00'), 'Europe/Berlin', instant), false, instant.toISOString());
    }
    expectAt('Europe/Berlin', win(['sun'], '02:30', '03:30'), [
      ['2024-03-31T00:59:59.999Z', false], // 01:59:59 CET
      ['2024-03-31T01:00:00Z', true], // 03:00 CEST
      ['2024-03-31T01:30:00Z', false], // 03:30 CEST
    ]);
    expectAt('Europe/Berlin', win(['sat'], '23:00', '02:30'), [
      ['2024-03-31T00:59:59.999Z', true],
      ['2024-03-31T01:00:00Z', false], // the clock jumped past the end
    ]);
  });

  test('Berlin, fall back (27 October 2024, 03:00 CEST becomes 02:00 CET): 02:00–03:00 lasts two hours', () => {
    expectAt('Europe/Berlin', win(['sun'], '02:00', '03:00'), [
      ['2024-10-26T23:59:00Z', false], // 01:59 CEST
      ['2024-10-27T00:00:00Z', true], // 02:00 CEST
      ['2024-10-27T00:30:00Z', true], // the first 02:30
      ['2024-10-27T01:00:00Z', true], // 02:00 CET
      ['2024-10-27T01:30:00Z', true], // the second 02:30
      ['2024-10-27T01:59:59.999Z', true],
      ['2024-10-27T02:00:00Z', false], // 03:00 CET
    ]);
    expectAt('Europe/Berlin', win(['sun'], '00:00', '02:00'), [
      ['2024-10-26T23:59:00Z', true], // 01:59 CEST
      ['2024-10-27T00:00:00Z', false], // 02:00 CEST
      ['2024-10-27T01:00:00Z', false], // 02:00 CET: still not before 02:00
    ]);
  });

  test('New York, spring forward (10 March 2024, 02:00 EST becomes 03:00 EDT): 02:00–03:00 never opens', () => {
    for (const instant of minutes('2024-03-10T05:00:00Z', '2024-03-10T09:00:00Z')) {
      assert.equal(withinWindows(win(['sun'], '02:00', '03:00'), 'America/New_York', instant), false, instant.toISOString());
    }
    expectAt('America/New_York', win(['sun'], '03:00', '04:00'), [
      ['2024-03-10T06:59:59.999Z', false], // 01:59:59 EST
      ['2024-03-10T07:00:00Z', true], // 03:00 EDT
    ]);
  });

  test('New York, fall back (3 November 2024, 02:00 EDT becomes 01:00 EST): both 01:30s are 01:30', () => {
    expectAt('America/New_York', win(['sun'], '01:00', '02:00'), [
      ['2024-11-03T04:59:00Z', false], // 00:59 EDT
      ['2024-11-03T05:00:00Z', true], // 01:00 EDT
      ['2024-11-03T05:30:00Z', true], // the first 01:30
      ['2024-11-03T06:00:00Z', true], // 01:00 EST
      ['2024-11-03T06:30:00Z', true], // the second 01:30
      ['2024-11-03T06:59:59.999Z', true],
      ['2024-11-03T07:00:00Z', false], // 02:00 EST
    ]);
  });

  test('Lord Howe, a 30-minute fall back (7 April 2024, 02:00 +11 becomes 01:30 +10:30)', () => {
    expectAt('Australia/Lord_Howe', win(['sun'], '01:30', '02:00'), [
      ['2024-04-06T14:29:00Z', false], // 01:29 +11
      ['2024-04-06T14:30:00Z', true], // 01:30 +11
      ['2024-04-06T15:00:00Z', true], // 01:30 +10:30
      ['2024-04-06T15:29:59.999Z', true],
      ['2024-04-06T15:30:00Z', false], // 02:00 +10:30
    ]);
  });
});

describe('keys that must not get in', () => {
  const lock = { windows: null };
  const key = (over: Partial<AccessKey>): AccessKey => ({ ...KEY, ...over });

  test('validity: from starts_at inclusive, until expires_at exclusive', () => {
    const k = key({ startsAt: at('2024-01-01T00:00:00Z'), expiresAt: at('2024-07-01T00:00:00Z') });
    assert.deepEqual(decide(k, lock, 'UTC', at('2023-12-31T23:59:59.999Z')), outside);
    assert.deepEqual(decide(k, lock, 'UTC', at('2024-01-01T00:00:00Z')), granted);
    assert.deepEqual(decide(k, lock, 'UTC', at('2024-06-30T23:59:59.999Z')), granted);
    assert.deepEqual(decide(k, lock, 'UTC', at('2024-07-01T00:00:00Z')), outside, 'at its exact expiry instant');
  });

  test('a key in planning, returned or other opens nothing, even with valid groups and dates', () => {
    for (const state of ['planning', 'returned', 'other', 'revoked', '']) {
      assert.deepEqual(decide(key({ state }), lock, 'UTC', at('2024-03-01T12:00:00Z')), { granted: false, keyId: 7, reason: 'no_access' }, state);
    }
    assert.deepEqual(decide(key({ state: 'sent' }), lock, 'UTC', at('2024-03-01T12:00:00Z')), granted, 'sent still opens while a change travels');
  });

  test("a key whose groups are not the lock's: no_access", () => {
    assert.deepEqual(decide(KEY, null, 'UTC', at('2024-03-01T12:00:00Z')), { granted: false, keyId: 7, reason: 'no_access' });
  });

  test('an unknown or revoked credential: unknown_key, no key id', () => {
    assert.deepEqual(decide(null, lock, 'UTC', at('2024-03-01T12:00:00Z')), { granted: false, keyId: null, reason: 'unknown_key' });
  });

  test('the first failing rule names the denial: state, then group, then time', () => {
    const expired = key({ expiresAt: at('2024-02-01T00:00:00Z') });
    const when = at('2024-03-01T12:00:00Z');
    assert.deepEqual(decide({ ...expired, state: 'returned' }, null, 'UTC', when), { granted: false, keyId: 7, reason: 'no_access' });
    assert.deepEqual(decide(expired, null, 'UTC', when), { granted: false, keyId: 7, reason: 'no_access' });
    assert.deepEqual(decide(expired, { windows: win(['fri'], '12:00', '13:00') }, 'UTC', when), outside);
  });

  test('fail secure: an unknown time zone or an invalid instant never opens a scheduled door', () => {
    assert.deepEqual(decide(KEY, { windows: win([...WEEKDAYS], '00:00', '24:00') }, 'Mars/Olympus', at('2024-03-01T12:00:00Z')), outside);
    assert.deepEqual(decide(KEY, lock, 'UTC', new Date(Number.NaN)), outside);
    const malformed = [{ days: ['mon'], start: '7:00', end: '25:00' }] as TimeWindow[];
    assert.equal(withinWindows(malformed, 'UTC', at('2024-01-15T08:00:00Z')), false);
  });
});

describe('the decision table (README "How a door decides")', () => {
  test('every combination meets exactly the first matching row, and decide answers that row', () => {
    const when = at('2024-01-15T12:00:00Z'); // Monday 12:00 UTC
    const keys: Array<[string, string | null]> = [
      ['unknown or revoked', null],
      ...['planning', 'returned', 'other'].map((s): [string, string] => ['planning, returned or other', s]),
      ...['handed_over', 'sent'].map((s): [string, string] => ['handed_over or sent', s]),
    ];
    const validities: Array<[string, Pick<AccessKey, 'startsAt' | 'expiresAt'>]> = [
      ['before starts_at', { startsAt: new Date(when.getTime() + 1), expiresAt: null }],
      ['at or after expires_at', { startsAt: at('2024-01-01T00:00:00Z'), expiresAt: when }],
      ['from starts_at, before expires_at', { startsAt: when, expiresAt: null }],
      ['from starts_at, before expires_at', { startsAt: at('2024-01-01T00:00:00Z'), expiresAt: new Date(when.getTime() + 1) }],
    ];
    const windows: Array<[string, TimeWindow[] | null]> = [
      ['outside every window', win(['mon'], '13:00', '14:00')],
      ['no windows (any time)', null],
      ['inside a window', win(['mon'], '12:00', '12:01')],
    ];
    let combinations = 0;
    for (const [keyLabel, state] of keys) {
      for (const [validity, dates] of validities) {
        for (const group of ['none of the lock’s', 'one of the lock’s']) {
          for (const [window, list] of windows) {
            const labels: Record<string, string> = { key: keyLabel, validity, group, window };
            const row = DECISION_TABLE.find((r) => Object.entries(labels).every(([column, label]) => ["any", label].includes(r[column as keyof typeof r])));
            assert.ok(row, `no row for ${JSON.stringify(labels)}`);
            const key = state === null ? null : { id: 7, state, ...dates };
            const decision = decide(key, group === 'one of the lock’s' ? { windows: list } : null, 'UTC', when);
            assert.equal(decision.granted ? 'granted' : decision.reason, row.result, JSON.stringify(labels));
            combinations += 1;
          }
        }
      }
    }
    assert.equal(combinations, 6 * 4 * 2 * 3);
  });
});

describe('schedules as an operator sets them', () => {
  test('time zones: IANA names only', () => {
    for (const name of ['Europe/Berlin', 'UTC', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires', 'Etc/UTC']) {
      assert.equal(isValidTimeZone(name), true, name);
    }
    for (const name of ['', 'local', 'system', '+02:00', 'UTC+2', 'GMT+0200', 'Europe/Nowhere', ' Europe/Berlin', 'europe/berlin', 'utc']) {
      assert.equal(isValidTimeZone(name), false, JSON.stringify(name));
    }
  });

  test('valid windows have no details', () => {
    assert.deepEqual(checkWindows([{ days: ['mon', 'fri'], start: '07:00', end: '19:00' }, { days: ['sat'], start: '22:00', end: '06:00' }, { days: ['sun'], start: '00:00', end: '24:00' }, { days: ['sun'], start: '23:59', end: '00:00' }]), []);
    assert.deepEqual(checkWindows([]), []);
  });

  test('each problem is a detail on its field', () => {
    const details = checkWindows(
      [
        { days: ['mon'], start: '07:00', end: '19:00' },
        { days: ['mon'], start: '7:00', end: '24:01' },
        { days: [], start: '24:00', end: '08:00' },
        { days: ['mon', 'tue', 'mon'], start: '09:00', end: '09:00' },
        { days: ['mon', 'xyz' as Weekday], start: '23:60', end: '1900' },
      ],
      'security_groups[1].windows',
    );
    assert.deepEqual(
      details.map((d) => `${d.field} ${d.code}`),
      [
        'security_groups[1].windows[1].start invalid',
        'security_groups[1].windows[1].end invalid',
        'security_groups[1].windows[2].start invalid',
        'security_groups[1].windows[2].days invalid',
        'security_groups[1].windows[3].end invalid',
        'security_groups[1].windows[3].days[2] invalid',
        'security_groups[1].windows[4].start invalid',
        'security_groups[1].windows[4].end invalid',
        'security_groups[1].windows[4].days[1] invalid',
      ],
    );
    assert.match(details[0]?.message ?? '', /HH:MM from 00:00 to 23:59/);
    assert.match(details[4]?.message ?? '', /differ from the start/);
    assert.match(details[5]?.message ?? '', /mon is listed twice/);
  });

  test(`at most ${MAX_WINDOWS} windows`, () => {
    const window: TimeWindow = { days: ['mon'], start: '08:00', end: '09:00' };
    assert.deepEqual(checkWindows(Array(MAX_WINDOWS).fill(window)), []);
    assert.deepEqual(checkWindows(Array(MAX_WINDOWS + 1).fill(window)), [{ field: 'windows', code: 'invalid', message: `At most ${MAX_WINDOWS} time windows are allowed.` }]);
  });
});
