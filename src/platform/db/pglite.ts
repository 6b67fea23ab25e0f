// Embedded PostgreSQL through PGlite: one process, no server. Same SQL and migrations as server PostgreSQL.
import { AsyncLocalStorage } from 'node:async_hooks';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import { sqlText, type Database, type Row, type Sql, type Transaction } from './database.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { databaseError } from './errors.ts';
import { initdbTemplate, unpackInitdbTemplate } from './pglite-template.ts';

// Ids are int8; every id we hand out stays far below 2^53, so numbers are safe and JSON-friendly.
const parsers = { [types.INT8]: (value: string) => Number(value) };

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
 * held the commit that crossed into it, and the service's thread, for 100–130 ms every 16 MB of WAL (every few
 * seconds while doors are busy). The zeros allocate the space before the WAL is fsynced, and PGlite runs with
 * fsync off.
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
  const pg = new PGlite(dataDir, {
    pgliteWasmModule: await wasm,
    parsers,
    startParams: [...PGlite.defaultStartParams, ...Object.entries(EMBEDDED_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
    ...(loadDataDir ? { loadDataDir } : {}),
  });
  await pg.waitReady;
  return new PgliteDatabase(pg, lock);
}

function isEmptyDir(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch {
    return true; // absent
  }
}

export class PgliteDatabase implements Database {
  readonly engine = 'pglite' as const;
  // PGlite runs one transaction at a time: a query made on the database (not on `tx`) from inside a
  // transaction would wait for that transaction forever. This marks the code running inside one, so
  // such a query fails at once with a message instead of hanging.
  private readonly insideTransaction = new AsyncLocalStorage<boolean>();

  constructor(
    readonly pg: PGlite,
    private readonly lock: DataDirLock | null = null,
  ) {}

  async query<T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> {
    if (this.insideTransaction.getStore()) {
      throw new Error(`query on the database inside a transaction (use tx): ${sqlText(sql).slice(0, 80)}`);
    }
    const text = sqlText(sql);
    try {
      return (await this.pg.query(text, params as unknown[])).rows as T[];
    } catch (error) {
      throw databaseError(error, text); // PGlite's errors carry the parameters
    }
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    let callerError: unknown = undefined;
    try {
      return await this.pg.transaction(async (tx) =>
        this.insideTransaction.run(true, async () => {
          try {
            return await fn({
              query: async <R extends object = Row>(sql: Sql, params: readonly unknown[] = []) => {
                const text = sqlText(sql);
                try {
                  return (await tx.query(text, params as unknown[])).rows as R[];
                } catch (error) {
                  throw databaseError(error, text);
                }
              },
              script: async (sql: string) => {
                try {
                  await tx.exec(sql);
                } catch (error) {
                  throw databaseError(error, sql.slice(0, 80));
                }
              },
              // PGlite runs in this process: its listeners hear the notification as the commit returns.
              notify: async (channel: string, payload = '') => {
                await tx.query('SELECT pg_notify($1, $2)', [this.channel(channel), payload]);
              },
            });
          } catch (error) {
            callerError = error;
            throw error;
          }
        }),
      );
    } catch (error) {
      // The caller's own errors pass unchanged; those of BEGIN, COMMIT or ROLLBACK come from the driver.
      if (error === callerError) throw error;
      throw databaseError(error, 'COMMIT');
    }
  }

  async listen(channel: string, onMessage: (payload: string) => void): Promise<void> {
    await this.pg.listen(this.channel(channel), onMessage);
  }

  channel(name: string): string {
    return `latchkey_public_${name}`;
  }

  async dump(): Promise<Blob> {
    return this.pg.dumpDataDir('none');
  }

  async close(): Promise<void> {
    try {
      if (!this.pg.closed) await this.pg.close();
    } finally {
      this.lock?.release();
    }
  }
}
