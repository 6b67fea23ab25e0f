// The database of one test process: embedded PGlite (default) or a fresh schema on server PostgreSQL
// (LATCHKEY_TEST_BACKEND=postgres with TEST_DATABASE_URL). Runs never see each other's rows.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Database } from '../../src/platform/db/database.ts';
import { listMigrations, migrate } from '../../src/platform/db/migrate.ts';
import { openPglite } from '../../src/platform/db/pglite.ts';
import { openPostgres } from '../../src/platform/db/postgres.ts';

export const backend: 'pglite' | 'postgres' = process.env.LATCHKEY_TEST_BACKEND === 'postgres' ? 'postgres' : 'pglite';

const cacheDir = path.resolve('node_modules/.cache/latchkey');

/** Fresh PGlite takes seconds to initialise; a migrated data directory is dumped once and loaded per process. */
async function pgliteTemplate(): Promise<Blob> {
  const pgliteVersion = (JSON.parse(await readFile('node_modules/@electric-sql/pglite/package.json', 'utf8')) as { version: string }).version;
  const migrations = await listMigrations();
  const hash = createHash('sha256')
    .update(pgliteVersion)
    .update(JSON.stringify(migrations))
    .digest('hex')
    .slice(0, 16);
  const file = path.join(cacheDir, `pglite-template-${hash}.tar`);
  try {
    return new Blob([await readFile(file)]);
  } catch {
    const db = await openPglite({ dataDir: 'memory' });
    await migrate(db);
    const dump = await db.dump();
    await db.close();
    await mkdir(cacheDir, { recursive: true });
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, Buffer.from(await dump.arrayBuffer()));
    await rename(temp, file); // atomic: concurrent processes never read a half-written template
    return dump;
  }
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
  const db =
    options.migrateBefore === undefined
      ? await openPglite({ dataDir: 'memory', loadDataDir: await pgliteTemplate() })
      : await openPglite({ dataDir: 'memory' });
  await migrate(db, migrateOptions); // a no-op on the template; keeps the path honest
  return {
    db,
    openAnother: async () => db, // PGlite is one process's database: a second instance shares the same one
    close: () => db.close(),
  };
}

/** The same database, but its transactions fail while `failing()` says so, as a lost connection would. */
export function withFailingTransactions(db: Database, failing: () => boolean): Database {
  const flaky = Object.create(db) as Database;
  flaky.transaction = async (fn) => {
    if (failing()) throw new Error('the database went away');
    return db.transaction(fn);
  };
  return flaky;
}
