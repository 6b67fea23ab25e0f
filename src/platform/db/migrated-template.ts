// A cluster with every migration already applied, built next to the service's bundle (`npm start --build`,
// the Docker image, or the first `npm start` after a change to src/): a first start on an empty data directory
// copies it instead of applying the migrations one by one, which took about 650 ms of the embedded first start
// and left about 45 MiB of WebAssembly memory behind. It is keyed by the PGlite version and the migration files'
// names and contents; a start that finds none for its key (a migration added since the build, `npm run dev`)
// unpacks initdb's output and migrates, as before. The copy is the same cluster the migrations make: it is made
// by them (writeMigratedTemplate), and the start still runs migrate(), which finds nothing to apply.
// Only `applied_at` in schema_migrations differs: the time the template was built.
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { listMigrations, migrate } from './migrate.ts';
import { openPglite } from './pglite.ts';
import { pgliteVersion } from './pglite-template.ts';

/** Under the project's .cache (ignored by git and docker), beside the bundle. */
export const migratedTemplatesDir = fileURLToPath(new URL('../../../.cache/pglite/', import.meta.url));

/** What the migrated cluster depends on: the PGlite version and every migration file. */
export async function migratedTemplateKey(): Promise<string> {
  const hash = createHash('sha256').update(pgliteVersion());
  for (const migration of await listMigrations()) hash.update(`\0${migration.version}\0${migration.sql}`);
  return hash.digest('hex').slice(0, 20);
}

const templatePath = (key: string, templates: string): string => path.join(templates, `migrated-${key}`);

/**
 * Copies the migrated cluster for the current key into `dir` (absent or empty; the caller holds its lock);
 * false when there is none. Copied beside `dir` and renamed into place, so an interrupted copy leaves no half
 * a cluster behind.
 */
export async function copyMigratedTemplate(dir: string, templates = migratedTemplatesDir): Promise<boolean> {
  const source = templatePath(await migratedTemplateKey(), templates);
  if (!existsSync(path.join(source, 'PG_VERSION'))) return false;
  const temp = `${dir}.copying-${process.pid}`;
  await rm(temp, { recursive: true, force: true });
  // Synchronous: fs.cp's promise per file took 0.8 s for the cluster's 1,168 files, cpSync 0.15 s (nothing else
  // runs yet at a first start).
  cpSync(source, temp, { recursive: true });
  await rm(dir, { recursive: true, force: true }); // empty (the caller checked): rename does not replace a directory everywhere
  await rename(temp, dir);
  return true;
}

/**
 * Builds the migrated cluster for the current key unless it exists, and removes the ones of other keys.
 * Several builds may run at once (tests start the service together): each builds in a directory of its own and
 * the first rename wins.
 */
export async function writeMigratedTemplate(templates = migratedTemplatesDir): Promise<string> {
  const key = await migratedTemplateKey();
  const target = templatePath(key, templates);
  if (!existsSync(path.join(target, 'PG_VERSION'))) {
    await mkdir(templates, { recursive: true });
    const temp = path.join(templates, `building-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      const db = await openPglite({ dataDir: temp });
      try {
        await migrate(db);
      } finally {
        await db.close();
      }
      await rename(temp, target).catch((error: unknown) => {
        if (!existsSync(path.join(target, 'PG_VERSION'))) throw error; // not another build's: a real failure
      });
    } finally {
      await rm(temp, { recursive: true, force: true });
      await rm(`${temp}.lock`, { force: true });
    }
  }
  for (const name of await readdir(templates)) {
    if (/^migrated-/.test(name) && name !== path.basename(target)) await rm(path.join(templates, name), { recursive: true, force: true });
  }
  return target;
}
