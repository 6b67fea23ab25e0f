// Access decisions with two service instances on one PostgreSQL and one external broker: whichever instance
// a change is made through pushes it to the gateway, whichever instance receives a gateway's request, sync or
// applied version handles it, and each online decision is logged once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import mqtt from 'mqtt';
import { after, test } from 'node:test';
import { simulateGateway } from '../../packages/cli/src/gateway-simulator.ts';
import { backend } from '../helpers/database.ts';
import { createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';

const externalUrl = process.env.TEST_MQTT_URL;
const skip = backend !== 'postgres' ? 'needs PostgreSQL (LATCHKEY_TEST_BACKEND=postgres)' : !externalUrl ? 'set TEST_MQTT_URL to run' : false;

const ctx = useTestService();
const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

interface Decision {
  granted: boolean;
  reason: string | null;
  key_id: number | null;
  source: string;
}

test('a change made through either instance reaches the gateway; requests, syncs and applied versions are handled by whichever receives them', { skip }, async () => {
  const env = { MQTT_URL: externalUrl as string };
  const a: TestService = await startService(await ctx.database.openAnother(), env);
  closers.push(() => a.close());
  const b: TestService = await startService(await ctx.database.openAnother(), env);
  closers.push(() => b.close());

  const account = await createAccount(a);
  const root = account.rootLocationId;
  await createSecurityGroup(a, root, 'staff');
  const gateway = await a.admin<{ id: number; mqtt: { password: string } }>('POST', '/admin/v1/gateways', { location_id: root, name: 'gw' });
  const lock = await createLock(a, root, { name: 'Gate', gateway_id: gateway.body.id, security_groups: ['staff'] });
  const token = (await createApiKey(b, root, ['keys:read', 'keys:write', 'events:read'])).token;
  const person = await a.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada', email: `ada-${randomUUID()}@example.com`, location_id: root });
  const card = async (via: TestService, credential: string) =>
    (await via.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential })).body.id;
  const first = await card(a, 'uid:a0a0a0a0');

  // The reference gateway, on the external broker (the machine's Mosquitto takes anyone).
  const input = new PassThrough();
  const records: Array<Record<string, unknown>> = [];
  const done = simulateGateway({
    url: externalUrl as string,
    id: String(gateway.body.id),
    password: gateway.body.mqtt.password,
    prefix: 'latchkey/v1',
    answer: 'ok',
    error: 'device_error',
    locks: [],
    key: null,
    randomPerMinute: 0,
    input,
    log: (_line, record) => records.push(record),
  });
  closers.push(async () => {
    input.write('quit\n');
    await done;
  });
  const applied = () => records.filter((r) => r.type === 'list_applied').length;
  const decisions = () => records.filter((r) => r.type === 'decision') as unknown as Decision[];
  const swipe = async (credential: string): Promise<Decision> => {
    const before = decisions().length;
    input.write(`swipe ${lock} ${credential}\n`);
    await waitFor(() => decisions().length > before, 'the decision', 10_000);
    return decisions()[before] as Decision;
  };
  await waitFor(() => applied() > 0, 'the list applied', 10_000);
  const granted = await swipe('uid:a0a0a0a0');
  assert.deepEqual([granted.granted, granted.key_id, granted.source], [true, first, 'copy']);

  // Made through B, pushed by B; made through A, pushed by A.
  let seen = applied();
  assert.equal((await b.request('DELETE', `/v1/keys/${first}`, { token })).status, 204);
  await waitFor(() => applied() > seen, 'the revocation applied', 10_000);
  assert.equal((await swipe('uid:a0a0a0a0')).granted, false);
  seen = applied();
  const second = await card(a, 'uid:b1b1b1b1');
  await waitFor(() => applied() > seen, 'the new card applied', 10_000);
  assert.deepEqual([(await swipe('uid:b1b1b1b1')).key_id], [second]);

  // A change waits for the gateway, whichever instance hears that it applied it.
  const changed = await b.request<{ state: string }>('PATCH', `/v1/keys/${second}`, { token, body: { expires_at: '2099-01-01T00:00:00Z' } });
  assert.equal(changed.body.state, 'sent');
  await waitFor(async () => (await a.request<{ state: string }>('GET', `/v1/keys/${second}`, { token })).body.state === 'handed_over', 'handed_over', 10_000);

  // Asked online (the revoked card was too): answered by one instance, logged once.
  const online = async () => (await ctx.database.db.query(`SELECT id FROM access_events WHERE lock_id = $1 AND gateway_event_id LIKE 'request:%'`, [lock])).length;
  await waitFor(async () => (await online()) === 1, 'the revoked card asked online, logged');
  const unknown = await swipe('uid:c2c2c2c2');
  assert.deepEqual([unknown.granted, unknown.reason, unknown.source], [false, 'unknown_key', 'online']);
  await waitFor(async () => (await online()) === 2, 'the decision logged');
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(await online(), 2);

  // Each instance remembers the keys presented online; a revocation through B must make A forget at once too.
  // Asked by a client of the gateway's topics (the machine's Mosquitto takes anyone), every instance answering.
  const third = await card(a, 'uid:d4d4d4d4');
  const asker = await mqtt.connectAsync(externalUrl as string, { clientId: `asker-${randomUUID()}`, reconnectPeriod: 0 });
  closers.push(() => asker.endAsync());
  const base = `latchkey/v1/gateways/${gateway.body.id}/access`;
  const answers = new Map<string, Array<{ granted: boolean }>>();
  asker.on('message', (_topic, payload) => {
    const answer = JSON.parse(payload.toString()) as { id: string; granted: boolean };
    answers.set(answer.id, [...(answers.get(answer.id) ?? []), answer]);
  });
  await asker.subscribeAsync(`${base}/answer`, { qos: 1 });
  /** Every instance's answer to one request (each instance that received it answers). */
  const ask = async (): Promise<boolean[]> => {
    const id = randomUUID();
    await asker.publishAsync(`${base}/request`, JSON.stringify({ id, lock_id: lock, credential: 'uid:d4d4d4d4' }), { qos: 1 });
    await waitFor(() => (answers.get(id)?.length ?? 0) >= 2, 'both instances answering');
    return (answers.get(id) ?? []).map((answer) => answer.granted);
  };
  assert.deepEqual(await ask(), [true, true]);
  assert.equal((await b.request('DELETE', `/v1/keys/${third}`, { token })).status, 204);
  const revokedAt = Date.now();
  let answered = await ask();
  while (answered.includes(true) && Date.now() - revokedAt < 2000) answered = await ask();
  assert.deepEqual(answered, [false, false]);
  assert.ok(Date.now() - revokedAt < 1000, `denied by both instances ${Date.now() - revokedAt} ms after the revocation`);
});
