// The request id is on every line a request causes, also those logged through a logger that is not the
// request's own (a service given app.log), after the body was read and across awaits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { genReqId } from '../../src/platform/http.ts';
import { installRequestContext, loggerOptions } from '../../src/platform/logger.ts';

test('lines logged through app.log while a request runs carry its request id once; lines outside requests do not', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const log = pino(loggerOptions('info'), {
    write: (line: string) => {
      raw.push(line);
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  const app = Fastify({ loggerInstance: log as FastifyBaseLogger, genReqId });
  installRequestContext(app);
  const service = app.log; // what app.ts hands to services
  app.post('/things', async (request) => {
    service.info('before an await');
    await new Promise((resolve) => setTimeout(resolve, 5));
    service.info('after an await');
    request.log.info('on the request logger');
    setTimeout(() => service.info('a timer the request set'), 1);
    return { ok: true };
  });
  await app.ready();
  service.info('outside any request');
  const reply = await app.inject({ method: 'POST', url: '/things', payload: { name: 'x' } });
  assert.equal(reply.statusCode, 200);
  await new Promise((resolve) => setTimeout(resolve, 20));
  service.info('outside again');
  await app.close();

  const byMsg = (msg: string) => lines.find((l) => l.msg === msg);
  const id = byMsg('incoming request')?.reqId;
  assert.ok(typeof id === 'string' && id !== '');
  for (const msg of ['before an await', 'after an await', 'on the request logger', 'a timer the request set', 'request completed']) {
    assert.equal(byMsg(msg)?.reqId, id, msg);
  }
  assert.ok(raw.every((line) => line.split('"reqId"').length <= 2), 'never twice on a line');
  assert.equal(byMsg('outside any request')?.reqId, undefined);
  assert.equal(byMsg('outside again')?.reqId, undefined);
});

test('the request serializer keeps the path without its query string', () => {
  const lines: string[] = [];
  const log = pino(loggerOptions('info'), { write: (line: string) => void lines.push(line) });
  log.info({ req: { id: 'r1', method: 'GET', url: '/v1/people?email=someone@example.com' } }, 'x');
  assert.deepEqual((JSON.parse(lines[0] ?? '{}') as { req: unknown }).req, { id: 'r1', method: 'GET', path: '/v1/people' });
});
