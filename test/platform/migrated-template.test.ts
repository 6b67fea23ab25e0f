// The embedded first start copies a cluster the migrations already made (migrated-template.ts) instead of applying
// them: the copy must be the schema the migrations make, a template for other migrations must never be used, and
// the service's first start must take it when it is there.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { openDatabase } from '../../src/platform/db/index.ts';
import { copyMigratedTemplate, migratedTemplateKey, writeMigratedTemplate } from '../../src/platform/db/migrated-template.ts';
import { listMigrations, migrate } from '../../src/platform/db/migrate.ts';
import { openPglite, type PgliteDatabase } from '../../src/platform/db/pglite.ts';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'latchkey-migrated-'));
  dirs.push(dir);
  return dir;
}

/** Everything the migrations define, one line each, sorted: tables' columns, indexes, constraints, functions, triggers. */
async function schemaOf(db: PgliteDatabase): Promise<string[]> {
  const rows = await db.query<{ line: string }>(`
    SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || coalesce(column_default, '') || ' ' || is_nullable AS line
      FROM information_schema.columns WHERE table_schema = 'public'
    UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
    UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT 'function ' || pg_get_functiondef(oid) FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND prokind IN ('f', 'p')
    UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
    UNION ALL SELECT 'migration ' || version FROM schema_migrations
    ORDER BY 1`);
  return rows.map((row) => row.line);
}

test('a data directory copied from the template holds the schema the migrations make, and nothing is left to apply', async () => {
  const templates = await tempDir();
  await writeMigratedTemplate(templates);
  const copied = await openPglite({ dataDir: `${await tempDir()}/pg`, fillEmptyDir: (dir) => copyMigratedTemplate(dir, templates) });
  const migrated = await openPglite({ dataDir: `${await tempDir()}/pg` });
  try {
    assert.deepEqual(await migrate(copied), []);
    assert.equal((await migrate(migrated)).length, (await listMigrations()).length);
    const schema = await schemaOf(copied);
    assert.ok(schema.some((line) => line.startsWith('index CREATE')) && schema.some((line) => line.startsWith('trigger ')), 'the comparison sees indexes and triggers');
    assert.deepEqual(schema, await schemaOf(migrated));
  } finally {
    await copied.close();
    await migrated.close();
  }
});

test("a template made for other migrations or another PGlite is never copied, and a new build removes it", async () => {
  const templates = await tempDir();
  const stale = path.join(templates, 'migrated-0123456789abcdef0123');
  await mkdir(stale, { recursive: true });
  const target = `${await tempDir()}/pg`;
  assert.equal(await copyMigratedTemplate(target, templates), false);
  assert.equal(existsSync(target), false);
  // The directory then gets initdb's output and every migration, as before the template.
  const db = await openPglite({ dataDir: target, fillEmptyDir: (dir) => copyMigratedTemplate(dir, templates) });
  try {
    assert.equal((await migrate(db)).length, (await listMigrations()).length);
  } finally {
    await db.close();
  }
  await writeMigratedTemplate(templates);
  assert.deepEqual(await readdir(templates), [`migrated-${await migratedTemplateKey()}`]);
});

test('two builds at once leave one whole template', async () => {
  const templates = await tempDir();
  const [first, second] = await Promise.all([writeMigratedTemplate(templates), writeMigratedTemplate(templates)]);
  assert.equal(first, second);
  assert.deepEqual(await readdir(templates), [path.basename(first)]);
  assert.ok(existsSync(path.join(first, 'PG_VERSION')));
});

test("the service's first start copies the template built with its bundle and applies no migration", async () => {
  await writeMigratedTemplate(); // what `npm start --build` did; a no-op when it is there
  const dataDir = await tempDir();
  const progress: string[] = [];
  const db = await openDatabase({ dataDir, databaseUrl: null, databaseTimeoutSeconds: 5 }, { progress: (message) => progress.push(message) });
  try {
    assert.ok(progress.some((line) => line.includes('(first start)')), progress.join('\n'));
    assert.ok(!progress.some((line) => line.startsWith('applying migration')), progress.join('\n'));
    const [row] = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM schema_migrations');
    assert.equal(row?.count, (await listMigrations()).length);
  } finally {
    await db.close();
  }
});
