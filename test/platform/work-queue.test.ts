// The work queue's rules (docs/work-queue.md), without a database: which rung follows which attempt, the
// jitter's bounds, what a Retry-After may ask, when a row takes its end state; and the kinds as documented.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MESSAGE_WORK } from '../../src/modules/notifications/index.ts';
import { DELIVERY_WORK } from '../../src/modules/webhooks/dispatcher.ts';
import { TASK_WORK } from '../../src/modules/locking-system/tasks.ts';
import {
  STANDARD_LADDER_SECONDS,
  WorkQueue,
  checkWorkKind,
  dueAndUnleased,
  nextAttempt,
  parseRetryAfter,
  rungAfter,
  withJitter,
  type Lease,
  type WorkKind,
} from '../../src/platform/work-queue.ts';

const NOW = new Date('2025-03-01T12:00:00Z');

function kind(overrides: Partial<WorkKind> = {}): WorkKind {
  return {
    name: 'test',
    ladderSeconds: STANDARD_LADDER_SECONDS,
    endState: 'gave_up',
    jitterRatio: 0,
    retryAfterCapSeconds: 3600,
    leaseSeconds: 60,
    batchSize: 10,
    ...overrides,
  };
}

const never = () => assert.fail('random is not drawn without jitter');

describe('ladder', () => {
  test('the standard ladder is 1 m, 5 m, 30 m, 2 h, 6 h, 24 h', () => {
    assert.deepEqual(STANDARD_LADDER_SECONDS, [60, 300, 1800, 7200, 21_600, 86_400]);
  });

  test('after attempt n the next waits rung n, to the second', () => {
    for (const [index, seconds] of STANDARD_LADDER_SECONDS.entries()) {
      const next = nextAttempt(kind(), index + 1, NOW, {}, never);
      assert.deepEqual(next, { retry: true, delaySeconds: seconds, at: new Date(NOW.getTime() + seconds * 1000) }, `after attempt ${index + 1}`);
    }
  });

  test('the attempt after the last rung that fails ends the row in its end state', () => {
    assert.deepEqual(nextAttempt(kind(), STANDARD_LADDER_SECONDS.length + 1, NOW), { retry: false, endState: 'gave_up' });
    assert.deepEqual(nextAttempt(kind(), 50, NOW), { retry: false, endState: 'gave_up' });
    assert.deepEqual(rungAfter(kind({ ladderSeconds: [5] }), 2), { endState: 'gave_up' });
  });

  test('a kind without an end state keeps retrying on its last rung', () => {
    const forever = kind({ endState: null });
    assert.equal(rungAfter(forever, 6), 86_400);
    assert.equal(rungAfter(forever, 7), 86_400);
    assert.equal(rungAfter(forever, 1000), 86_400);
    assert.equal(rungAfter(forever, 1), 60);
  });

  test('fewer than one attempt reads as the first', () => {
    assert.equal(rungAfter(kind(), 0), 60);
    assert.equal(rungAfter(kind(), -3), 60);
  });

  test('a custom ladder is followed as configured', () => {
    const short = kind({ ladderSeconds: [1, 2, 3], endState: 'done_trying' });
    assert.deepEqual([1, 2, 3, 4].map((n) => rungAfter(short, n)), [1, 2, 3, { endState: 'done_trying' }]);
  });
});

describe('jitter', () => {
  test('is never earlier than the rung and under rung × (1 + ratio)', () => {
    assert.equal(withJitter(300, 0.2, () => 0), 300);
    assert.ok(withJitter(300, 0.2, () => 0.999_999) < 360);
    assert.ok(withJitter(300, 0.2, () => 0.999_999) > 359.9);
    for (let i = 0; i < 1000; i++) {
      const seconds = withJitter(1800, 0.1);
      assert.ok(seconds >= 1800 && seconds < 1980, String(seconds));
    }
  });

  test('draws the share from random: half the ratio at 0.5', () => {
    assert.equal(withJitter(1000, 0.5, () => 0.5), 1250);
    assert.deepEqual(nextAttempt(kind({ jitterRatio: 0.5 }), 3, NOW, {}, () => 0.5), {
      retry: true,
      delaySeconds: 2250,
      at: new Date(NOW.getTime() + 2_250_000),
    });
  });

  test('a ratio of 0 is exact and draws nothing', () => {
    assert.equal(withJitter(7200, 0, never), 7200);
  });
});

describe('Retry-After', () => {
  test('a hint longer than the rung is honoured', () => {
    const next = nextAttempt(kind(), 1, NOW, { retryAfterSeconds: 600 });
    assert.deepEqual(next, { retry: true, delaySeconds: 600, at: new Date(NOW.getTime() + 600_000) });
  });

  test('a hint shorter than the rung never makes the retry earlier', () => {
    assert.equal(delayOf(nextAttempt(kind(), 2, NOW, { retryAfterSeconds: 5 })), 300);
    assert.equal(delayOf(nextAttempt(kind(), 2, NOW, { retryAfterSeconds: 0 })), 300);
  });

  test('a hint is cut to the kind\'s cap', () => {
    assert.equal(delayOf(nextAttempt(kind({ retryAfterCapSeconds: 3600 }), 1, NOW, { retryAfterSeconds: 1_000_000 })), 3600);
    // A rung above the cap stays the rung.
    assert.equal(delayOf(nextAttempt(kind({ retryAfterCapSeconds: 3600 }), 5, NOW, { retryAfterSeconds: 1_000_000 })), 21_600);
  });

  test('a hint adds no attempt: after the last rung the row still ends', () => {
    assert.deepEqual(nextAttempt(kind(), 7, NOW, { retryAfterSeconds: 60 }), { retry: false, endState: 'gave_up' });
  });

  test('an absent or unreadable hint is ignored', () => {
    for (const retryAfterSeconds of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.equal(delayOf(nextAttempt(kind(), 1, NOW, { retryAfterSeconds })), 60, String(retryAfterSeconds));
    }
  });

  test('the header is read as delta-seconds or an HTTP date', () => {
    assert.equal(parseRetryAfter('120', NOW), 120);
    assert.equal(parseRetryAfter(' 0 ', NOW), 0);
    assert.equal(parseRetryAfter(['30', '99'], NOW), 30);
    assert.equal(parseRetryAfter(new Date(NOW.getTime() + 90_000).toUTCString(), NOW), 90);
    assert.equal(parseRetryAfter(new Date(NOW.getTime() - 90_000).toUTCString(), NOW), 0);
    for (const bad of [undefined, null, '', '-5', '1.5', '12abc', 'soon', 'Friday']) assert.equal(parseRetryAfter(bad, NOW), null, String(bad));
  });
});

describe('kinds and the queue', () => {
  test('messages end `failed`, deliveries `exhausted`, tasks never; all on the standard ladder without jitter', () => {
    assert.deepEqual(
      [MESSAGE_WORK, DELIVERY_WORK, TASK_WORK].map((k) => [k.endState, k.ladderSeconds, k.jitterRatio]),
      [
        ['failed', STANDARD_LADDER_SECONDS, 0],
        ['exhausted', STANDARD_LADDER_SECONDS, 0],
        [null, STANDARD_LADDER_SECONDS, 0],
      ],
    );
    assert.deepEqual([TASK_WORK.leaseSeconds, TASK_WORK.batchSize], [120, 20]);
    assert.deepEqual([MESSAGE_WORK.leaseSeconds, MESSAGE_WORK.batchSize, DELIVERY_WORK.leaseSeconds, DELIVERY_WORK.batchSize], [120, 20, 20, 64]);
  });

  test('a kind that would misbehave is refused', () => {
    for (const bad of [
      { ladderSeconds: [] },
      { ladderSeconds: [60, 0] },
      { jitterRatio: -0.1 },
      { jitterRatio: 2 },
      { leaseSeconds: 0 },
      { batchSize: 1.5 },
      { retryAfterCapSeconds: -1 },
    ]) {
      assert.throws(() => checkWorkKind(kind(bad)), RangeError, JSON.stringify(bad));
    }
    assert.throws(() => rungAfter(kind({ ladderSeconds: [], endState: null }), 1), RangeError);
  });

  test('claims through the store with the lease and batch size of the kind, on the service clock', async () => {
    const leases: Lease[] = [];
    const queue = new WorkQueue(kind({ leaseSeconds: 90, batchSize: 7 }), { claimDue: async (lease) => (leases.push(lease), ['row']) }, { now: () => NOW });
    assert.deepEqual(await queue.claim(), ['row']);
    const other = new Date(NOW.getTime() + 5000);
    await queue.claim(other);
    assert.deepEqual(leases, [
      { now: NOW, until: new Date(NOW.getTime() + 90_000), batchSize: 7 },
      { now: other, until: new Date(other.getTime() + 90_000), batchSize: 7 },
    ]);
    assert.deepEqual(queue.next(1), { retry: true, delaySeconds: 60, at: new Date(NOW.getTime() + 60_000) });
    assert.deepEqual(queue.next(7), { retry: false, endState: 'gave_up' });
  });

  test('the shared claim condition: pending, due at $1, no live lease', () => {
    assert.equal(dueAndUnleased(), `status = 'pending' AND next_attempt_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)`);
    assert.equal(dueAndUnleased('d'), `d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.claimed_until IS NULL OR d.claimed_until < $1)`);
  });
});

function delayOf(next: ReturnType<typeof nextAttempt>): number | string {
  return next.retry ? next.delaySeconds : next.endState;
}
