// A whole-account rebuild of the gateways' lists walked as a circle (src/modules/access/rebuild-progress.ts),
// simulated against requests at any moment, also while a part is being built: when it ends, every key was built
// after the last request; a request never throws work away (requests faster than a rebuild cannot starve it);
// once they stop it ends within one round.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { progressAfterPart, type RebuildProgress } from '../../src/modules/access/rebuild-progress.ts';

/** The rebuild's row as the database keeps it (requestRebuild's SQL, and recordRebuildPart's). */
class Simulation {
  row: RebuildProgress | null = null;
  time = 0;
  lastRequestAt = -1;
  /** When each key was last built (the moment its part read the rules). */
  readonly builtAt: Map<number, number>;
  parts = 0;

  constructor(
    readonly keyIds: number[],
    readonly size: number,
  ) {
    this.builtAt = new Map(keyIds.map((id) => [id, -1]));
  }

  request(): void {
    this.lastRequestAt = ++this.time;
    this.row = this.row
      ? { ...this.row, generation: String(Number(this.row.generation) + 1), untilKeyId: this.row.afterKeyId, wrapped: false }
      : { generation: '1', afterKeyId: 0, untilKeyId: 0, wrapped: false };
  }

  /** One part; `requestsMeanwhile` requests come after it read the rules, before it records. Returns whether it ended the rebuild. */
  part(requestsMeanwhile = 0): boolean {
    const claimed = this.row;
    if (!claimed) return true;
    this.parts++;
    const readAt = ++this.time;
    const built = this.keyIds.filter((id) => id > claimed.afterKeyId && (!claimed.wrapped || id <= claimed.untilKeyId)).slice(0, this.size);
    for (const id of built) this.builtAt.set(id, readAt);
    for (let i = 0; i < requestsMeanwhile; i++) this.request();
    const next = progressAfterPart(claimed, this.row as RebuildProgress, built, this.size);
    this.row = next === 'done' ? null : next;
    if (next === 'done') {
      const stale = [...this.builtAt].filter(([, at]) => at < this.lastRequestAt).map(([id]) => id);
      assert.deepEqual(stale, [], `done, but keys built before the last request: ${stale.join(', ')}`);
    }
    return next === 'done';
  }

  /** Parts until done, at most `limit`; how many it took. */
  finish(limit: number): number {
    for (let n = 1; n <= limit; n++) if (this.part()) return n;
    assert.fail(`not done after ${limit} parts: ${JSON.stringify(this.row)}`);
  }
}

const keySet = fc.uniqueArray(fc.integer({ min: 1, max: 80 }), { maxLength: 40 }).map((ids) => ids.sort((a, b) => a - b));
const step = fc.oneof(fc.constant({ request: true, meanwhile: 0 }), fc.record({ request: fc.constant(false), meanwhile: fc.integer({ min: 0, max: 2 }) }));
/** One round from anywhere: to the last key, round to where it stood, and an empty part at each turn. */
const oneRound = (keys: number, size: number) => Math.ceil(keys / size) + 3;

describe('a rebuild of the gateways’ lists walked as a circle', () => {
  test('whatever the requests, also while a part is built: done means every key built after the last request, and it ends within a round once they stop', () => {
    fc.assert(
      fc.property(keySet, fc.integer({ min: 1, max: 7 }), fc.array(step, { maxLength: 60 }), (keyIds, size, steps) => {
        const sim = new Simulation(keyIds, size);
        sim.request();
        for (const s of steps) {
          if (s.request) sim.request();
          else sim.part(s.meanwhile);
        }
        if (sim.row) sim.finish(oneRound(keyIds.length, size));
      }),
      { numRuns: 2000 },
    );
  });

  test('a request while every part is built never starves it: each key is built again within a round, and it ends within one more', () => {
    fc.assert(
      fc.property(keySet.filter((ids) => ids.length > 0), fc.integer({ min: 1, max: 7 }), (keyIds, size) => {
        const sim = new Simulation(keyIds, size);
        sim.request();
        for (let round = 0; round < 3; round++) {
          const from = sim.time;
          for (let n = 0; n < oneRound(keyIds.length, size); n++) sim.part(1);
          const missed = [...sim.builtAt].filter(([, at]) => at <= from).map(([id]) => id);
          assert.deepEqual(missed, [], `round ${round}: keys not built again`);
        }
        sim.finish(oneRound(keyIds.length, size));
      }),
      { numRuns: 500 },
    );
  });

  test('a request in the middle goes on from where the rebuild stands, not from the first key', () => {
    const sim = new Simulation([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 3);
    sim.request();
    sim.part();
    sim.part();
    assert.deepEqual(sim.row, { generation: '1', afterKeyId: 6, untilKeyId: 0, wrapped: false });
    sim.request();
    assert.deepEqual(sim.row, { generation: '2', afterKeyId: 6, untilKeyId: 6, wrapped: false });
    const order: number[][] = [];
    for (;;) {
      const before = new Map(sim.builtAt);
      const done = sim.part();
      order.push([...sim.builtAt].filter(([id, at]) => at !== before.get(id)).map(([id]) => id));
      if (done) break;
    }
    assert.deepEqual(order, [[7, 8, 9], [10], [1, 2, 3], [4, 5, 6], []]);
  });
});
