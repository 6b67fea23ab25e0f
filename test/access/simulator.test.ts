// The reference gateway (npm run gateway: packages/cli's simulator, in this process) against the service
// through the real broker: it keeps the list on disk, decides from it at the door, asks the service about a
// credential it lacks, keeps deciding with the link cut and reports those decisions when it is back, and
// grants nothing from a copy past its offline limit. Each rule that grants is tried where it must not.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, test } from 'node:test';
import { simulateGateway } from '../../packages/cli/src/gateway-simulator.ts';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, waitFor, type GatewayCredentials } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();
const dataDir = await mkdtemp(path.join(tmpdir(), 'latchkey-gateway-'));
after(() => rm(dataDir, { recursive: true, force: true }));

interface Decision {
  type: 'decision';
  lock_id: number;
  granted: boolean;
  reason: string | null;
  key_id: number | null;
  source: string;
}
interface AccessEventRow {
  type: string;
  reason: string | null;
  occurred_at: string;
  key: { id: number } | null;
  person: { id: string } | null;
}

/** The door's clock follows the service's sandbox clock, so both read the same time after an advance. */
async function serviceClockOffset(): Promise<number> {
  const res = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
  return new Date(res.body.now).getTime() - Date.now();
}

async function startSimulator(gateway: GatewayCredentials, options: { offline?: boolean } = {}) {
  const input = new PassThrough();
  const records: Array<Record<string, unknown>> = [];
  const dataFile = path.join(dataDir, `gateway-${gateway.id}.json`);
  let offset = await serviceClockOffset();
  const done = simulateGateway({
    url: gateway.mqtt.url.replace('localhost', '127.0.0.1'),
    id: String(gateway.id),
    password: gateway.mqtt.password,
    prefix: gateway.mqtt.topic_prefix,
    answer: 'ok',
    error: 'device_error',
    locks: [],
    key: null,
    randomPerMinute: 0,
    input,
    log: (_line, record) => records.push(record),
    dataFile,
    offline: options.offline ?? false,
    now: () => new Date(Date.now() + offset),
  });
  const decisions = () => records.filter((r): r is Decision & Record<string, unknown> => r.type === 'decision') as unknown as Decision[];
  const type = (line: string) => input.write(`${line}\n`);
  /** Presents a credential at a lock's reader and returns the door's decision. */
  const swipe = async (lockId: number, credential: string): Promise<Decision> => {
    const before = decisions().length;
    type(`swipe ${lockId} ${credential}`);
    await waitFor(() => decisions().length > before, `the decision at lock ${lockId}`);
    return decisions()[before] as Decision;
  };
  const applied = () => records.filter((r) => r.type === 'list_applied').length;
  const stop = async () => {
    type('quit');
    await done;
  };
  after(() => stop().catch(() => undefined));
  return { type, swipe, records, applied, stop, dataFile, syncClock: async () => (offset = await serviceClockOffset()) };
}

async function site(accountBody: Record<string, unknown> = {}) {
  const account = await createAccount(ctx.service, accountBody);
  const root = account.rootLocationId;
  await createSecurityGroup(ctx.service, root, 'staff');
  const gateway = await createGateway(ctx.service, root);
  const front = await createLock(ctx.service, root, { name: 'Front', gateway_id: gateway.id, security_groups: ['staff'] });
  const person = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Grace Hopper', email: `grace-${randomUUID()}@example.com`, location_id: root });
  const apiKey = await createApiKey(ctx.service, root, ['events:read', 'keys:read', 'keys:write']);
  const card = async (credential: string) => {
    const res = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Card', security_groups: ['staff'], credential });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  };
  const events = async (): Promise<AccessEventRow[]> => (await ctx.service.request<{ data: AccessEventRow[] }>('GET', '/v1/events?limit=100', { token: apiKey.token })).body.data;
  const revoke = async (keyId: number) => assert.equal((await ctx.service.request('DELETE', `/v1/keys/${keyId}`, { token: apiKey.token })).status, 204);
  return { account, gateway, front, personId: person.body.id, card, events, revoke };
}

describe('the reference gateway', () => {
  test('decides from its copy, reports each decision once with person and key, and keeps the copy on disk', async () => {
    const s = await site();
    const keyId = await s.card('wiegand26:7:1234');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    const decision = await gw.swipe(s.front, 'W26:7:1234');
    assert.deepEqual([decision.granted, decision.key_id, decision.source], [true, keyId, 'copy']);
    await waitFor(async () => (await s.events()).length === 1, 'the decision in the access log');
    const [event] = await s.events();
    assert.deepEqual([event?.type, event?.key?.id, event?.person?.id], ['access.granted', keyId, s.personId]);
    const onDisk = await readFile(gw.dataFile, 'utf8');
    assert.ok(!onDisk.includes('wiegand26') && !onDisk.includes('7:1234'), 'the copy holds no credential in clear');
    assert.match(onDisk, /"key_id":\d+/);
  });

  test('asks the service about a credential its copy lacks; the service logs that decision, the gateway does not', async () => {
    const s = await site();
    await s.card('uid:0a0a0a0a');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    const decision = await gw.swipe(s.front, 'uid:0b0b0b0b');
    assert.deepEqual([decision.granted, decision.reason, decision.source], [false, 'unknown_key', 'online']);
    await waitFor(async () => (await s.events()).length === 1, 'one denial in the log');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const events = await s.events();
    assert.deepEqual(events.map((e) => [e.type, e.reason]), [['access.denied', 'unknown_key']]);
  });

  test('a key revoked while the gateway is online is denied as soon as the change is applied', async () => {
    const s = await site();
    const keyId = await s.card('uid:1c1c1c1c');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    assert.equal((await gw.swipe(s.front, 'uid:1c1c1c1c')).granted, true);
    const appliedBefore = gw.applied();
    await s.revoke(keyId);
    await waitFor(() => gw.applied() > appliedBefore, 'the revocation applied');
    const decision = await gw.swipe(s.front, 'uid:1c1c1c1c');
    assert.deepEqual([decision.granted, decision.reason], [false, 'unknown_key']);
  });

  test('revoked while the link is cut: granted from the copy until it reconnects (the trade-off), denied right after; the offline grant reaches the log with the door time', async () => {
    const s = await site();
    const keyId = await s.card('wiegand34:9:99');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    gw.type('disconnect');
    await waitFor(() => gw.records.some((r) => r.type === 'disconnected'), 'the link cut');
    await s.revoke(keyId);
    const offline = await gw.swipe(s.front, 'wiegand34:9:99');
    assert.deepEqual([offline.granted, offline.source], [true, 'copy'], 'the copy does not know of the revocation yet');
    const appliedBefore = gw.applied();
    gw.type('connect');
    await waitFor(() => gw.applied() > appliedBefore, 'the change applied after reconnecting');
    const online = await gw.swipe(s.front, 'wiegand34:9:99');
    assert.equal(online.granted, false);
    await waitFor(async () => (await s.events()).some((e) => e.type === 'access.granted' && e.key?.id === keyId), 'the offline grant in the log');
  });

  test('an unknown credential with the link cut is refused (fail secure) and reported when the link is back', async () => {
    const s = await site();
    await s.card('uid:2d2d2d2d');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    gw.type('disconnect');
    await waitFor(() => gw.records.some((r) => r.type === 'disconnected'), 'the link cut');
    const decision = await gw.swipe(s.front, 'uid:3e3e3e3e');
    assert.deepEqual([decision.granted, decision.reason, decision.source], [false, 'unknown_key', 'offline']);
    gw.type('connect');
    await waitFor(async () => (await s.events()).some((e) => e.type === 'access.denied' && e.reason === 'unknown_key'), 'the denial in the log');
  });

  test('a copy past its offline limit grants nothing, says so in its presence, and is valid again once renewed', async () => {
    const s = await site({ offline_access_seconds: 120 });
    const keyId = await s.card('uid:4f4f4f4f');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    gw.type('disconnect');
    await waitFor(() => gw.records.some((r) => r.type === 'disconnected'), 'the link cut');
    assert.equal((await gw.swipe(s.front, 'uid:4f4f4f4f')).granted, true, 'within the limit');
    await advanceClock(ctx.service, 121);
    await gw.syncClock();
    const expired = await gw.swipe(s.front, 'uid:4f4f4f4f');
    assert.deepEqual([expired.granted, expired.source], [false, 'expired copy']);
    await waitFor(() => gw.records.some((r) => r.type === 'list_expired' && r.expired === true), 'the expiry noticed').catch((error: Error) => assert.fail(`${error.message}: ${JSON.stringify(gw.records.map((r) => [r.type, r.expired]))}`));
    const gateway = async () => (await ctx.service.admin<{ access_list: { expired: boolean } }>('GET', `/admin/v1/gateways/${s.gateway.id}`)).body.access_list;
    gw.type('connect');
    // Reconnected: the presence says expired, then the sync renews the copy and the presence says so.
    const expiredAt = gw.records.findIndex((r) => r.type === 'list_expired' && r.expired === true);
    await waitFor(() => gw.records.slice(expiredAt).some((r) => r.type === 'list_expired' && r.expired === false), 'the copy renewed');
    await waitFor(async () => (await gateway()).expired === false, 'the service knows the copy is valid');
    const renewed = await gw.swipe(s.front, 'uid:4f4f4f4f');
    assert.deepEqual([renewed.granted, renewed.key_id, renewed.source], [true, keyId, 'copy']);
  });

  test('a restarted gateway decides from the copy it kept on disk, before any link', async () => {
    const s = await site();
    const keyId = await s.card('wiegand26:200:65535');
    const first = await startSimulator(s.gateway);
    await waitFor(() => first.applied() > 0, 'the list applied');
    await first.stop();
    const again = await startSimulator(s.gateway, { offline: true });
    const decision = await again.swipe(s.front, 'wiegand26:200:65535');
    assert.deepEqual([decision.granted, decision.key_id, decision.source], [true, keyId, 'copy']);
    assert.equal((await again.swipe(s.front + 1000, 'wiegand26:200:65535')).reason, 'no_access', 'a lock not on its entry');
  });

  test("a window's edges at the door: refused a minute before, granted from its start, refused from its end", async () => {
    const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    const at = (minutes: number) => new Date(now.getTime() + minutes * 60_000).toISOString().slice(11, 16);
    const s = await site();
    const groups = await ctx.service.admin<{ data: Array<{ id: number }> }>('GET', `/admin/v1/security_groups?account_id=${s.account.id}`);
    const every = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
    // From 61 to 121 minutes from now (whole minutes: the window starts at the minute's first instant).
    await ctx.service.admin('PATCH', `/admin/v1/security_groups/${groups.body.data[0]?.id}`, { windows: [{ days: every, start: at(61), end: at(121) }] });
    await s.card('uid:5a5a5a5a');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    gw.type('disconnect');
    await waitFor(() => gw.records.some((r) => r.type === 'disconnected'), 'the link cut');
    const secondsIntoMinute = now.getUTCSeconds() + now.getUTCMilliseconds() / 1000;
    await advanceClock(ctx.service, 60 * 60 - secondsIntoMinute + 1); // 00:01 into the minute before the start
    await gw.syncClock();
    assert.deepEqual((await gw.swipe(s.front, 'uid:5a5a5a5a')).reason, 'outside_time_window');
    await advanceClock(ctx.service, 60);
    await gw.syncClock();
    assert.equal((await gw.swipe(s.front, 'uid:5a5a5a5a')).granted, true, 'from the start');
    await advanceClock(ctx.service, 60 * 60);
    await gw.syncClock();
    assert.deepEqual((await gw.swipe(s.front, 'uid:5a5a5a5a')).reason, 'outside_time_window', 'the end is not in the window');
  });

  // Last: it moves the sandbox clock to the spring-forward night of 2027 in Berlin (01:00 UTC, 02:00 CET → 03:00 CEST).
  test('across a DST change the door reads the wall clock: a Sunday 03:00–04:00 window opens at the jump, not an hour later', async () => {
    const s = await site();
    assert.equal((await ctx.service.admin('PATCH', `/admin/v1/locations/${s.account.rootLocationId}`, { time_zone: 'Europe/Berlin' })).status, 200);
    const groups = await ctx.service.admin<{ data: Array<{ id: number }> }>('GET', `/admin/v1/security_groups?account_id=${s.account.id}`);
    await ctx.service.admin('PATCH', `/admin/v1/security_groups/${groups.body.data[0]?.id}`, { windows: [{ days: ['sun'], start: '03:00', end: '04:00' }] });
    await s.card('uid:6b6b6b6b');
    const gw = await startSimulator(s.gateway);
    await waitFor(() => gw.applied() > 0, 'the list applied');
    const now = new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    await advanceClock(ctx.service, (Date.parse('2027-03-28T00:59:00Z') - now.getTime()) / 1000);
    // Months later: reconnecting renews the copy (its offline limit is 7 days), then the link is cut again.
    gw.type('disconnect');
    await waitFor(() => gw.records.some((r) => r.type === 'disconnected'), 'the link cut');
    gw.type('connect');
    await gw.syncClock();
    await waitFor(async () => {
      const decision = await gw.swipe(s.front, 'uid:6b6b6b6b');
      return decision.source === 'copy';
    }, 'deciding from a renewed copy');
    gw.type('disconnect');
    assert.deepEqual((await gw.swipe(s.front, 'uid:6b6b6b6b')).reason, 'outside_time_window', '01:59 CET');
    await advanceClock(ctx.service, 60);
    await gw.syncClock();
    const atJump = await gw.swipe(s.front, 'uid:6b6b6b6b');
    assert.deepEqual([atJump.granted, atJump.source], [true, 'copy'], '03:00 CEST, one minute later');
  });
});
