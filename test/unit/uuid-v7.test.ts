// UUIDv7 ids (RFC 9562): person ids sort in creation order (README: API notes, "People: delete").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uuidv7 } from '../../src/platform/ids.ts';

const hex = (id: string) => id.replace(/-/g, '');

test('a lowercase UUID of version 7 and the RFC 4122 variant', () => {
  for (let i = 0; i < 50; i++) {
    const id = uuidv7(new Date());
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  }
});

test('the first 48 bits are the Unix time in milliseconds', () => {
  for (const at of [new Date(0), new Date('2026-11-22T10:11:12.345Z'), new Date(2 ** 48 - 1)]) {
    assert.equal(parseInt(hex(uuidv7(at)).slice(0, 12), 16), at.getTime(), at.toISOString());
  }
});

test('ids of a later millisecond sort after; ids of one millisecond differ in their random bits', () => {
  const at = new Date('2026-11-22T10:11:12.345Z');
  const same = Array.from({ length: 200 }, () => uuidv7(at));
  assert.equal(new Set(same).size, 200);
  const later = uuidv7(new Date(at.getTime() + 1));
  assert.ok(same.every((id) => id < later));
});
