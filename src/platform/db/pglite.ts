// Embedded PostgreSQL through PGlite: one process, no server. Same SQL and migrations as server PostgreSQL.
// PGlite runs on a thread of its own (pglite-worker.mjs), so that a long statement holds that thread, not the
// service's: requests, answers and notifications cross between the two as messages.
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { copyStatement, encodeCopyRows, type AppendColumn, type AppendValue } from './append-rows.ts';
import { sqlText, type Database, type Row, type Sql, type Transaction } from './database.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { databaseError } from './errors.ts';
import { initdbTemplate, unpackInitdbTemplate } from './pglite-template.ts';

export interface PgliteOptions {
  /** A directory path, or 'memory' for a throw-away store. */
  dataDir: string;
  /** A dumped data directory (dumpDataDir) to start from, e.g. a migrated template in tests. */
  loadDataDir?: Blob;
  /**
   * Fills an empty data directory before initdb's output would be unpacked into it, under the directory's lock;
   * false leaves it empty (the service's first start copies the migrated template: migrated-template.ts).
   */
  fillEmptyDir?: (dir: string) => Promise<boolean>;
  /**
   * Fail a query made on the database (not on `tx`) from inside a transaction at once, instead of letting it wait
   * for that transaction forever (PGlite runs one at a time). The tests turn it on: it marks the code inside
   * each transaction with an AsyncLocalStorage, whose promise hooks, on Node 20, slow every promise of the
   * process (a cached read lost a fifth of its rate, bench/RESULTS.md). The service runs without.
   */
  checkNestedQueries?: boolean;
}

/**
 * PostgreSQL settings of the embedded instance, after PGlite's own. Its WebAssembly memory only grows and every
 * page PostgreSQL touches stays resident: shared_buffers (128MB by default, all of it touched at start) is most
 * of the process's memory. 16MB holds the catalog and a small deployment's hot pages; other reads come from the
 * operating system's page cache through a system call. maintenance_work_mem bounds what an index build in a
 * migration leaves behind. default_statistics_target 10 (PostgreSQL's default until 8.4) makes ANALYZE sample
 * 3,000 rows instead of 30,000: PGlite answers nothing else while it runs, and the access log's took 120–165 ms,
 * the one wait left in the access decisions' p99 under a live site's load (22 ms at 10; bench/RESULTS.md, 2026-11-28).
 * wal_init_zero off: each new 16 MB WAL segment is made by writing its last byte instead of 16 MB of zeros, which
 * held the commit that crossed into it, and PGlite, for 100–130 ms every 16 MB of WAL (every few seconds while doors
 * are busy). The zeros allocate the space before the WAL is fsynced, and PGlite runs with fsync off.
 */
export const EMBEDDED_SETTINGS: Readonly<Record<string, string>> = {
  shared_buffers: '16MB',
  maintenance_work_mem: '16MB',
  default_statistics_target: '10',
  wal_init_zero: 'off',
};

/**
 * PGlite's WebAssembly, compiling from the first open on. Left to PGlite, it is read and compiled once the
 * cluster is in place, and the main thread waited idle for it; started here, the compilation runs on V8's worker
 * thread while a first start copies the migrated cluster (about 0.3 s of an embedded start, bench/RESULTS.md).
 * Read synchronously so that the compilation is under way before that copy holds the main thread. Every PGlite
 * of the process shares the compiled module (tests open many).
 */
let compiledWasm: Promise<WebAssembly.Module> | undefined;
function pgliteWasm(): Promise<WebAssembly.Module> {
  if (!compiledWasm) {
    compiledWasm = WebAssembly.compile(readFileSync(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite'))));
    // A compilation that fails is PGlite's to report when it opens; no unhandled rejection meanwhile.
    compiledWasm.catch(() => undefined);
  }
  return compiledWasm;
}

export async function openPglite(options: PgliteOptions): Promise<PgliteDatabase> {
  const dataDir = options.dataDir === 'memory' ? 'memory://' : options.dataDir;
  // One process at a time on a directory (data-dir-lock.ts): a second opener stops here, naming the holder.
  const lock = options.dataDir === 'memory' ? null : lockDataDir(options.dataDir);
  try {
    return await openLocked(options, dataDir, lock);
  } catch (error) {
    lock?.release();
    throw error;
  }
}

async function openLocked(options: PgliteOptions, dataDir: string, lock: DataDirLock | null): Promise<PgliteDatabase> {
  const wasm = pgliteWasm();
  // A new cluster starts from the committed initdb output when there is one for this PGlite (seconds faster).
  let loadDataDir = options.loadDataDir ?? null;
  if (!loadDataDir && options.dataDir === 'memory') loadDataDir = await initdbTemplate();
  else if (!loadDataDir && !existsSync(`${options.dataDir}/PG_VERSION`) && isEmptyDir(options.dataDir)) {
    if (!(await options.fillEmptyDir?.(options.dataDir))) await unpackInitdbTemplate(options.dataDir);
  }
  const worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), {
    workerData: {
      dataDir,
      wasmModule: await wasm,
      settings: EMBEDDED_SETTINGS,
      loadDataDir,
    },
    // Plain JavaScript: no TypeScript loader (tests, `npm run dev`) nor the service's V8 flags on this thread.
    execArgv: [],
  });
  const ready = await new Promise<WorkerMessage>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the embedded database's thread ended as it opened (exit code ${code})`)));
  });
  if (!ready.ready) {
    await worker.terminate();
    throw databaseError(ready.error, 'open');
  }
  return new PgliteDatabase(worker, lock, options.checkNestedQueries ? new AsyncLocalStorage<boolean>() : null);
}

function isEmptyDir(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch {
    return true; // absent
  }
}

/** What the database's thread posts (pglite-worker.mjs has the protocol). */
interface WorkerMessage {
  id?: number;
  ready?: boolean;
  rows?: Row[];
  tx?: number;
  dump?: Blob;
  /** The fields of a failure (errors.ts keeps what names it). */
  error?: Record<string, string>;
  notification?: string;
  payload?: string;
}

export class PgliteDatabase implements Database {
  readonly engine = 'pglite' as const;
  private readonly waiting = new Map<number, { resolve: (answer: WorkerMessage) => void; reject: (error: unknown) => void }>();
  private readonly listeners = new Map<string, Array<(payload: string) => void>>();
  private nextId = 1;
  /** Why no request can be made any more: closed, or the thread ended. */
  private ended: Error | null = null;
  private readonly exited: Promise<void>;

  constructor(
    private readonly worker: Worker,
    private readonly lock: DataDirLock | null = null,
    /** Marks the code running inside a transaction (PgliteOptions.checkNestedQueries), or null. */
    private readonly insideTransaction: AsyncLocalStorage<boolean> | null = null,
  ) {
    worker.on('message', (message: WorkerMessage) => this.heard(message));
    this.exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    const stop = (error: Error) => {
      this.ended ??= error;
      for (const { reject } of this.waiting.values()) reject(error);
      this.waiting.clear();
    };
    worker.on('error', stop); // every time: an 'error' with no listener would end the service
    worker.once('exit', () => stop(new Error('the embedded database has stopped')));
    // Only a request waiting for its answer keeps the process alive (request() refs it), not an idle database.
    worker.unref();
  }

  private request(message: Record<string, unknown>): Promise<WorkerMessage> {
    if (this.ended) return Promise.reject(this.ended);
    const id = this.nextId++;
    if (this.waiting.size === 0) this.worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id });
    });
  }

  private heard(message: WorkerMessage): void {
    if (message.notification !== undefined) {
      for (const listener of this.listeners.get(message.notification) ?? []) listener(message.payload ?? '');
      return;
    }
    const waiter = message.id === undefined ? undefined : this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id as number);
    if (this.waiting.size === 0) this.worker.unref();
    if (message.error) waiter.reject(message.error);
    else waiter.resolve(message);
  }

  /** With checkNestedQueries: a statement on the database from inside a transaction fails at once (it would wait forever). */
  private refuseInsideTransaction(text: string): void {
    if (this.insideTransaction?.getStore()) throw new Error(`query on the database inside a transaction (use tx): ${text.slice(0, 80)}`);
  }

  async appendRows(table: string, columns: readonly AppendColumn[], rows: ReadonlyArray<readonly AppendValue[]>): Promise<void> {
    const text = copyStatement(table, columns, '/dev/blob');
    this.refuseInsideTransaction(text);
    const data = encodeCopyRows(columns, rows);
    try {
      await this.request({ op: 'copy', text, data });
    } catch (error) {
      throw databaseError(error, text);
    }
  }

  async query<T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> {
    this.refuseInsideTransaction(sqlText(sql));
    return this.run<T>(sql, params, undefined);
  }

  private async run<T>(sql: Sql, params: readonly unknown[], tx: number | undefined): Promise<T[]> {
    const text = sqlText(sql);
    try {
      const name = typeof sql === 'string' ? undefined : sql.name;
      return (await this.request({ op: 'query', text, params, tx, name })).rows as T[];
    } catch (error) {
      throw databaseError(error, text); // PGlite's errors carry the parameters
    }
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let tx: number;
    try {
      tx = (await this.request({ op: 'begin' })).tx as number;
    } catch (error) {
      throw databaseError(error, 'BEGIN');
    }
    let result: T;
    try {
      const body = () =>
        fn({
          query: <R extends object = Row>(sql: Sql, params: readonly unknown[] = []) => this.run<R>(sql, params, tx),
          script: async (sql: string) => {
            try {
              await this.request({ op: 'script', sql, tx });
            } catch (error) {
              throw databaseError(error, sql.slice(0, 80));
            }
          },
          // Listeners hear the notification before the commit's answer: both cross the one port, in order.
          notify: async (channel: string, payload = '') => {
            await this.run('SELECT pg_notify($1, $2)', [this.channel(channel), payload], tx);
          },
        });
      result = await (this.insideTransaction ? this.insideTransaction.run(true, body) : body());
    } catch (error) {
      // The caller's own error passes unchanged, after the rollback.
      await this.request({ op: 'end', tx, commit: false }).catch(() => undefined);
      throw error;
    }
    try {
      await this.request({ op: 'end', tx, commit: true });
    } catch (error) {
      throw databaseError(error, 'COMMIT');
    }
    return result;
  }

  async listen(channel: string, onMessage: (payload: string) => void): Promise<void> {
    const name = this.channel(channel);
    const listeners = this.listeners.get(name);
    if (listeners) {
      listeners.push(onMessage);
      return;
    }
    this.listeners.set(name, [onMessage]);
    await this.request({ op: 'listen', channel: name });
  }

  channel(name: string): string {
    return `latchkey_public_${name}`;
  }

  async dump(): Promise<Blob> {
    return (await this.request({ op: 'dump' })).dump as Blob;
  }

  async close(): Promise<void> {
    try {
      if (!this.ended) {
        await this.request({ op: 'close' });
        this.ended = new Error('the embedded database is closed');
      }
      this.worker.ref(); // its end is awaited
      await this.exited;
    } finally {
      this.lock?.release();
    }
  }
}
