// A gateway's list in parts that each fit the broker's packet limit (docs/spec/gateway-mqtt.md, "Access decisions").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { joinPieces, type CopyEntry } from '../../packages/cli/src/gateway-access-copy.ts';
import { entryPieces, listMessages } from '../../src/modules/access/list-messages.ts';

const entry = (i: number) => JSON.stringify({ key_id: i, h: 'x'.repeat(43), starts_at: '2026-01-01T00:00:00.000Z', expires_at: null, locks: [{ lock_id: 1, windows: null }] });

test('a list larger than a packet comes in parts, each complete JSON within the limit, every entry once', () => {
  const entries = Array.from({ length: 2000 }, (_, i) => entry(i + 1));
  const messages = listMessages({ type: 'full', version: 9, valid_until: '2026-12-01T00:00:00.000Z' }, entries, [], 65_536);
  assert.ok(messages.length > 1);
  const parsed = messages.map((m) => JSON.parse(m) as { part: number; parts: number; version: number; entries: Array<{ key_id: number }> });
  for (const [index, message] of messages.entries()) {
    assert.ok(Buffer.byteLength(message) <= 65_536 - 512, `part ${index + 1} fits`);
    assert.equal(parsed[index]?.part, index + 1);
    assert.equal(parsed[index]?.parts, messages.length);
    assert.equal(parsed[index]?.version, 9);
  }
  assert.deepEqual(parsed.flatMap((m) => m.entries.map((e) => e.key_id)), entries.map((_, i) => i + 1));
});

test('changes with nothing in them are one part that only renews the validity', () => {
  const [only, ...rest] = listMessages({ type: 'changes', from: 4, version: 4, valid_until: 'v' }, [], [], 65_536);
  assert.equal(rest.length, 0);
  assert.deepEqual(JSON.parse(only as string), { type: 'changes', from: 4, version: 4, valid_until: 'v', part: 1, parts: 1, entries: [], removed: [] });
});

test('removals are split like entries', () => {
  const removed = Array.from({ length: 20_000 }, (_, i) => i + 1_000_000);
  const messages = listMessages({ type: 'changes', from: 1, version: 2, valid_until: 'v' }, [], removed, 4096);
  assert.ok(messages.length > 1);
  assert.deepEqual(messages.flatMap((m) => (JSON.parse(m) as { removed: number[] }).removed), removed);
  for (const m of messages) assert.ok(Buffer.byteLength(m) <= 4096);
});

/** An entry whose windows repeat for every lock: 30 locks of 28 windows each is larger than a packet of 64 KiB. */
function rosterEntry(keyId: number, locks: number, windowsPerLock: number): string {
  const windows = Array.from({ length: windowsPerLock }, (_, i) => ({ days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: `${String(i % 24).padStart(2, '0')}:00`, end: `${String(i % 24).padStart(2, '0')}:20` }));
  return JSON.stringify({
    key_id: keyId,
    h: 'y'.repeat(43),
    starts_at: '2026-01-01T00:00:00.000Z',
    expires_at: null,
    locks: Array.from({ length: locks }, (_, i) => ({ lock_id: i + 1, windows, time_zone: 'Europe/London' })),
  });
}

test('an entry larger than a packet comes in pieces of the same key in one message, each part within the limit; joined, they are the entry', () => {
  const big = rosterEntry(7, 30, 28);
  assert.ok(Buffer.byteLength(big) > 65_536, `the entry is ${Buffer.byteLength(big)} bytes`);
  const messages = listMessages({ type: 'changes', from: 1, version: 2, valid_until: 'v' }, [entry(1), big, entry(9)], [3], 65_536);
  assert.ok(messages.length > 1);
  for (const m of messages) assert.ok(Buffer.byteLength(m) <= 65_536 - 512, `a part of ${Buffer.byteLength(m)} bytes`);
  const parsed = messages.map((m) => JSON.parse(m) as { entries: CopyEntry[]; removed: number[] });
  const joined = joinPieces(parsed.flatMap((m) => m.entries));
  assert.deepEqual(joined.map((e) => e.key_id), [1, 7, 9]);
  assert.deepEqual(joined[1], JSON.parse(big));
  assert.deepEqual(parsed.flatMap((m) => m.removed), [3]);
});

test("a lock whose windows alone do not fit is listed in several pieces with some of its windows each; joined, they are the lock's windows", () => {
  const big = rosterEntry(8, 2, 400);
  const pieces = entryPieces(big, 4096);
  assert.ok(pieces.length > 2);
  for (const piece of pieces) assert.ok(Buffer.byteLength(piece) + 1 <= 4096, `a piece of ${Buffer.byteLength(piece)} bytes`);
  assert.deepEqual(joinPieces(pieces.map((p) => JSON.parse(p) as CopyEntry)), [JSON.parse(big)]);
  // Open at all times in any piece: at all times.
  const always = joinPieces([
    { key_id: 8, h: 'h', starts_at: 's', expires_at: null, locks: [{ lock_id: 1, windows: [{ days: ['mon'], start: '07:00', end: '08:00' }], time_zone: 'UTC' }] },
    { key_id: 8, h: 'h', starts_at: 's', expires_at: null, locks: [{ lock_id: 1, windows: null }] },
  ]);
  assert.deepEqual(always[0]?.locks, [{ lock_id: 1, windows: null, time_zone: 'UTC' }]);
});
