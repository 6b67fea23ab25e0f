// Applies the numbered .sql files of src/db/migrations once each, in order, at start-up.
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

/** Applies what is missing; `before` (a version prefix such as '009') stops short of it (tests of a migration). */
export async function migrate(db: Database, options: { before?: string } = {}): Promise<string[]> {
  const migrations = (await listMigrations()).filter((m) => options.before === undefined || m.version < options.before);
  return db.transaction(async (tx) => {
    // Several instances may start together against one server: the first applies, the others wait.
    await tx.query('SELECT pg_advisory_xact_lock(727274)');
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ version: string }>('SELECT version FROM schema_migrations')).map((r) => r.version));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      // The file as one script: function bodies and string literals may hold semicolons.
      await tx.script(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      applied.push(migration.version);
    }
    return applied;
  });
}
