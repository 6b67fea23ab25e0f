// TRUST_PROXY: the client IP of per-IP limits comes from X-Forwarded-For only as far as the proxies the
// operator named. A proxy appends the address it saw to what the client sent, so everything left of the
// trusted hops is the client's own writing: neither a fresh budget per forged address, nor a lock-out of
// someone else's address.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { alignToMinuteStart, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { ADMIN_TOKEN, freshIp, startService, useTestService, type TestService } from '../helpers/service.ts';

const WRONG_KEY = `lk_${'x'.repeat(43)}`;

/** What a proxy in front sends on: the client's own X-Forwarded-For, then the address it saw. */
const viaProxy = (forged: string, client: string) => `${forged}, ${client}`;

describe('TRUST_PROXY=true: one proxy in front, the right-most address is the client', () => {
  let rootLocationId: number;
  const ctx = useTestService(async (service) => {
    rootLocationId = (await createAccount(service)).rootLocationId;
  }, {}, { transport: 'inject' });

  test('100 wrong API keys, each with a forged X-Forwarded-For of its own, are locked out after 30', async () => {
    await alignToMinuteStart(ctx.service);
    const client = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      const xff = viaProxy(freshIp(), client);
      statuses.push((await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': xff } })).status);
    }
    assert.deepEqual(statuses.slice(0, 30), Array(30).fill(401));
    assert.deepEqual(statuses.slice(30), Array(70).fill(429));
  });

  test('100 wrong operator tokens at console sign-in, each with a forged X-Forwarded-For, are locked out after 30', async () => {
    await alignToMinuteStart(ctx.service);
    const client = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      const xff = viaProxy(freshIp(), client);
      statuses.push((await ctx.service.request('POST', '/console/session', { body: { token: `wrong-${i}` }, headers: { 'x-forwarded-for': xff } })).status);
    }
    assert.deepEqual(statuses.slice(0, 30), Array(30).fill(401));
    assert.deepEqual(statuses.slice(30), Array(70).fill(429));
  });

  test("an IPv6 client is counted by its /64, and an IPv4-mapped address as its IPv4: a new address in the same /64 gets no new budget", async () => {
    await alignToMinuteStart(ctx.service);
    const prefix = `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
    const statuses: number[] = [];
    for (let i = 1; i <= 40; i++) {
      // Every address of the /64 the client holds, written as its proxy would pass it on.
      statuses.push((await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': `${prefix}::${i.toString(16)}` } })).status);
    }
    assert.deepEqual(statuses.slice(0, 30), Array(30).fill(401));
    assert.deepEqual(statuses.slice(30), Array(10).fill(429));
    assert.equal((await ctx.service.request('POST', '/console/session', { body: { token: ADMIN_TOKEN }, headers: { 'x-forwarded-for': `${prefix}:ffff:1:2:3` } })).status, 429);
    // Another /64 is someone else.
    const next = `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::1`;
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': next } })).status, 401);

    const v4 = freshIp();
    for (let i = 0; i < 30; i++) await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': `::ffff:${v4}` } });
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': v4 } })).status, 429, 'the mapped form is the same client');
  });

  test("nobody locks a victim out by writing the victim's address: 30 wrong tokens in its name leave it alone", async () => {
    await alignToMinuteStart(ctx.service);
    const { token } = await createApiKey(ctx.service, rootLocationId, ['catalog:read']);
    const victim = freshIp();
    const attacker = freshIp();
    for (let i = 0; i < 31; i++) {
      await ctx.service.request('GET', '/v1/locks', { token: WRONG_KEY, headers: { 'x-forwarded-for': viaProxy(victim, attacker) } });
      await ctx.service.request('POST', '/console/session', { body: { token: 'wrong-operator-token' }, headers: { 'x-forwarded-for': viaProxy(victim, attacker) } });
    }
    // The attacker's own address is the one locked out.
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token, ip: attacker })).status, 429);
    assert.equal((await ctx.service.request('GET', '/v1/locks', { token, ip: victim })).status, 200);
    assert.equal((await ctx.service.request('POST', '/console/session', { body: { token: ADMIN_TOKEN }, ip: victim })).status, 200);
  });
});

describe('TRUST_PROXY as addresses and ranges, or a number of hops', () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => database?.close());

  /** Sends 31 wrong keys as `remoteAddress` with `xff`, then says whether `probe` (same forms) is locked out. */
  async function lockedOut(
    service: TestService,
    attack: { remoteAddress: string; xff: () => string },
    probe: { remoteAddress: string; xff?: string },
  ): Promise<boolean> {
    // An empty `xff` sends no request: the probe alone, to show who is not locked out.
    const send = (remoteAddress: string, xff: string | undefined, token: string) =>
      service.latchkey.app.inject({
        method: 'GET',
        url: '/v1/locks',
        remoteAddress,
        headers: { authorization: `Bearer ${token}`, ...(xff === undefined ? {} : { 'x-forwarded-for': xff }) },
      });
    for (let i = 0; i < 31; i++) {
      const xff = attack.xff();
      if (xff !== '') await send(attack.remoteAddress, xff, WRONG_KEY);
    }
    return (await send(probe.remoteAddress, probe.xff, WRONG_KEY)).statusCode === 429;
  }

  test('a list trusts only the proxies it names: the first address from the right that is not one is the client', async () => {
    const service = await startService(database.db, { TRUST_PROXY: '10.0.0.1, 192.168.0.0/16' }, undefined, undefined, 'inject');
    try {
      await alignToMinuteStart(service);
      // Through both proxies: the client's forged addresses do not count, and nobody else behind them is hit.
      const client = freshIp();
      assert.ok(
        await lockedOut(service, { remoteAddress: '10.0.0.1', xff: () => `${freshIp()}, ${client}, 192.168.7.7` }, { remoteAddress: '10.0.0.1', xff: `${client}, 192.168.1.1` }),
      );
      assert.ok(!(await lockedOut(service, { remoteAddress: '10.0.0.1', xff: () => '' }, { remoteAddress: '10.0.0.1', xff: `${freshIp()}, 192.168.1.1` })));
      // A peer that is not a named proxy is the client itself, whatever its header says.
      const direct = '203.0.113.9';
      assert.ok(await lockedOut(service, { remoteAddress: direct, xff: () => freshIp() }, { remoteAddress: direct }));
    } finally {
      await service.close();
    }
  });

  test('a number of hops trusts that many proxies from the right, when the peer is on a loopback or private address', async () => {
    const service = await startService(database.db, { TRUST_PROXY: '2' }, undefined, undefined, 'inject');
    try {
      await alignToMinuteStart(service);
      const client = freshIp();
      assert.ok(
        await lockedOut(service, { remoteAddress: '127.0.0.1', xff: () => `${freshIp()}, ${client}, ${freshIp()}` }, { remoteAddress: '127.0.0.1', xff: `${client}, ${freshIp()}` }),
      );
      assert.ok(!(await lockedOut(service, { remoteAddress: '127.0.0.1', xff: () => '' }, { remoteAddress: '127.0.0.1', xff: `${freshIp()}, ${freshIp()}` })));
      // A peer on a public address reached the service directly: its header is its own writing.
      const direct = '198.51.100.7';
      assert.ok(await lockedOut(service, { remoteAddress: direct, xff: () => `${freshIp()}, ${freshIp()}` }, { remoteAddress: direct }));
    } finally {
      await service.close();
    }
  });
});
