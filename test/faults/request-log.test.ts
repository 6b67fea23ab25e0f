// The request log through a database outage: rows wait in memory (bounded) and are written once the
// database is back; a batch the database refuses for its content is dropped, not retried forever.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { systemClock } from '../../src/platform/clock.ts';
import type { Database } from '../../src/platform/db/index.ts';
import { databaseError } from '../../src/platform/db/errors.ts';
import { RequestLog } from '../../src/platform/request-log.ts';
import { createTestDatabase, withFaults, type TestDatabase } from '../helpers/database.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database?.close();
});

/** The database, but its statements fail as `unavailable` (or as a wrong statement) while `mode` says so. */
function troubled(db: Database): { db: Database; mode: { now: 'ok' | 'away' | 'refuses' } } {
  const mode = { now: 'ok' as 'ok' | 'away' | 'refuses' };
  const faulty = withFaults(db, () => {
    if (mode.now === 'away') return databaseError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), '', true);
    if (mode.now === 'refuses') return databaseError(Object.assign(new Error('invalid input'), { code: '22P02' }), '', false);
    return undefined;
  });
  return { db: faulty, mode };
}

async function served(log: RequestLog, requests: number, ip: string): Promise<void> {
  const app = Fastify({ logger: false, trustProxy: true });
  log.install(app);
  app.get('/v1/ping', async () => ({ ok: true }));
  for (let i = 0; i < requests; i++) await app.inject({ method: 'GET', url: '/v1/ping', headers: { 'x-forwarded-for': ip } });
  await app.close();
}

const rowsFor = async (ip: string) => (await database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM request_log WHERE ip = $1', [ip]))[0]?.n;

test('rows logged while the database is away are written once it is back', async () => {
  const { db, mode } = troubled(database.db);
  const log = new RequestLog(db, systemClock, pino({ level: 'silent' }));
  mode.now = 'away';
  await served(log, 30, '10.1.0.1');
  await log.flush();
  await log.flush(); // two failed writes: the rows are still waiting, not lost
  mode.now = 'ok';
  await log.close();
  assert.equal(await rowsFor('10.1.0.1'), 30);
});

test('a batch refused for what it holds is dropped (said in the log), and the next ones are written', async () => {
  const { db, mode } = troubled(database.db);
  const lines: string[] = [];
  const log = new RequestLog(db, systemClock, pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }));
  mode.now = 'refuses';
  await served(log, 5, '10.1.0.2');
  await log.flush();
  mode.now = 'ok';
  await served(log, 3, '10.1.0.2');
  await log.close();
  assert.equal(await rowsFor('10.1.0.2'), 3);
  assert.ok(lines.some((line) => line.includes('batch dropped')), lines.join('\n'));
});
