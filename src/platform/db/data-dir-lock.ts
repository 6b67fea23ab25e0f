// One process at a time on an embedded data directory. PGlite has no lock of its own: a second process opening a
// live directory dies in WebAssembly (`RuntimeError: Aborted()`) or, worse, writes beside the first. The lock is a
// file next to the directory (`<dir>.lock`, so that the directory itself stays PGlite's), created exclusively, with
// the holder's pid, host, start time and command; removed at close or when the process exits. A lock whose pid is
// dead on this host is stale (a process killed with -9) and taken over.
import { randomBytes } from 'node:crypto';
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

export interface LockHolder {
  pid: number;
  host: string;
  /** When the holder took the lock (ISO 8601). */
  since: string;
  /** What the holder runs (e.g. `npm start`, `npm run migrate`), for the operator's eyes. */
  command: string;
}

/** Another live process holds the data directory. Its message is the one line an operator needs. */
export class DataDirectoryInUse extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder,
    readonly lockFile: string,
  ) {
    const where = holder.host === hostname() ? '' : ` on host ${holder.host}`;
    super(
      `${dir} is in use by process ${holder.pid}${where} (${holder.command}) since ${holder.since}; stop it first ` +
        `(the embedded database takes one process at a time${where ? `; if that process is gone, delete ${lockFile}` : ''})`,
    );
    this.name = 'DataDirectoryInUse';
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

/** What this process runs, as an operator typed it when it is one of ours. */
const COMMANDS: Readonly<Record<string, string>> = {
  'start.mjs': 'npm start',
  'latchkey.mjs': 'npm start',
  'main.ts': 'npm run dev',
  'migrate.ts': 'npm run migrate',
  'move-to-postgres.ts': 'npm run move-to-postgres',
  'operator-token.ts': 'npm run operator-token',
};

function command(): string {
  const script = process.argv[1];
  if (!script) return 'node';
  const name = path.basename(script);
  return COMMANDS[name] ?? name;
}

function readHolder(file: string): LockHolder | null {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string') return null;
    return { pid: parsed.pid, host: parsed.host, since: String(parsed.since ?? 'an unknown time'), command: String(parsed.command ?? 'unknown') };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw error;
    return null; // half-written or not ours: treated as stale below only when old enough to be
  }
}

function youngerThan(file: string, ms: number): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs < ms;
  } catch {
    return false;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

/** Takes the lock on `dir` for this process, or throws DataDirectoryInUse naming the holder. */
export function lockDataDir(dir: string): DataDirLock {
  const file = `${path.resolve(dir)}.lock`;
  mkdirSync(path.dirname(file), { recursive: true });
  const mine: LockHolder = { pid: process.pid, host: hostname(), since: new Date().toISOString(), command: command() };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      try {
        writeSync(fd, `${JSON.stringify(mine)}\n`);
      } finally {
        closeSync(fd);
      }
      return held(file, mine);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder: LockHolder | null;
    try {
      holder = readHolder(file);
    } catch {
      continue; // released meanwhile: try again
    }
    if (holder && (holder.host !== mine.host || (holder.pid !== process.pid && alive(holder.pid)))) {
      throw new DataDirectoryInUse(dir, holder, file);
    }
    // This pid on this host: opened twice in this process, or left by an earlier process that had the same pid
    // (a container's process is pid 1 on every start, and a crash leaves its lock): only the first is in use.
    if (holder?.pid === process.pid && heldHere.has(file)) throw new DataDirectoryInUse(dir, holder, file);
    if (!holder && youngerThan(file, 2000)) {
      // Being written by the process that has just created it: look again in a moment.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
      continue;
    }
    // Stale (its process is dead) or unreadable: moved aside under a name of our own, so that of two processes
    // taking it over together only one removes it; the other finds the winner's fresh lock on its next turn.
    const aside = `${file}.${randomBytes(6).toString('hex')}.stale`;
    try {
      renameSync(file, aside);
      const moved = readHolder(aside);
      // The rename may have caught a lock taken over a moment ago by another process: give it back.
      if (moved && moved.host === mine.host && (moved.pid === process.pid ? heldHere.has(file) : alive(moved.pid))) {
        linkSync(aside, file);
        unlinkSync(aside);
        throw new DataDirectoryInUse(dir, moved, file);
      }
      unlinkSync(aside);
    } catch (error) {
      if (error instanceof DataDirectoryInUse) throw error;
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  throw new Error(`could not take the lock ${file}: it keeps changing hands`);
}

/** The lock files this process holds (a lock naming this pid and not in here is an earlier process's). */
const heldHere = new Set<string>();

function held(file: string, mine: LockHolder): DataDirLock {
  heldHere.add(file);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    heldHere.delete(file);
    process.off('exit', release);
    try {
      const holder = readHolder(file);
      if (holder?.pid === mine.pid && holder.since === mine.since) unlinkSync(file);
    } catch {
      // already gone
    }
  };
  // A process that exits without closing the database (a failed start) leaves no lock behind.
  process.on('exit', release);
  return { file, release };
}
