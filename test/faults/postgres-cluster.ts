// A PostgreSQL cluster of a test's own (initdb in a temporary directory, its own port and socket
// directory), to stop, start, freeze and thaw without disturbing the machine's server that other tests
// use. Trust authentication, user `postgres`, database `postgres`. Run as root, the PostgreSQL programs run
// as the `postgres` user (the server refuses root). Tests skip cleanly where the binaries are absent.
import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../helpers/mosquitto.ts';

const BIN_DIRS = ['/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/17/bin'];
const binDir = BIN_DIRS.find((dir) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl')));
const asRoot = process.getuid?.() === 0;
const postgresUser = asRoot ? userIds('postgres') : null;

function userIds(name: string): { uid: number; gid: number } | null {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line) return null;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Why the cluster tests cannot run here, or false when they can. */
export function clusterUnavailable(): string | false {
  if (!binDir) return 'the PostgreSQL server binaries (initdb, pg_ctl) are not installed';
  if (asRoot && !postgresUser) return 'running as root, and there is no postgres user to run the server as';
  return false;
}

/** The program as the user that owns the cluster: `postgres` when the tests run as root. */
function command(program: string, args: string[]): [string, string[]] {
  const full = path.join(binDir as string, program);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', full, ...args]] : [full, args];
}

async function run(program: string, args: string[]): Promise<void> {
  const [file, argv] = command(program, args);
  await promisify(execFile)(file, argv, { timeout: 60_000 });
}

export interface TestCluster {
  url: string;
  port: number;
  /** pg_ctl stop: `immediate` (a crash: no checkpoint, open connections cut) or `fast`. */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  start(): Promise<void>;
  /** SIGSTOP to every server process: connections stay open, nothing answers (a hung server). */
  freeze(): void;
  thaw(): void;
  /** Stops it for good and removes its directory. */
  destroy(): Promise<void>;
}

export async function startCluster(): Promise<TestCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-pg-'));
  if (postgresUser) chownSync(dir, postgresUser.uid, postgresUser.gid);
  const data = path.join(dir, 'data');
  const port = await freePort();
  await run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  // fsync off: the cluster lives for one test, and a stop is never a power cut.
  const serverOptions = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  const start = () => run('pg_ctl', ['-D', data, '-o', serverOptions, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);

  let running = false;
  let frozen: number[] = [];
  /** The postmaster and its children, from postmaster.pid and /proc. */
  const serverPids = (): number[] => {
    const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const children = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
        } catch {
          return false; // ended meanwhile
        }
      })
      .map(Number);
    return [postmaster, ...children];
  };
  const thaw = () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // ended meanwhile
      }
    }
    frozen = [];
  };
  // A test run that ends early must not leave the server behind.
  const killOnExit = () => {
    thaw();
    if (running) {
      const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      spawnSync(file, argv, { timeout: 20_000 });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const killOnSignal = (signal: NodeJS.Signals) => {
    killOnExit();
    process.kill(process.pid, signal); // once() has removed this handler: the signal now ends the process
  };
  process.once('exit', killOnExit);
  process.once('SIGTERM', killOnSignal);
  process.once('SIGINT', killOnSignal);

  await start();
  running = true;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode = 'immediate') {
      thaw();
      await run('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    freeze() {
      frozen = serverPids();
      for (const pid of frozen) process.kill(pid, 'SIGSTOP');
    },
    thaw,
    async destroy() {
      process.off('exit', killOnExit);
      process.off('SIGTERM', killOnSignal);
      process.off('SIGINT', killOnSignal);
      thaw();
      if (running) await run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
