// A request's lines carry its request id: Fastify's own lines and those logged through the request's logger,
// which routes hand to the services whose lines are about that request's work (an unlock not published, a
// compensation that failed: test/devices/unlock.test.ts). Lines outside requests carry none.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { genReqId } from '../../src/platform/http.ts';
import { loggerOptions } from '../../src/platform/logger.ts';

test("a request's lines carry its request id once, across awaits; lines outside requests carry none", async () => {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const log = pino(loggerOptions('info'), {
    write: (line: string) => {
      raw.push(line);
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  const app = Fastify({ loggerInstance: log as FastifyBaseLogger, genReqId });
  const service = (requestLog: FastifyBaseLogger) => requestLog.info('a service line about the request');
  app.post('/things', async (request) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    service(request.log);
    return { ok: true };
  });
  await app.ready();
  app.log.info('outside any request');
  const reply = await app.inject({ method: 'POST', url: '/things', payload: { name: 'x' } });
  assert.equal(reply.statusCode, 200);
  await app.close();

  const byMsg = (msg: string) => lines.find((l) => l.msg === msg);
  const id = byMsg('incoming request')?.reqId;
  assert.ok(typeof id === 'string' && id !== '');
  for (const msg of ['incoming request', 'a service line about the request', 'request completed']) assert.equal(byMsg(msg)?.reqId, id, msg);
  assert.ok(raw.every((line) => line.split('"reqId"').length <= 2), 'never twice on a line');
  assert.equal(byMsg('outside any request')?.reqId, undefined);
});

test('the request serializer keeps the path without its query string', () => {
  const lines: string[] = [];
  const log = pino(loggerOptions('info'), { write: (line: string) => void lines.push(line) });
  log.info({ req: { id: 'r1', method: 'GET', url: '/v1/people?email=someone@example.com' } }, 'x');
  assert.deepEqual((JSON.parse(lines[0] ?? '{}') as { req: unknown }).req, { id: 'r1', method: 'GET', path: '/v1/people' });
});
