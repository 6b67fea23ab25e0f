// Group commit (src/platform/coalesced-calls.ts): writes asked for while one runs go together in the next
// write, each caller gets its own results, and one caller's rows refused as data cannot fail the others'.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CoalescedCalls } from '../../src/platform/coalesced-calls.ts';

const refused = () => Object.assign(new Error('bad row'), { refused: true });
const isRefused = (error: unknown) => (error as { refused?: boolean }).refused === true;

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('coalesced calls (group commit)', () => {
  test('the writes asked for in one turn, and those asked for while a write runs, go together; results are each caller\'s', async () => {
    const calls: string[][] = [];
    const gate = deferred();
    const writes = new CoalescedCalls<string, string>(async (items) => {
      calls.push(items);
      if (calls.length === 1) await gate.promise;
      return items.map((item) => item.toUpperCase());
    }, isRefused);
    const first = [writes.call(['a']), writes.call(['b', 'c'])];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls, [['a', 'b', 'c']], 'asked for in the same turn: one write');
    const later = [writes.call(['d']), writes.call(['e'])];
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calls.length, 1, 'nothing starts while a write runs');
    gate.resolve();
    assert.deepEqual(await Promise.all([...first, ...later]), [['A'], ['B', 'C'], ['D'], ['E']]);
    assert.deepEqual(calls, [['a', 'b', 'c'], ['d', 'e']]);
  });

  test('rows refused as data are written caller by caller: only the caller whose rows they are fails', async () => {
    const calls: string[][] = [];
    const writes = new CoalescedCalls<string, string>(async (items) => {
      calls.push(items);
      if (items.includes('poison')) throw refused();
      return items;
    }, isRefused);
    const results = await Promise.allSettled([writes.call(['a']), writes.call(['poison', 'b']), writes.call(['c'])]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.deepEqual(calls, [['a', 'poison', 'b', 'c'], ['a'], ['poison', 'b'], ['c']]);
  });

  test('any other failure (the database away) fails every caller of the write, and the next write is tried afresh', async () => {
    let away = true;
    const writes = new CoalescedCalls<string, string>(async (items) => {
      if (away) throw new Error('connection refused');
      return items;
    }, isRefused);
    const results = await Promise.allSettled([writes.call(['a']), writes.call(['b'])]);
    assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
    away = false;
    assert.deepEqual(await writes.call(['a']), ['a']);
  });

  test('with maxAtOnce, that many writes run at once, each with what waited when it started', async () => {
    const calls: string[][] = [];
    const gates = [deferred(), deferred()];
    const writes = new CoalescedCalls<string, string>(async (items) => {
      const gate = gates[calls.push(items) - 1];
      if (gate) await gate.promise;
      return items;
    }, isRefused, { maxAtOnce: 2 });
    const first = writes.call(['a']);
    await new Promise((resolve) => setImmediate(resolve));
    const second = [writes.call(['b']), writes.call(['c'])];
    await new Promise((resolve) => setImmediate(resolve));
    const third = writes.call(['d']);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls, [['a'], ['b', 'c']], 'two at once; the third waits for a free write');
    gates[0]?.resolve();
    assert.deepEqual(await first, ['a']);
    for (let turn = 0; turn < 3 && calls.length < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(calls, [['a'], ['b', 'c'], ['d']], 'started once a write was free');
    gates[1]?.resolve();
    assert.deepEqual(await Promise.all([...second, third]), [['b'], ['c'], ['d']]);
  });

  test('a write holds at most maxItems, never splitting a caller', async () => {
    const calls: string[][] = [];
    const writes = new CoalescedCalls<string, string>(async (items) => (calls.push(items), items), isRefused, { maxItems: 3 });
    await Promise.all([writes.call(['a', 'b']), writes.call(['c', 'd']), writes.call(['e']), writes.call(['f', 'g', 'h', 'i'])]);
    assert.deepEqual(calls, [['a', 'b'], ['c', 'd', 'e'], ['f', 'g', 'h', 'i']]);
  });

  test('with gatherMs, a write starts no sooner than that after the one before it started, gathering what came meanwhile; after a quiet moment at once', async () => {
    const gatherMs = 400;
    const started: Array<{ items: string[]; at: number }> = [];
    const writes = new CoalescedCalls<string, string>(async (items) => (started.push({ items, at: performance.now() }), items), isRefused, { gatherMs });
    const asked = performance.now();
    await writes.call(['a']);
    assert.ok((started[0]?.at ?? Infinity) - asked < gatherMs / 2, 'the first write starts at once');
    // Asked for one at a time after the first write ended: each waits for the interval, and they go together.
    const next = [writes.call(['b'])];
    await new Promise((resolve) => setTimeout(resolve, 20));
    next.push(writes.call(['c']));
    assert.deepEqual(await Promise.all(next), [['b'], ['c']]);
    assert.deepEqual(started.map((write) => write.items), [['a'], ['b', 'c']]);
    assert.ok((started[1]?.at ?? 0) - (started[0]?.at ?? 0) >= gatherMs - 1, 'the second write waited for the interval');
    // A quiet moment longer than the interval: the next write starts at once again.
    await new Promise((resolve) => setTimeout(resolve, gatherMs));
    const quietAsked = performance.now();
    await writes.call(['d']);
    assert.ok((started[2]?.at ?? Infinity) - quietAsked < gatherMs / 2, 'after a quiet moment, at once');
  });
});
