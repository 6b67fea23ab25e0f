// Answers the router and Node's HTTP parser used to give in their own formats: now in the envelope, with
// Cache-Control and X-Request-Id, and (where a request was read) authenticated and counted like any other.
// Over real sockets, since Fastify's inject bypasses both the parser and the router's URL handling.
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { alignToMinuteStart, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { freshIp, startService, useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let token: string;
let lockId: number;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  lockId = await createLock(service, account.rootLocationId);
  token = (await createApiKey(service, account.rootLocationId, ['catalog:read', 'webhooks:manage'])).token;
});

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: ErrorBody;
}

/** Writes `text` on a fresh connection and reads the one answer until the server closes or a timeout. */
async function raw(text: string): Promise<RawAnswer> {
  const address = new URL(ctx.service.url);
  const received = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(address.port), address.hostname);
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on('data', (chunk) => (answer += chunk.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? undefined : reject(error)));
    socket.write(text);
  });
  const [head = '', ...rest] = received.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = new Map(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(rest.join('\r\n\r\n')) as ErrorBody };
}

function assertEnvelope(res: { status: number; headers: { get(name: string): string | null | undefined }; body: ErrorBody }, status: number, code: string): void {
  assert.equal(res.status, status);
  assert.deepEqual(Object.keys(res.body), ['error']);
  assert.equal(res.body.error.code, code);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(res.headers.get('cache-control'), 'no-store, private');
  assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
}

describe('a path that is not valid percent-encoding', () => {
  test('answers 401 without a token, like any public request, not the router\'s own body', async () => {
    const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks/%ff');
    assertEnvelope(res, 401, 'unauthenticated');
  });

  test('with a key: counted against the key (X-RateLimit-Remaining) and answered 400 invalid_request', async () => {
    await alignToMinuteStart(ctx.service); // the count is per minute: a new minute mid-test would reset it
    const before = await ctx.service.request('GET', `/v1/locks/${lockId}`, { token });
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));
    for (const path of ['/v1/locks/%ff', '/v1/locks/%E2%82', '/v1/locks/%zz', `/v1/locks/${lockId}%`, '/v1/no%ffroute']) {
      const res = await ctx.service.request<ErrorBody>('GET', `${path}?email=a%40b.c`, { token });
      assertEnvelope(res, 400, 'invalid_request');
    }
    const after = await ctx.service.request('GET', `/v1/locks/${lockId}`, { token });
    // Four on /v1/locks/:id and this one; the unknown route counts against nothing (README: API notes).
    assert.equal(Number(after.headers.get('x-ratelimit-remaining')), remaining - 5);
  });

  test('with a wrong token: a failed authentication, so the 31st locks the IP out', async () => {
    await alignToMinuteStart(ctx.service);
    const ip = freshIp();
    for (let i = 0; i < 30; i++) {
      const res = await ctx.service.request<ErrorBody>('GET', '/v1/locks/%ff', { token: `lk_${'x'.repeat(43)}`, ip });
      assertEnvelope(res, 401, 'unauthenticated');
    }
    const lockedOut = await ctx.service.request<ErrorBody>('GET', `/v1/locks/${lockId}`, { token, ip });
    assertEnvelope(lockedOut, 429, 'rate_limited');
  });

  test('the operator API still asks for its token first', async () => {
    assertEnvelope(await ctx.service.request<ErrorBody>('GET', '/admin/v1/accounts/%ff'), 401, 'unauthenticated');
    assertEnvelope(await ctx.service.request<ErrorBody>('GET', '/admin/v1/accounts/%ff', { token: 'test-admin-token-0123456789' }), 400, 'invalid_request');
  });

  test('a request target the router cannot read at all answers 400 in the envelope', async () => {
    const res = await raw('GET http:///v1/locks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assertEnvelope(res, 400, 'invalid_request');
  });
});

describe('a too-long path parameter', () => {
  test('reaches its schema: 400 invalid_request, counted, instead of the router\'s 414', async () => {
    for (const path of [`/v1/locks/${'1'.repeat(5000)}`, `/v1/webhooks/${'a'.repeat(300)}`, `/v1/locks/${'9'.repeat(120)}`]) {
      const res = await ctx.service.request<ErrorBody>('GET', path, { token });
      assertEnvelope(res, 400, 'invalid_request');
      assert.ok(res.headers.get('x-ratelimit-remaining'), 'counted against the key');
    }
    assertEnvelope(await ctx.service.request<ErrorBody>('GET', `/activate/${'t'.repeat(2000)}`, { headers: { accept: 'application/json' } }), 400, 'invalid_request');
  });
});

describe('requests Node\'s HTTP parser refuses', () => {
  test('headers over 16 KiB answer 431 in the envelope', async () => {
    const res = await raw(`GET /v1/locks HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    assertEnvelope(res, 431, 'invalid_request');
    assert.equal(res.headers.get('connection'), 'close');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  });

  test('a request line that is not HTTP answers 400 in the envelope', async () => {
    for (const text of ['HELLO\r\n\r\n', `GET /v1/locks/ ${lockId} HTTP/1.1\r\nHost: x\r\n\r\n`, 'GET /v1/locks HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']) {
      assertEnvelope(await raw(text), 400, 'invalid_request');
    }
  });
});

describe('requests Node would answer itself without a body', () => {
  test('an HTTP/1.1 request without Host answers 400 invalid_request in the envelope, counted against the key', async () => {
    const res = await raw(`GET /v1/locks/${lockId} HTTP/1.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
    assertEnvelope(res, 400, 'invalid_request');
    assert.ok(res.headers.get('x-ratelimit-remaining'), 'counted against the key');
  });

  test('an Expect header other than 100-continue is ignored, not an empty 417', async () => {
    const res = await raw(`GET /v1/locks/${lockId}x HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
    assertEnvelope(res, 400, 'invalid_request');
    const ok = await raw(`GET /v1/locks/${lockId} HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
    assert.equal(ok.status, 200);
  });
});

describe('a request that arrives while the service shuts down', () => {
  test('answers 503 in the envelope with Cache-Control, not Fastify\'s own body', async () => {
    const database = await createTestDatabase();
    const service = await startService(database.db);
    try {
      // A slow first request (the simulated locking system waits 1.5 s) keeps its connection open during close.
      const account = await createAccount(service, { locking_system: 'sandbox' });
      await service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: account.id, mode: 'accept', delay_ms: 1500 });
      const slowToken = (await createApiKey(service, account.rootLocationId, ['people:write'])).token;
      const socket = net.connect(Number(new URL(service.url).port), '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('utf8')));
      const closed = new Promise((resolve) => socket.on('close', resolve));
      const body = JSON.stringify({ name: 'Slow' });
      socket.write(`POST /v1/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slowToken}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const closing = service.close();
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.write(`GET /v1/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${slowToken}\r\n\r\n`);
      await closing;
      await closed;
      const second = received.slice(received.indexOf('HTTP/1.1', 1));
      assert.match(received, /^HTTP\/1\.1 201 /);
      assert.match(second, /^HTTP\/1\.1 503 /);
      assert.match(second, /\r\ncache-control: no-store, private\r\n/i);
      assert.match(second, /\r\nx-request-id: [0-9a-f-]{36}\r\n/i);
      assert.deepEqual(JSON.parse(second.slice(second.indexOf('\r\n\r\n') + 4)), {
        error: { code: 'not_available', message: 'The service is shutting down; retry the request.' },
      });
    } finally {
      await service.close().catch(() => undefined);
      await database.close();
    }
  });
});

describe('a request that arrives too slowly', () => {
  test('is answered 408 in the envelope once REQUEST_TIMEOUT_SECONDS have passed, and its socket closed', async () => {
    const database = await createTestDatabase();
    const service = await startService(database.db, { REQUEST_TIMEOUT_SECONDS: '1' });
    try {
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(service.url).port), '127.0.0.1');
        let text = '';
        const timer = setTimeout(() => socket.destroy(), 10_000);
        socket.on('data', (chunk) => (text += chunk.toString('utf8')));
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(text);
        });
        socket.on('error', reject);
        // Headers and the start of a body, then nothing: a slow-body client holding the socket.
        socket.write('POST /console/session HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tok');
      });
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.ok(Date.now() - started < 5000, `held ${Date.now() - started} ms`);
    } finally {
      await service.close();
      await database.close();
    }
  });

  test('REQUEST_TIMEOUT_SECONDS defaults to 30, not Node\'s 300', () => {
    assert.equal(loadConfig({}).requestTimeoutSeconds, 30);
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_SECONDS: '0' }), /REQUEST_TIMEOUT_SECONDS/);
  });
});

describe('security headers', () => {
  test('the activation page cannot be framed', async () => {
    const page = await ctx.service.request('GET', `/activate/${'u'.repeat(43)}`);
    assert.equal(page.status, 410);
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  });

  test('every answer says nosniff, the console forwarder\'s errors and the parser\'s among them', async () => {
    const forwarder = await ctx.service.request('GET', '/console/api/v1/locks', { ip: freshIp() });
    assert.equal(forwarder.status, 401);
    assert.equal(forwarder.headers.get('x-content-type-options'), 'nosniff');
    for (const res of [await ctx.service.request('GET', '/v1/locks', { token }), await ctx.service.request('GET', '/nowhere')]) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
    const refused = await raw('HELLO\r\n\r\n');
    assert.equal(refused.headers.get('x-content-type-options'), 'nosniff');
  });
});

