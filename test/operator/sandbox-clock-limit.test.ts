// The sandbox clock stops short of year 10000: past it no date-time the service writes is a valid one.
// A file of its own, since it leaves its database's clock thousands of years ahead.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SANDBOX_CLOCK_CHANNEL } from '../../src/platform/channels.ts';
import { advanceClock } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

const ctx = useTestService();
const TEN_YEARS = 10 * 365 * 86_400;
const LIMIT = Date.parse('9000-01-01T00:00:00Z');

describe('sandbox clock limit', () => {
  test('an advance past 9000-01-01 is 422 on seconds and leaves the clock where it was; up to it, the clock moves', async () => {
    const start = await advanceClock(ctx.service, 0);
    // Some ten-year steps at once, then the rest of the 7,000 years as another instance's advances would leave
    // them: the stored offset and its notification (700 steps through the API cost minutes of CPU, each running
    // the jobs that came due). From a few steps short of the limit, through the API again.
    await Promise.all(Array.from({ length: 3 }, () => ctx.service.admin('POST', '/admin/v1/sandbox/clock/advance', { seconds: TEN_YEARS })));
    // Advances at once add up: none is lost to another.
    const moved = (await advanceClock(ctx.service, 0)).getTime() - start.getTime();
    assert.ok(moved >= 3 * TEN_YEARS * 1000 && moved < 3 * TEN_YEARS * 1000 + 60_000, String(moved));
    const offset = LIMIT - 4 * TEN_YEARS * 1000 - Date.now();
    assert.ok(offset > Number((await ctx.database.db.query<{ value: string }>("SELECT value FROM settings WHERE key = 'sandbox_clock_offset_ms'"))[0]?.value));
    await ctx.database.db.transaction(async (tx) => {
      await tx.query("UPDATE settings SET value = $1 WHERE key = 'sandbox_clock_offset_ms'", [String(offset)]);
      await tx.notify(SANDBOX_CLOCK_CHANNEL, String(offset));
    });
    await waitFor(async () => (await advanceClock(ctx.service, 0)).getTime() >= LIMIT - 4 * TEN_YEARS * 1000, 'the service follows the stored offset');
    let near = await advanceClock(ctx.service, 0);
    while (LIMIT - near.getTime() > 86_400_000 + 1000) near = await advanceClock(ctx.service, Math.min(TEN_YEARS, (LIMIT - near.getTime()) / 1000 - 86_400));
    assert.ok(near.getTime() < LIMIT && LIMIT - near.getTime() <= 86_400_000 + 1000, near.toISOString());

    const refused = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/sandbox/clock/advance', { seconds: 2 * 86_400 });
    const again = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/sandbox/clock/advance', { seconds: TEN_YEARS });
    for (const res of [refused, again]) {
      assert.equal(res.status, 422);
      assert.equal(res.body.error.code, 'validation_failed');
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['seconds', 'invalid']]);
    }
    const after = await advanceClock(ctx.service, 0);
    assert.ok(after.getTime() - near.getTime() < 60_000, `the refused advances moved nothing: ${after.toISOString()}`);
    // Up to a minute short of the limit still goes through.
    const later = await advanceClock(ctx.service, (LIMIT - after.getTime()) / 1000 - 60);
    assert.ok(later.getTime() < LIMIT && LIMIT - later.getTime() < 70_000, later.toISOString());
  });
});
