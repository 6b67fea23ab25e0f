// One attempt of the sender against a real local HTTPS server: what it reads of an answer, and what it
// reports for each kind of answer or failure.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { WebhookSender, type DeliveryToSend } from '../../src/modules/webhooks/sender.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { SecretBox } from '../../src/platform/secret-box.ts';

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

function delivery(url: string): DeliveryToSend {
  return {
    id: '0190a000-0000-7000-8000-000000000001',
    subscription_id: '0190a000-0000-7000-8000-0000000000aa',
    event_type: 'person.created',
    payload: { id: 'p1' },
    attempt: 1,
    created_at: new Date(),
    url,
    secret_ciphertext: box.seal('whsec_test'),
  };
}

test('a 2xx is a success with its status', async () => {
  assert.deepEqual(await sender.attempt(delivery(`https://localhost:${port}/ok`)), { ok: true, status: 204, error: null });
});

test('an answer that never ends: 4 KB are read, the attempt counts its status and the connection is dropped', async () => {
  const result = await sender.attempt(delivery(`https://localhost:${port}/endless`));
  assert.deepEqual(result, { ok: true, status: 200, error: null });
  await endlessClosed;
  assert.ok(endlessWritten < 1024 * 1024, `${endlessWritten} bytes written before the connection was dropped`);
});

test('a non-2xx and a 3xx are failures with their status; the redirect is not followed', async () => {
  assert.deepEqual(await sender.attempt(delivery(`https://localhost:${port}/teapot`)), { ok: false, status: 418, error: 'HTTP 418' });
  assert.deepEqual(await sender.attempt(delivery(`https://localhost:${port}/moved`)), { ok: false, status: 301, error: 'HTTP 301' });
});

test('a refused connection is a failure without a status', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const freePort = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const result = await sender.attempt(delivery(`https://localhost:${freePort}/gone`));
  assert.equal(result.ok, false);
  assert.equal(result.status, null);
  assert.match(result.error ?? '', /ECONNREFUSED|connect/i);
});
