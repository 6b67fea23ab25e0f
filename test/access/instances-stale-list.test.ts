// Two service instances on one PostgreSQL and one external broker, and a whole access list one of them reads just
// before another commits a revocation: the other's push of the change may reach the gateway before that list, which
// replaces the copy. The list must be followed by the change, or the revoked card is back in the gateway's copy
// until the next push (docs/spec/gateway-mqtt.md). Alone in its file: no other instance may answer the syncs.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import mqtt from 'mqtt';
import { after, test } from 'node:test';
import type { Sql } from '../../src/platform/db/index.ts';
import { backend, overriding } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startService, useTestService } from '../helpers/service.ts';

const externalUrl = process.env.TEST_MQTT_URL;
const skip = backend !== 'postgres' ? 'needs PostgreSQL (LATCHKEY_TEST_BACKEND=postgres)' : !externalUrl ? 'set TEST_MQTT_URL to run' : false;

const ctx = useTestService();
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

test('a whole list read before a change and sent after another instance pushed it is followed by that change: a card revoked meanwhile does not come back', { skip }, async () => {
  const env = { MQTT_URL: externalUrl as string };
  // X answers syncs; right after it reads a whole list, the hook revokes a card through Y, whose push of the change
  // reaches the gateway before X's list. Y never claims a sync, so X is the one answering.
  let afterWholeListRead: (() => Promise<void>) | null = null;
  const xDb = await ctx.database.openAnother();
  const x = await startService(
    overriding(xDb, {
      query: async <T extends object>(sql: Sql, params?: readonly unknown[]): Promise<T[]> => {
        const rows = await xDb.query<T>(sql, params);
        const text = typeof sql === 'string' ? sql : sql.text;
        if (afterWholeListRead && text.startsWith('SELECT entry FROM gateway_access_entries')) {
          const hook = afterWholeListRead;
          afterWholeListRead = null;
          await hook();
        }
        return rows;
      },
    }),
    env,
  );
  closers.push(() => x.close());
  const yDb = await ctx.database.openAnother();
  const y = await startService(
    overriding(yDb, {
      query: <T extends object>(sql: Sql, params?: readonly unknown[]): Promise<T[]> =>
        (typeof sql === 'string' ? sql : sql.text).includes('SET access_sync_claim') ? Promise.resolve([]) : yDb.query<T>(sql, params),
    }),
    env,
  );
  closers.push(() => y.close());

  const account = await createAccount(x);
  const root = account.rootLocationId;
  await createSecurityGroup(x, root, 'staff');
  const gateway = await x.admin<{ id: number; mqtt: { client_id: string; username: string; password: string } }>('POST', '/admin/v1/gateways', { location_id: root, name: 'gw' });
  await createLock(x, root, { name: 'Gate', gateway_id: gateway.body.id, security_groups: ['staff'] });
  const token = (await createApiKey(y, root, ['keys:read', 'keys:write'])).token;
  const person = await x.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', email: `ada-${randomUUID()}@example.com`, location_id: root });
  const card = await x.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential: 'uid:b1b1b1b1' });
  assert.equal(card.status, 201, card.text);

  const base = `latchkey/v1/gateways/${gateway.body.id}`;
  const lists: Array<{ type: string; version: number; entries: Array<{ key_id: number }>; removed: number[] }> = [];
  const device = await mqtt.connectAsync(externalUrl as string, { clientId: gateway.body.mqtt.client_id, username: gateway.body.mqtt.username, password: gateway.body.mqtt.password, reconnectPeriod: 0 });
  closers.push(() => device.endAsync(true));
  device.on('message', (topic, payload) => topic === `${base}/access/list` && lists.push(JSON.parse(payload.toString())));
  await device.subscribeAsync(`${base}/access/list`, { qos: 1 });
  await device.publishAsync(`${base}/access/sync`, JSON.stringify({ version: 0 }), { qos: 1 });
  await waitFor(() => lists.some((l) => l.type === 'full'), 'the whole list', 10_000);
  const first = lists.find((l) => l.type === 'full') as (typeof lists)[number];
  assert.deepEqual(first.entries.map((e) => e.key_id), [card.body.id]);
  await device.publishAsync(`${base}/access/applied`, JSON.stringify({ version: first.version }), { qos: 1 });
  await new Promise((resolve) => setTimeout(resolve, 2100)); // past the claim window of a whole list

  afterWholeListRead = async () => {
    assert.equal((await y.request('DELETE', `/v1/keys/${card.body.id}`, { token })).status, 204);
    await waitFor(() => lists.some((l) => l.type === 'changes' && l.removed.includes(card.body.id)), "Y's push of the revocation", 10_000);
    // The gateway applies it and says so: no instance's push job has anything to send it again after this.
    const change = lists.find((l) => l.type === 'changes' && l.removed.includes(card.body.id)) as (typeof lists)[number];
    await device.publishAsync(`${base}/access/applied`, JSON.stringify({ version: change.version }), { qos: 1 });
    await waitFor(
      async () => Number((await ctx.database.db.query<{ v: string }>('SELECT access_applied_version AS v FROM gateways WHERE id = $1', [gateway.body.id]))[0]?.v) >= change.version,
      'the applied version recorded',
      10_000,
    );
  };
  const seen = lists.length;
  await device.publishAsync(`${base}/access/sync`, JSON.stringify({ version: 0 }), { qos: 1 });
  await waitFor(() => lists.slice(seen).some((l) => l.type === 'full'), "X's whole list, read before the revocation", 10_000);
  const stale = lists.slice(seen).find((l) => l.type === 'full') as (typeof lists)[number];
  assert.deepEqual(stale.entries.map((e) => e.key_id), [card.body.id], 'the list X read before the revocation');
  // What the gateway applies last must take the card out again: X's next message, the changes from the list's
  // version. (Nothing else would come: the gateway said it applied the revocation.)
  await waitFor(() => lists.length > lists.indexOf(stale) + 1, 'a message after the whole list', 5_000);
  const next = lists[lists.indexOf(stale) + 1] as (typeof lists)[number] & { from?: number };
  // The changes since the list, or (the gateway's acknowledgement pruned them) the whole list again, without the card.
  if (next.type === 'changes') assert.deepEqual([next.from, next.removed], [stale.version, [card.body.id]]);
  else assert.deepEqual([next.type, next.entries], ['full', []]);
});
