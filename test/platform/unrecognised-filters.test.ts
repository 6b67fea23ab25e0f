// Filters whose unrecognised values match nothing (spec: `GET /keys?state=`, `GET /events?type=`) answer an empty
// page whatever their length, up to what a request line can carry; a long list of valid door types, spaced or
// repeated, is read as those types.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AccessLogWriter } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { MAX_REQUEST_LINE_LENGTH } from '../../src/platform/http.ts';
import { createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const ctx = useTestService();

const DOOR_TYPES = ['access.granted', 'access.denied', 'door.closed', 'door.left_open'];

test('GET /v1/keys?state= with an unrecognised state of any length is an empty page', async () => {
  const account = await createAccount(ctx.service);
  await createSecurityGroup(ctx.service, account.rootLocationId, 'staff');
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['people:write', 'keys:write'])).token;
  const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Ann' } });
  await ctx.service.admin('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge', security_groups: ['staff'] });
  const handedOver = await ctx.service.request<Page<unknown>>('GET', '/v1/keys?state=handed_over', { token });
  assert.equal(handedOver.body.data.length, 1, handedOver.text);
  for (const state of ['bogus', 'x'.repeat(32), 'x'.repeat(33), 'handed_over'.repeat(10), 'x'.repeat(8000)]) {
    const res = await ctx.service.request<Page<unknown>>('GET', `/v1/keys?state=${state}`, { token });
    assert.equal(res.status, 200, `state of ${state.length}: ${res.text.slice(0, 200)}`);
    assert.deepEqual(res.body, { data: [], next_cursor: null }, `state of ${state.length}`);
  }
});

test('GET /v1/events?type= reads a long list of door types, spaced or repeated, and an unrecognised one of any length is an empty page', async () => {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lock = await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['events:read'])).token;
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  for (const [i, type] of DOOR_TYPES.entries()) {
    await writer.ingest(gateway.id, { id: `e${i}`, lock_id: lock, type: type as 'door.closed', occurred_at: '2026-11-20T08:00:00Z', key_id: null, reason: null });
  }
  const all = await ctx.service.request<Page<{ type: string }>>('GET', '/v1/events', { token });
  assert.deepEqual(all.body.data.map((e) => e.type), DOOR_TYPES);

  const spaced = Array(6).fill(DOOR_TYPES.join(', ')).join(',');
  const doors = Array(40).fill('door.closed , door.left_open').join(' ,');
  for (const [list, expected] of [
    [spaced, DOOR_TYPES],
    [doors, ['door.closed', 'door.left_open']],
    [`${'x'.repeat(300)},access.granted`, ['access.granted']],
  ] as const) {
    assert.ok(list.length > 200);
    const res = await ctx.service.request<Page<{ type: string }>>('GET', `/v1/events?type=${encodeURIComponent(list)}`, { token });
    assert.equal(res.status, 200, `type of ${list.length}: ${res.text.slice(0, 200)}`);
    assert.deepEqual(res.body.data.map((e) => e.type), expected, `type of ${list.length}`);
  }
  for (const list of ['bogus', 'x'.repeat(201), Array(500).fill('unlock.failed').join(','), 'y'.repeat(8000)]) {
    const res = await ctx.service.request<Page<unknown>>('GET', `/v1/events?type=${list}`, { token });
    assert.equal(res.status, 200, `type of ${list.length}: ${res.text.slice(0, 200)}`);
    assert.deepEqual(res.body, { data: [], next_cursor: null }, `type of ${list.length}`);
  }
});

test('the bound of those filters is what a request line can carry: beyond it Node refuses the request with 431', async () => {
  const account = await createAccount(ctx.service);
  const token = (await createApiKey(ctx.service, account.rootLocationId, ['events:read', 'keys:read'])).token;
  for (const path of [`/v1/events?type=${'z'.repeat(MAX_REQUEST_LINE_LENGTH)}`, `/v1/keys?state=${'z'.repeat(MAX_REQUEST_LINE_LENGTH)}`]) {
    const res = await ctx.service.request('GET', path, { token });
    assert.equal(res.status, 431, path.slice(0, 20));
  }
});
