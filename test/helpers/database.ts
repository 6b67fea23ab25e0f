// The database of one test process: embedded PGlite (default) or a fresh schema on server PostgreSQL
// (LATCHKEY_TEST_BACKEND=postgres with TEST_DATABASE_URL). Runs never see each other's rows.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { sqlText, type Database, type Queryable, type Row, type Sql } from '../../src/platform/db/database.ts';
import { migrate } from '../../src/platform/db/migrate.ts';
import { copyMigratedTemplate, writeMigratedTemplate } from '../../src/platform/db/migrated-template.ts';
import { openPglite, type PgliteDatabase } from '../../src/platform/db/pglite.ts';
import { openPostgres } from '../../src/platform/db/postgres.ts';

export const backend: 'pglite' | 'postgres' = process.env.LATCHKEY_TEST_BACKEND === 'postgres' ? 'postgres' : 'pglite';

/**
 * Where embedded test databases live: a directory of the run (scripts/test.mjs makes it on tmpfs and removes it at
 * the end), else tmpfs, else the system's temporary directory. Each is a copy of the migrated cluster that
 * `npm start` uses (platform/db/migrated-template.ts), opened by PGlite on the file system: measured on the 2-core
 * machine, a copy into /dev/shm and its opening took 0.2 s of CPU, against 0.5-0.7 s for loading a dump into
 * PGlite's memory file system, and PGlite keeps no copy of the 40 MiB cluster in the process's memory.
 */
const scratchDir = process.env.LATCHKEY_TEST_SCRATCH ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());

/** A migrated embedded database in a directory of its own, and that directory. */
async function migratedPglite(): Promise<{ db: PgliteDatabase; dir: string }> {
  await mkdir(scratchDir, { recursive: true });
  const dir = await mkdtemp(path.join(scratchDir, 'latchkey-test-db-'));
  // Built before the run (test/helpers/prepare-run.ts) or by npm start; a file run on its own builds it here.
  if (!(await copyMigratedTemplate(dir))) {
    await writeMigratedTemplate();
    if (!(await copyMigratedTemplate(dir))) throw new Error('the migrated template is missing right after it was written');
  }
  return { db: await openPglite({ dataDir: dir, checkNestedQueries: true }), dir };
}

export function testDatabaseUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('LATCHKEY_TEST_BACKEND=postgres needs TEST_DATABASE_URL');
  return url;
}

export interface TestDatabase {
  db: Database;
  /** Opens another connection to the same data, as a second service instance would (PostgreSQL only). */
  openAnother(): Promise<Database>;
  close(): Promise<void>;
}

/** `migrateBefore` ('009'): a database as it was before that migration, made from scratch (slower). */
export async function createTestDatabase(options: { migrateBefore?: string } = {}): Promise<TestDatabase> {
  const migrateOptions = options.migrateBefore === undefined ? {} : { before: options.migrateBefore };
  if (backend === 'postgres') {
    const connectionString = testDatabaseUrl();
    const schema = `lk_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    const opened: Database[] = [];
    const open = async () => {
      const db = await openPostgres({ connectionString, schema, maxConnections: 10 });
      opened.push(db);
      return db;
    };
    const db = await open();
    await migrate(db, migrateOptions);
    return {
      db,
      openAnother: open,
      async close() {
        for (const each of opened) await each.close();
        const cleanup = new pg.Client({ connectionString });
        await cleanup.connect();
        await cleanup.query(`DROP SCHEMA ${schema} CASCADE`);
        await cleanup.end();
      },
    };
  }
  if (options.migrateBefore !== undefined) {
    const db = await openPglite({ dataDir: 'memory', checkNestedQueries: true });
    await migrate(db, migrateOptions);
    return { db, openAnother: async () => db, close: () => db.close() };
  }
  const { db, dir } = await migratedPglite();
  await migrate(db); // a no-op on the template; keeps the path honest
  return {
    db,
    openAnother: async () => db, // PGlite is one process's database: a second instance shares the same one
    async close() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A statement as a fault sees it, before it runs. */
export interface Statement {
  /** The prepared statement's name (`catalog.locksPageJson`), null for plain SQL: what a fault picks by. */
  name: string | null;
  /** `BEGIN` when a transaction is about to start. */
  text: string;
  params: readonly unknown[];
}

/** What a statement meets: an error to throw instead of running it, or nothing. */
export type Fault = (statement: Statement) => Error | undefined;

/**
 * The same database, but every statement, on the database or inside a transaction, and every transaction
 * before it starts (as `BEGIN`) first meets `fault`: the error it returns is thrown instead, as a lost
 * connection or a database refusing the data would throw. Faults pick statements by their prepared name or
 * parameters, never by the text of the SQL.
 */
export function withFaults(db: Database, fault: Fault): Database {
  const check = (sql: Sql, params: readonly unknown[] = []): void => {
    const error = fault({ name: typeof sql === 'string' ? null : sql.name, text: sqlText(sql), params });
    if (error) throw error;
  };
  const query = (on: Queryable): Queryable['query'] =>
    async <T extends object = Row>(sql: Sql, params?: readonly unknown[]): Promise<T[]> => {
      check(sql, params);
      return on.query<T>(sql, params);
    };
  const transaction: Database['transaction'] = async (fn) => {
    check('BEGIN');
    return db.transaction((tx) => fn(overriding(tx, { query: query(tx) })));
  };
  const appendRows: Database['appendRows'] = async (table, columns, rows) => {
    check(`appendRows ${table}`);
    return db.appendRows(table, columns, rows);
  };
  return overriding(db, { query: query(db), appendRows, transaction });
}

/**
 * `target` with some members replaced; every other member is the target's own, called on the target, so
 * that state it keeps (a LISTEN connection, a closed flag) stays where its close() finds it. For a test
 * whose fake statement must answer rows rather than fail (withFaults only throws).
 */
export function overriding<T extends object>(target: T, replaced: Partial<T>): T {
  return new Proxy(target, {
    get(object, property) {
      if (Object.hasOwn(replaced, property)) return replaced[property as keyof T];
      const value: unknown = Reflect.get(object, property, object);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });
}

/** The same database, but its transactions fail while `failing()` says so, as a lost connection would. */
export function withFailingTransactions(db: Database, failing: () => boolean): Database {
  return withFaults(db, ({ text }) => (text === 'BEGIN' && failing() ? new Error('the database went away') : undefined));
}

/** The sequential scans of `table` in the plan of `sql` (EXPLAIN, both backends), each as the start of its plan node. */
export async function sequentialScans(db: Queryable, table: string, sql: string, params: readonly unknown[]): Promise<string[]> {
  const [explained] = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const scans: string[] = [];
  const walk = (node: Record<string, unknown>): void => {
    if (node['Relation Name'] === table && node['Node Type'] === 'Seq Scan') scans.push(JSON.stringify(node).slice(0, 200));
    for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
  };
  const plan = explained?.['QUERY PLAN'];
  walk(((typeof plan === 'string' ? JSON.parse(plan) : plan) as Array<{ Plan: Record<string, unknown> }>)[0]?.Plan ?? {});
  return scans;
}
