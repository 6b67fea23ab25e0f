// A gateway's list in parts that each fit the broker's packet limit (docs/spec/gateway-mqtt.md, "Access decisions").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listMessages } from '../../src/modules/access/gateway-sync.ts';

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
