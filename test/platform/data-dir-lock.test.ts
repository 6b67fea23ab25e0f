// Two processes on one embedded data directory (README: Faults): with the service running, `npm run migrate`,
// `npm run move-to-postgres` and a second `npm start` stop at once with one line naming the process that holds
// the directory, instead of PGlite's `RuntimeError: Aborted()`. The lock goes with the process: removed at a clean
// stop, taken over when its process is dead. Real processes throughout; the embedded database only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { after, describe, test } from 'node:test';
import { DataDirectoryInUse, lockDataDir } from '../../src/platform/db/data-dir-lock.ts';
import { backend } from '../helpers/database.ts';
import { processStorage, startArguments, startServiceProcess } from '../helpers/process.ts';

const skip = backend !== 'pglite' ? 'the embedded database only' : false;
const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const cleanup of cleanups) await cleanup();
});

/** Runs a command to its end: exit code, everything it wrote, and how long it took. */
async function run(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, PORT: '0', MQTT_PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output, ms: Date.now() - started };
}

/** The lines a command wrote, without empty ones. */
function linesOf(output: string): string[] {
  return output.split('\n').filter((line) => line.trim() !== '');
}

describe('one process at a time on an embedded data directory', { skip }, () => {
  test('with the service running, migrate, move-to-postgres and a second start stop at once, naming the holder', async () => {
    const storage = await processStorage('lock');
    cleanups.push(storage.cleanup);
    const dir = storage.env.DATA_DIR as string;
    const service = await startServiceProcess(storage.env);
    try {
      const pid = service.child.pid as number;
      const lock = JSON.parse(readFileSync(`${dir}/pg.lock`, 'utf8')) as { pid: number; host: string; since: string };
      assert.equal(lock.pid, pid);
      assert.equal(lock.host, hostname());
      const holder = new RegExp(`${dir}/pg is in use by process ${pid} \\(npm start\\) since ${lock.since.replace(/[.]/g, '\\.')}; stop it first`);

      const migrate = await run(['--import', 'tsx', 'src/migrate.ts'], storage.env);
      assert.equal(migrate.code, 1, migrate.output);
      const migrateLast = JSON.parse(linesOf(migrate.output).at(-1) as string) as { msg: string; err?: unknown; holder?: { pid: number } };
      assert.match(migrateLast.msg, /^migration failed: the embedded database \(DATA_DIR=.+\) could not be opened: /);
      assert.match(migrateLast.msg, holder);
      assert.equal(migrateLast.err, undefined, 'no stack: the line says it all');
      assert.equal(migrateLast.holder?.pid, pid);

      const move = await run(['--import', 'tsx', 'scripts/move-to-postgres.ts', '--data-dir', dir, '--to', 'postgres://nobody@127.0.0.1:1/none'], {});
      assert.equal(move.code, 1, move.output);
      const moveLines = linesOf(move.output);
      assert.match(moveLines.at(-1) as string, /^Nothing was moved: /);
      assert.match(moveLines.at(-1) as string, holder);
      assert.doesNotMatch(move.output, /RuntimeError|Aborted|\n\s+at /);

      const second = await run(startArguments, storage.env);
      assert.equal(second.code, 1, second.output);
      const secondLast = JSON.parse(linesOf(second.output).at(-1) as string) as { msg: string; err?: unknown };
      assert.match(secondLast.msg, /^Latchkey failed to start: the embedded database/);
      assert.match(secondLast.msg, holder);
      assert.equal(secondLast.err, undefined);
      assert.doesNotMatch(second.output, /listening on/);

      // The first one was not disturbed.
      assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
      assert.equal(JSON.parse(readFileSync(`${dir}/pg.lock`, 'utf8')).pid, pid);
    } finally {
      service.child.kill('SIGTERM');
      assert.equal(await service.exited, 0);
    }
    assert.equal(existsSync(`${dir}/pg.lock`), false, 'removed at a clean stop');
  });

  test('a lock left by a dead process on this host is taken over; the directory opens as usual', async () => {
    const storage = await processStorage('stale');
    cleanups.push(storage.cleanup);
    const dir = storage.env.DATA_DIR as string;
    // A first start makes the database; then a lock as a process killed with -9 would leave it.
    const first = await startServiceProcess(storage.env);
    first.child.kill('SIGTERM');
    assert.equal(await first.exited, 0);
    const dead = spawn(process.execPath, ['-e', '']);
    const deadPid = dead.pid as number;
    await new Promise((resolve) => dead.once('exit', resolve));
    writeFileSync(`${dir}/pg.lock`, JSON.stringify({ pid: deadPid, host: hostname(), since: new Date(0).toISOString(), command: 'latchkey.mjs' }));

    const migrate = await run(['--import', 'tsx', 'src/migrate.ts'], storage.env);
    assert.equal(migrate.code, 0, migrate.output);
    assert.match(migrate.output, /nothing to migrate/);
    assert.equal(existsSync(`${dir}/pg.lock`), false, 'taken over, then removed at close');
  });

  test("a lock naming this process's own pid, left by an earlier process (a container's pid 1 after a crash), is taken over", async () => {
    const storage = await processStorage('same-pid');
    cleanups.push(storage.cleanup);
    const dir = storage.env.DATA_DIR as string;
    mkdirSync(dir, { recursive: true });
    const lockFile = `${dir}/pg.lock`;
    writeFileSync(lockFile, JSON.stringify({ pid: process.pid, host: hostname(), since: new Date(0).toISOString(), command: 'latchkey.mjs' }));
    const lock = lockDataDir(`${dir}/pg`);
    assert.equal((JSON.parse(readFileSync(lockFile, 'utf8')) as { since: string }).since === new Date(0).toISOString(), false, 'the lock is this one now');
    assert.throws(() => lockDataDir(`${dir}/pg`), DataDirectoryInUse, 'held by this process: a second open is refused');
    lock.release();
    assert.equal(existsSync(lockFile), false);
  });
});
