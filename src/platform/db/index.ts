import { mkdir } from 'node:fs/promises';
import type { Config } from '../../config.ts';
import type { Database } from './database.ts';
import { migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { openPostgres } from './postgres.ts';

export type { Database, PreparedSql, Queryable, Row } from './database.ts';
export { notify } from './database.ts';

/** Opens the configured database (server PostgreSQL when DATABASE_URL is set, else PGlite) and migrates it. */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Database> {
  let db: Database;
  if (config.databaseUrl) {
    db = await openPostgres({ connectionString: config.databaseUrl });
  } else {
    if (config.dataDir !== 'memory') await mkdir(config.dataDir, { recursive: true });
    db = await openPglite({ dataDir: config.dataDir === 'memory' ? 'memory' : `${config.dataDir}/pg` });
  }
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
