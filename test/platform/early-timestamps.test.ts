// The earliest client timestamps (years 0001–0099) reach the database as those years, not 1901–1999, and come back
// from it as those years: a `since` in year 1 is every entry of the log, and a key's times round-trip, on both backends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AccessLogWriter } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createGateway } from '../helpers/gateways.ts';
import { issueKey, keysTenant, latestLink, linkPath } from '../helpers/keys.ts';
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

test('timestamps of years 0001 to 0099 are read back from the database as those years', async () => {
  // PGlite's own parser read "0050-01-01 00:00:00+00" as 1950 and "0026-…" as an invalid date.
  for (const instant of ['0001-06-15T12:00:00.500Z', '0026-12-01T00:00:00.000Z', '0050-01-01T00:00:00.000Z', '0099-12-31T23:59:59.999Z']) {
    const [row] = await ctx.database.db.query<{ at: Date }>('SELECT $1::timestamptz AS at', [instant]);
    assert.equal(row?.at.toISOString(), instant);
  }
});

test("a key's starts_at in years 0001 to 0099 is kept and answered as given, never a 500", async () => {
  const t = await keysTenant(ctx.service);
  const invited = await issueKey(ctx.service, t, { channel: 'email', starts_at: '0026-12-01T00:00:00Z' });
  assert.equal(invited.status, 202, invited.text);
  // The setup link is sent (its text names the start) and opens the key.
  assert.ok(linkPath(await latestLink(ctx.service, t.email)));
  const card = await ctx.service.admin<{ id: number; starts_at: string }>('POST', '/admin/v1/keys', {
    person_id: t.personId,
    type: 'card',
    name: 'Badge',
    starts_at: '0001-06-15T00:00:00Z',
  });
  assert.equal(card.status, 201, card.text);
  assert.equal(card.body.starts_at, '0001-06-15T00:00:00.000Z');
  const readToken = (await createApiKey(ctx.service, t.locationId, ['keys:read', 'keys:write'])).token;
  const changed = await ctx.service.request<{ starts_at: string }>('PATCH', `/v1/keys/${card.body.id}`, { token: readToken, body: { starts_at: '0050-01-01T00:00:00Z' } });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.starts_at, '0050-01-01T00:00:00.000Z');
  const read = await ctx.service.request<{ starts_at: string }>('GET', `/v1/keys/${card.body.id}`, { token: readToken });
  assert.equal(read.body.starts_at, '0050-01-01T00:00:00.000Z');
});
