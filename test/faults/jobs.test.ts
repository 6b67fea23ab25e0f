// The job loop through a database outage (README: Faults): it keeps running; a job that finds the database
// away is logged once per outage (a warning), not at every run, and once when it runs again; a run still
// waiting when the next is due is not joined by another, so runs cannot pile up on a hung database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { DatabaseError } from '../../src/platform/db/errors.ts';
import { JobRunner } from '../../src/platform/jobs.ts';

function recordingLog(): { log: FastifyBaseLogger; lines: Array<{ level: string; msg: string }> } {
  const lines: Array<{ level: string; msg: string }> = [];
  const at = (level: string) => (_fields: unknown, msg: string) => void lines.push({ level, msg });
  const log = { warn: at('warn'), info: at('info'), error: at('error') } as unknown as FastifyBaseLogger;
  return { log, lines };
}

const away = () => new DatabaseError('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' }, true);

test('a job that finds the database away is told once per outage, and once when it runs again; other failures every time', async () => {
  const { log, lines } = recordingLog();
  const runner = new JobRunner(log);
  const outcomes: Array<'away' | 'ok' | 'bug'> = ['away', 'away', 'away', 'ok', 'ok', 'away', 'bug', 'bug'];
  runner.register({
    name: 'j',
    everySeconds: 1,
    run: async () => {
      const next = outcomes.shift();
      if (next === 'away') throw away();
      if (next === 'bug') throw new Error('a bug');
      return 0;
    },
  });
  for (let i = 0; i < 8; i++) await runner.runUntilIdle(1);
  assert.deepEqual(lines, [
    { level: 'warn', msg: 'job waits: the database is unavailable' },
    { level: 'info', msg: 'job runs again: the database is back' },
    { level: 'warn', msg: 'job waits: the database is unavailable' },
    { level: 'error', msg: 'job failed' },
    { level: 'error', msg: 'job failed' },
  ]);
});

test('a scheduled run still waiting when the next is due is not joined by another', async (t) => {
  t.mock.timers.enable({ apis: ['setInterval'] });
  const { log } = recordingLog();
  const runner = new JobRunner(log);
  let started = 0;
  let release: () => void = () => undefined;
  runner.register({
    name: 'slow',
    everySeconds: 1,
    run: () => {
      started++;
      return new Promise<number>((resolve) => (release = () => resolve(0)));
    },
  });
  runner.start();
  for (let i = 0; i < 5; i++) t.mock.timers.tick(1000);
  assert.equal(started, 1, 'one run while the first waits');
  release();
  await new Promise((resolve) => setImmediate(resolve));
  t.mock.timers.tick(1000);
  assert.equal(started, 2, 'the next run once it is done');
  release();
  await runner.stop();
});
