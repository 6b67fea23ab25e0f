import { mkdir, readdir } from 'node:fs/promises';
import type { Config } from '../../config.ts';
import { shownUrl } from '../logging.ts';
import type { Database } from './database.ts';
import { copyMigratedTemplate } from './migrated-template.ts';
import { migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export type { Database, PoolStats, PreparedSql, Queryable, Row, Sql, Transaction } from './database.ts';

export interface OpenOptions {
  /** Progress for the operator: creating the embedded database, waiting for the migration lock, each migration. */
  progress?: (message: string) => void;
}

type DatabaseConfig = Pick<Config, 'databaseUrl' | 'dataDir' | 'databaseTimeoutSeconds'>;

/** Opens the configured database (server PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<Database> {
  if (config.databaseUrl) {
    options.progress?.(`connecting to PostgreSQL at ${shownUrl(config.databaseUrl)}`);
    // Migrations run without the time limit of DATABASE_TIMEOUT_SECONDS (an index on a large table may take
    // long), on a connection of their own; the service's pool has the limit.
    await migrated(await openPostgres({ connectionString: config.databaseUrl, maxConnections: 1 }), options, { thenClose: true });
    return openPostgres({ connectionString: config.databaseUrl, timeoutMs: config.databaseTimeoutSeconds * 1000 });
  }
  return migrated(await openEmbedded(config, options), options, { thenClose: false });
}

/** `npm run migrate`: applies what is missing and closes; returns the versions applied now. */
export async function migrateDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<string[]> {
  if (config.databaseUrl) options.progress?.(`connecting to PostgreSQL at ${shownUrl(config.databaseUrl)}`);
  const db = config.databaseUrl
    ? await openPostgres({ connectionString: config.databaseUrl, maxConnections: 1 })
    : await openEmbedded(config, options);
  try {
    return await migrate(db, options);
  } finally {
    await db.close();
  }
}

async function openEmbedded(config: Pick<Config, 'dataDir'>, options: OpenOptions): Promise<Database> {
  const progress = options.progress ?? (() => undefined);
  if (config.dataDir === 'memory') {
    progress('creating the embedded database in memory');
    return openPglite({ dataDir: 'memory' });
  }
  const dir = `${config.dataDir}/pg`;
  const fresh = (await readdir(dir).catch(() => [])).length === 0;
  // A first start copies the migrated cluster built with the bundle (migrated-template.ts), else unpacks an
  // initialised cluster (src/db/pglite) and migrates it, or runs initdb for a PGlite without one.
  progress(fresh ? `creating the embedded database in ${dir} (first start)` : `opening the embedded database in ${dir}`);
  await mkdir(config.dataDir, { recursive: true });
  const fillEmptyDir = async (empty: string): Promise<boolean> => {
    const copied = await copyMigratedTemplate(empty);
    if (copied) progress('copied the migrated database template (every migration applied; .cache/pglite)');
    return copied;
  };
  return openPglite({ dataDir: dir, fillEmptyDir });
}

async function migrated(db: Database, options: OpenOptions, how: { thenClose: boolean }): Promise<Database> {
  try {
    await migrate(db, options);
  } catch (error) {
    await db.close();
    throw error;
  }
  if (how.thenClose) await db.close();
  return db;
}
