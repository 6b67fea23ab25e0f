// The one backoff of the service (platform/backoff.ts): the LISTEN connection and gateway messages wait by it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffMs } from '../../src/platform/backoff.ts';

test('doubles from 100 ms and never waits longer than 5 s', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7, 40].map(backoffMs), [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
});
