import { mkdir } from 'node:fs/promises';
import type { Config } from '../../config.ts';
import type { Database } from './database.ts';
import { migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export type { Database, PoolStats, PreparedSql, Queryable, Row, Transaction } from './database.ts';

/** Opens the configured database (server PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'databaseTimeoutSeconds'>): Promise<Database> {
  if (config.databaseUrl) {
    // Migrations run without the time limit of DATABASE_TIMEOUT_SECONDS (an index on a large table may take
    // long), on a connection of their own; the service's pool has the limit.
    await migrated(await openPostgres({ connectionString: config.databaseUrl, maxConnections: 1 }), { thenClose: true });
    return openPostgres({ connectionString: config.databaseUrl, timeoutMs: config.databaseTimeoutSeconds * 1000 });
  }
  if (config.dataDir !== 'memory') await mkdir(config.dataDir, { recursive: true });
  return migrated(await openPglite({ dataDir: config.dataDir === 'memory' ? 'memory' : `${config.dataDir}/pg` }), { thenClose: false });
}

async function migrated(db: Database, options: { thenClose: boolean }): Promise<Database> {
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  if (options.thenClose) await db.close();
  return db;
}
