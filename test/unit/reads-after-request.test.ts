// Reads shared only with requests made before they began (src/platform/reads-after-request.ts): the mechanism
// behind the switched-off page cache and the keys swiped online, whose own tests try it through them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReadsAfterRequest } from '../../src/platform/reads-after-request.ts';

test('requests made while a read runs share the next read, with their items; another key reads at once', async () => {
  const started: Array<{ key: string; items: readonly number[] }> = [];
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const reads = new ReadsAfterRequest<string, number, string>(async (key, items) => {
    started.push({ key, items: [...items] });
    if (started.length === 1) await held;
    return `${key}:${items.join(',')}`;
  });
  const first = reads.get('a', 1);
  const meanwhile = [reads.get('a', 2), reads.get('a', 3)];
  const other = reads.get('b', 9);
  assert.deepEqual(started, [{ key: 'a', items: [1] }, { key: 'b', items: [9] }], 'the next read of a waits for the running one');
  release();
  assert.deepEqual(await Promise.all([first, ...meanwhile, other]), ['a:1', 'a:2,3', 'a:2,3', 'b:9']);
  assert.equal(await reads.get('a', 4), 'a:4', 'nothing running: a read of its own at once');
});

test('a read that throws at once fails its own requests only; the next read is made afresh', async () => {
  let throwing = true;
  const reads = new ReadsAfterRequest<string, number, number>((_key, items) => {
    if (throwing) throw new Error('refused');
    return Promise.resolve(items.length);
  });
  await assert.rejects(reads.get('a', 1), /refused/);
  throwing = false;
  assert.equal(await reads.get('a', 2), 1);
});
