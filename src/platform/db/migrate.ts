// Applies the numbered .sql files of src/db/migrations once each, in order: at start-up and by `npm run migrate`.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Database } from './database.ts';

export const migrationsDir = fileURLToPath(new URL('../../db/migrations/', import.meta.url));

export async function listMigrations(): Promise<Array<{ version: string; sql: string }>> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (file) => ({ version: file.replace(/\.sql$/, ''), sql: await readFile(migrationsDir + file, 'utf8') })),
  );
}

/** The lock every migration run holds (PostgreSQL advisory lock; PGlite has them too, with one session). */
export const MIGRATION_LOCK = 727274;

export interface MigrateOptions {
  /** A version prefix such as '009': stops short of it (tests of a migration). */
  before?: string;
  /** Progress for the operator (start-up, `npm run migrate`): waiting for the lock, each file applied. */
  progress?: (message: string) => void;
}

/**
 * Applies what is missing, in one transaction. Safe when several instances (or `npm run migrate` and an
 * instance) start together against one server: each takes the migration lock first, so the first applies
 * and the others wait, then find everything applied. A transaction-level lock (pg_advisory_xact_lock) is
 * released by the commit or the rollback, and by the server if the process dies while holding it.
 */
export async function migrate(db: Database, options: MigrateOptions = {}): Promise<string[]> {
  const progress = options.progress ?? (() => undefined);
  const migrations = (await listMigrations()).filter((m) => options.before === undefined || m.version < options.before);
  return db.transaction(async (tx) => {
    const [free] = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [MIGRATION_LOCK]);
    if (!free?.locked) {
      progress('another instance is applying migrations: waiting for it');
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    }
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version));
    const pending = migrations.filter((m) => !done.has(m.version));
    const applied: string[] = [];
    for (const migration of pending) {
      // Named first, then counted among those to apply: "7/24" beside 007_… read as files missing (numbers 008 and 010 were withdrawn).
      progress(`applying migration ${migration.version} (${applied.length + 1} of ${pending.length} to apply)`);
      // The file as one script: function bodies and string literals may hold semicolons.
      await tx.script(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      applied.push(migration.version);
    }
    progress(
      applied.length === 0
        ? `database schema up to date (${migrations.length} migrations)`
        : `database schema up to date: applied ${applied.length} of ${migrations.length} migrations`,
    );
    return applied;
  });
}
