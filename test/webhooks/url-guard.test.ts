// Webhook URLs: IPv4-compatible IPv6 addresses are refused like every form that embeds an IPv4 address; a
// host name must resolve, to public addresses only, and the lookup is bounded in time and does not wait for
// libuv's thread pool (which delivery lookups share).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import { constants, openSync, closeSync } from 'node:fs';
import { open, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import ipaddr from 'ipaddr.js';
import { CREATE_LOOKUP_DEADLINE_MS, isPublicAddress, resolveHost, vetWebhookUrl } from '../../src/modules/webhooks/url-guard.ts';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

/** The hint every refusal of a local host ends with (README: Configuration, WEBHOOK_ALLOW_HOSTS). */
const allowHint = (host: string) =>
  ` To deliver to a local receiver, start the service with WEBHOOK_ALLOW_HOSTS=${host} (host names, comma-separated) and serve ` +
  'the receiver over https; for a self-signed certificate, also start the service with NODE_EXTRA_CA_CERTS set to that certificate file.';

/** Names under .invalid never resolve (RFC 6761). */
const UNRESOLVABLE = 'hooks.latchkey-test.invalid';

let token: string;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  token = (await createApiKey(service, account.rootLocationId, ['webhooks:manage'])).token;
});

/**
 * A DNS server on a local UDP port that knows `records` (name -> addresses): it answers A and AAAA queries
 * from them, NXDOMAIN for any other name. The resolver is pointed at it, so these tests need no network.
 */
async function fakeDns(records: Record<string, string[]>): Promise<{ servers: string[]; close(): void }> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, from) => {
    let offset = 12;
    const labels: string[] = [];
    for (let length = query[offset] ?? 0; length > 0; length = query[offset] ?? 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString('latin1'));
      offset += 1 + length;
    }
    const questionEnd = offset + 5; // the zero label, QTYPE and QCLASS
    const type = query.readUInt16BE(offset + 1);
    const known = records[labels.join('.').toLowerCase()];
    const addresses = (known ?? []).map((a) => ipaddr.parse(a)).filter((a) => (type === 28 ? a.kind() === 'ipv6' : type === 1 && a.kind() === 'ipv4'));
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(known ? 0x8180 : 0x8183, 2); // a response, recursion available; NXDOMAIN for an unknown name
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const answers = addresses.map((address) => {
      const data = Buffer.from(address.toByteArray());
      const record = Buffer.alloc(12);
      record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      record.writeUInt16BE(type, 2);
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(60, 6);
      record.writeUInt16BE(data.length, 10);
      return Buffer.concat([record, data]);
    });
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...answers]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { servers: [`127.0.0.1:${socket.address().port}`], close: () => socket.close() };
}

let dns: Awaited<ReturnType<typeof fakeDns>>;
before(async () => {
  dns = await fakeDns({
    'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
    'v4only.example.com': ['93.184.215.14'],
    'sneaky.example.com': ['93.184.215.14', '10.0.0.8'],
    'compat.example.com': ['::7f00:1'],
    'loopback.example.com': ['127.0.0.1'],
  });
});
after(() => dns?.close());

const subscribe = (url: string) =>
  ctx.service.request<ErrorBody & { id: string }>('POST', '/v1/webhooks', { token, body: { url, events: ['*'] } });

describe('IPv4-compatible IPv6 addresses (::/96) and the rest of ::/8', () => {
  test('are refused with 422 invalid on url, in every spelling', async () => {
    for (const url of [
      'https://[::127.0.0.1]/',
      'https://[::7f00:1]/',
      'https://[0:0:0:0:0:0:7f00:1]/hook',
      'https://[::10.0.0.1]/hook',
      'https://[::a9fe:a9fe]/latest',
      'https://[::192.168.1.1]/hook',
      'https://[::8.8.8.8]/hook',
      'https://[::ff:7f00:1]/hook',
      'https://[::1:0:0:1]/hook',
    ]) {
      const res = await subscribe(url);
      assert.equal(res.status, 422, url);
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']], url);
    }
  });

  test('a public IPv6 address is still accepted', async () => {
    assert.equal((await subscribe('https://[2606:4700:4700::1111]/hook')).status, 201);
    assert.equal(isPublicAddress('2a00:1450:4001:82a::200e'), true);
  });

  test('the same rule holds for addresses a name resolves to (delivery time)', () => {
    for (const address of ['::7f00:1', '::127.0.0.1', '::a00:1', '::', '::1']) assert.equal(isPublicAddress(address), false, address);
  });
});

describe('a host name that does not resolve', () => {
  test('is refused at create and update with 422 invalid on url, answered within the lookup deadline', async () => {
    const started = Date.now();
    const res = await subscribe(`https://${UNRESOLVABLE}/hook`);
    assert.ok(Date.now() - started < CREATE_LOOKUP_DEADLINE_MS + 1000, `answered after ${Date.now() - started} ms`);
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']]);

    const created = await subscribe('https://93.184.215.14/hook');
    assert.equal(created.status, 201);
    const patch = await ctx.service.request<ErrorBody>('PATCH', `/v1/webhooks/${created.body.id}`, { token, body: { url: `https://${UNRESOLVABLE}/other` } });
    assert.equal(patch.status, 422);
    assert.deepEqual(patch.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']]);
  });

  test('a DNS server that never answers is cut off at the deadline', async () => {
    const silent = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    try {
      const servers = [`127.0.0.1:${silent.address().port}`];
      const started = Date.now();
      assert.deepEqual(await resolveHost('hooks.example.com', { servers, deadlineMs: 500 }), { failure: 'no_answer' });
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 450 && elapsed < 1500, `answered after ${elapsed} ms`);
      const verdict = await vetWebhookUrl('https://hooks.example.com/x', [], { servers, deadlineMs: 500 });
      assert.equal(verdict.ok, false);
      assert.match(verdict.reason ?? '', /could not be resolved within 0\.5 seconds/);
    } finally {
      silent.close();
    }
  });

  test('does not wait for libuv\'s thread pool, which delivery lookups (getaddrinfo) share', async () => {
    // Every pool thread blocks opening a FIFO that has no writer yet, as slow delivery lookups would hold them.
    const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-pool-'));
    const fifo = path.join(dir, 'hold');
    execFileSync('mkfifo', [fifo]);
    const poolSize = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const held = Array.from({ length: poolSize }, () => open(fifo, 'r'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const release = setTimeout(() => closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK)), 6000);
    try {
      const started = Date.now();
      const verdict = await vetWebhookUrl('https://nowhere.example.com/hook', [], { servers: dns.servers });
      const elapsed = Date.now() - started;
      assert.deepEqual(verdict, { ok: false, reason: "url's host name does not resolve to any address." });
      assert.ok(elapsed < 1000, `answered after ${elapsed} ms with the thread pool busy`);
    } finally {
      clearTimeout(release);
      closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      for (const handle of await Promise.all(held)) await handle.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('a host name that resolves', () => {
  test('is accepted when every address is public, IPv4 only or both families', async () => {
    for (const host of ['hooks.example.com', 'v4only.example.com', 'HOOKS.example.com.']) {
      assert.deepEqual(await vetWebhookUrl(`https://${host}/hook`, [], { servers: dns.servers }), { ok: true }, host);
    }
  });

  test('is refused when any address is not public, an IPv4-compatible one included', async () => {
    for (const host of ['sneaky.example.com', 'compat.example.com', 'loopback.example.com']) {
      assert.deepEqual(
        await vetWebhookUrl(`https://${host}/hook`, [], { servers: dns.servers }),
        { ok: false, reason: `url resolves to an address that is not public.${allowHint(host)}` },
        host,
      );
    }
  });
});

describe('a local receiver refused', () => {
  test('the 422 says how to allow it: WEBHOOK_ALLOW_HOSTS for its host, https, NODE_EXTRA_CA_CERTS for a self-signed certificate', async () => {
    for (const [url, host, first] of [
      ['http://127.0.0.1:3000/hook', '127.0.0.1', 'url must use https.'],
      ['http://localhost:3000/hook', 'localhost', 'url must use https.'],
      ['https://localhost:8443/hook', 'localhost', 'url must point to a public host.'],
      ['https://192.168.1.20/hook', '192.168.1.20', 'url must point to a public host.'],
      ['https://[::1]:8443/hook', '::1', 'url must point to a public host.'],
      ['https://devbox/hook', 'devbox', 'url must point to a public host.'],
    ] as const) {
      const res = await subscribe(url);
      // The spec's envelope and codes, unchanged: only the detail's words name the way.
      assert.equal(res.status, 422, url);
      assert.equal(res.body.error.code, 'validation_failed');
      assert.deepEqual(res.body.error.details, [{ field: 'url', code: 'invalid', message: `${first}${allowHint(host)}` }], url);
    }
  });

  test('an http URL to a public host is told to use https, nothing about local receivers', async () => {
    assert.deepEqual(await vetWebhookUrl('http://example.com/hook', []), { ok: false, reason: 'url must use https.' });
    // A host already allowed still needs https, and is told so with the same hint.
    assert.deepEqual(await vetWebhookUrl('http://localhost/hook', ['localhost']), { ok: false, reason: `url must use https.${allowHint('localhost')}` });
  });
});

describe('Webhook URLs with port 0', () => {
  test('are refused, even for an allowed host or a public address; another port is accepted', async () => {
    const refused = { ok: false, reason: 'url has port 0, which nothing listens on.' };
    assert.deepEqual(await vetWebhookUrl('https://93.184.216.34:0/hook', []), refused);
    assert.deepEqual(await vetWebhookUrl('https://localhost:0/hook', ['localhost']), refused);
    assert.deepEqual(await vetWebhookUrl('https://localhost:8443/hook', ['localhost']), { ok: true });
  });
});
