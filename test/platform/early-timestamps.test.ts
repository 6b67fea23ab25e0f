// The earliest client timestamps (years 0001–0099) reach the database as those years, not 1901–1999: a `since`
// in year 1 is every entry of the log, on both backends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AccessLogWriter } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createGateway } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService();

test('GET /v1/events?since= in years 0001 to 0099 lists the log from then on', async () => {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lock = await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['events:read'])).token;
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  await writer.ingest(gateway.id, { id: 'e1', lock_id: lock, type: 'door.closed', occurred_at: '1950-06-01T00:00:00Z', key_id: null, reason: null });
  for (const since of ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z', '0050-01-01T00:00:00Z', '0099-12-31T23:59:59.999Z', '0100-01-01T00:00:00Z']) {
    const res = await ctx.service.request<Page<{ occurred_at: string }>>('GET', `/v1/events?since=${encodeURIComponent(since)}`, { token });
    assert.equal(res.status, 200, `${since}: ${res.text}`);
    assert.deepEqual(res.body.data.map((e) => e.occurred_at), ['1950-06-01T00:00:00.000Z'], since);
  }
  const before = await ctx.service.request<Page<unknown>>('GET', `/v1/events?since=${encodeURIComponent('0000-12-31T23:59:59Z')}`, { token });
  assert.equal(before.status, 400, 'year 0 is before the first instant');
});
