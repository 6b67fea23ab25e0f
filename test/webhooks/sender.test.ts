// One attempt of the sender against a real local HTTPS server: what it reads of an answer, and what it
// reports for each kind of answer or failure. An answer whose status line and headers arrive in time but whose
// body then stalls: the status is the answer (spec: "respond with any 2xx within 10 seconds"), so a 2xx is
// delivered and a non-2xx fails with its status; only an answer without a status in 10 seconds times out.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { WebhookSender, type DeliveryToSend } from '../../src/modules/webhooks/sender.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { SecretBox } from '../../src/platform/secret-box.ts';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

const box = new SecretBox(randomBytes(32));
const sender = new WebhookSender(systemClock, box, ['localhost']);
let server: Server;
let port = 0;
/** Bytes of the endless answer written before the client went away. */
let endlessWritten = 0;
let endlessClosed: Promise<void> = Promise.resolve();

before(async () => {
  server = createServer({ key: readFileSync('test/fixtures/tls/key.pem'), cert: readFileSync('test/fixtures/tls/cert.pem') }, (request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.url === '/endless') {
        // An answer that never ends: the sender reads 4 KB, answers, and drops the connection.
        response.writeHead(200, { 'content-type': 'text/plain' });
        endlessClosed = new Promise((resolve) => response.on('close', resolve));
        const chunk = Buffer.alloc(1024, 'x');
        const timer = setInterval(() => {
          endlessWritten += chunk.length;
          response.write(chunk);
        }, 1);
        response.on('close', () => clearInterval(timer));
        return;
      }
      // The status line and headers at once, then 100 of the 1,000 bytes announced, then nothing.
      const stalled = /^\/stall-(\d{3})/.exec(request.url ?? '');
      if (stalled) {
        response.writeHead(Number(stalled[1]), { 'content-length': '1000' });
        response.write('x'.repeat(100));
        return;
      }
      if (request.url === '/silent') return; // no status at all
      if (request.url === '/teapot') return void response.writeHead(418).end('no');
      if (request.url === '/moved') return void response.writeHead(301, { location: '/elsewhere' }).end();
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await sender.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function delivery(path: string): DeliveryToSend {
  return {
    id: '0190a000-0000-7000-8000-000000000001',
    subscription_id: '0190a000-0000-7000-8000-0000000000aa',
    event_type: 'person.created',
    payload: { id: 'p1' },
    attempt: 1,
    created_at: new Date(),
    url: `https://localhost:${port}${path}`,
    secret_ciphertext: box.seal('whsec_test'),
  };
}

test('a 2xx is a success with its status', async () => {
  assert.deepEqual(await sender.attempt(delivery('/ok')), { ok: true, status: 204, error: null });
});

test('an answer that never ends: 4 KB are read, the attempt counts its status and the connection is dropped', async () => {
  const result = await sender.attempt(delivery('/endless'));
  assert.deepEqual(result, { ok: true, status: 200, error: null });
  await endlessClosed;
  assert.ok(endlessWritten < 1024 * 1024, `${endlessWritten} bytes written before the connection was dropped`);
});

test('a non-2xx and a 3xx are failures with their status; the redirect is not followed', async () => {
  assert.deepEqual(await sender.attempt(delivery('/teapot')), { ok: false, status: 418, error: 'HTTP 418' });
  assert.deepEqual(await sender.attempt(delivery('/moved')), { ok: false, status: 301, error: 'HTTP 301' });
});

test('a refused connection is a failure without a status', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const freePort = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const result = await sender.attempt({ ...delivery('/gone'), url: `https://localhost:${freePort}/gone` });
  assert.equal(result.ok, false);
  assert.equal(result.status, null);
  assert.match(result.error ?? '', /ECONNREFUSED|connect/i);
});

test('a 2xx whose body stalls is a success with its status; a 503 whose body stalls fails with its status; no status at all times out', async () => {
  const started = Date.now();
  const [ok, unavailable, silent] = await Promise.all([sender.attempt(delivery('/stall-200')), sender.attempt(delivery('/stall-503')), sender.attempt(delivery('/silent'))]);
  assert.deepEqual(ok, { ok: true, status: 200, error: null });
  assert.deepEqual(unavailable, { ok: false, status: 503, error: 'HTTP 503' });
  assert.equal(silent.ok, false);
  assert.equal(silent.status, null);
  assert.match(silent.error ?? '', /timeout/i);
  const seconds = (Date.now() - started) / 1000;
  assert.ok(seconds >= 9.5 && seconds < 20, `answered at the 10-second deadline (${seconds} s)`);
});

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

test('the delivery is recorded delivered with the 200, not retried', async () => {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token, body: { url: `https://localhost:${port}/stall-200/hook`, events: ['person.created'] } });
  assert.equal(sub.status, 201, sub.text);
  assert.equal((await ctx.service.request('POST', '/v1/people', { token, body: { name: 'Stall Stan' } })).status, 201);
  await advanceClock(ctx.service, 0); // waits for the attempt (10 s) and its record
  const list = await ctx.service.request<Page<{ status: string; response_status: number | null; last_error: string | null; next_attempt_at: string | null }>>(
    'GET',
    `/v1/webhooks/${sub.body.id}/deliveries`,
    { token },
  );
  const [record] = list.body.data;
  assert.deepEqual(
    { status: record?.status, response_status: record?.response_status, last_error: record?.last_error, next_attempt_at: record?.next_attempt_at },
    { status: 'delivered', response_status: 200, last_error: null, next_attempt_at: null },
  );
});
