// Locking-system tasks: a revoked key's removal is written to the locking system afterwards, by a job,
// retried with backoff until the locking system accepts it (README: API notes, Revocation).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { rungAfter } from '../../src/platform/work-queue.ts';
import { TASK_WORK } from '../../src/modules/locking-system/tasks.ts';
import { advanceClock } from '../helpers/fixtures.ts';
import { activate, issueKey, keysTenant, latestLink } from '../helpers/keys.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

interface TaskRow {
  status: string;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
}

async function taskOf(keyId: number): Promise<TaskRow> {
  const [task] = await ctx.database.db.query<TaskRow>(
    `SELECT status, attempts, next_attempt_at, last_error FROM locking_system_tasks WHERE operation = 'key.delete' AND entity_id = $1`,
    [String(keyId)],
  );
  assert.ok(task, `no task for key ${keyId}`);
  return task;
}

async function deletesOf(accountId: number): Promise<string[]> {
  const rows = await ctx.database.db.query<{ entity_id: string }>(
    `SELECT entity_id FROM sandbox_locking_system_writes WHERE account_id = $1 AND operation = 'key.delete' ORDER BY id`,
    [accountId],
  );
  return rows.map((r) => r.entity_id);
}

/**
 * The task's next attempt is `seconds` after its last one. The attempt ran a moment before `now` was read, and the
 * sandbox clock moves on in real time too (a loaded machine: seconds), so the wait left is a little under the rung,
 * never over it; the neighbouring rungs (0, 300, 1800 s) are far outside the margin.
 */
function assertDueIn(task: TaskRow, now: Date, seconds: number): void {
  const left = (task.next_attempt_at.getTime() - now.getTime()) / 1000;
  assert.ok(left <= seconds + 0.5 && left > seconds - 10, `next attempt in ${left} s, expected ${seconds} s after the last attempt`);
}

describe('locking-system tasks', () => {
  test('a refused key removal is retried after 60 s, then 300 s, and is done once the locking system accepts', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    assert.equal((await issueKey(ctx.service, t)).status, 202);
    const keyId = (await activate(ctx.service, await latestLink(ctx.service, t.phone))).body.key_id;
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'reject' });
    assert.equal((await ctx.service.request('DELETE', `/v1/keys/${keyId}`, { token: t.token })).status, 204);

    let now = await advanceClock(ctx.service, 0);
    let task = await taskOf(keyId);
    assert.deepEqual([task.status, task.attempts], ['pending', 1]);
    assertDueIn(task, now, 60);
    assert.match(task.last_error ?? '', /refused/);

    await advanceClock(ctx.service, 30);
    assert.equal((await taskOf(keyId)).attempts, 1, 'not due before its time');

    now = await advanceClock(ctx.service, 30);
    task = await taskOf(keyId);
    assert.deepEqual([task.status, task.attempts], ['pending', 2]);
    assertDueIn(task, now, 300);
    assert.deepEqual(await deletesOf(t.accountId), []);

    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'accept' });
    await advanceClock(ctx.service, 300);
    task = await taskOf(keyId);
    assert.deepEqual([task.status, task.attempts, task.last_error], ['done', 3, null]);
    assert.deepEqual(await deletesOf(t.accountId), [String(keyId)]);

    await advanceClock(ctx.service, 86_400);
    assert.deepEqual(await deletesOf(t.accountId), [String(keyId)], 'a done task is not written again');
  });

  test('an account without a locking system queues no task', async () => {
    const t = await keysTenant(ctx.service);
    assert.equal((await issueKey(ctx.service, t)).status, 202);
    const keyId = (await activate(ctx.service, await latestLink(ctx.service, t.phone))).body.key_id;
    assert.equal((await ctx.service.request('DELETE', `/v1/keys/${keyId}`, { token: t.token })).status, 204);
    const tasks = await ctx.database.db.query('SELECT id FROM locking_system_tasks WHERE entity_id = $1', [String(keyId)]);
    assert.equal(tasks.length, 0);
  });
});

describe('the retry ladder', () => {
  test('waits 60 s, 5 min, 30 min, 2 h, 6 h, then a day after each further failure', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 8, 50].map((attempts) => rungAfter(TASK_WORK, attempts)), [60, 300, 1800, 7200, 21_600, 86_400, 86_400, 86_400, 86_400]);
  });
});
