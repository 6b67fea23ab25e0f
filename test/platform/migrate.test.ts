// Migrations run each file as one script inside the migration transaction, so a function body or a string
// literal may hold semicolons (they were once split on `;`).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { listMigrations } from '../../src/platform/db/migrate.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database?.close();
});

test('a script with a function body, a literal holding ; and a comment runs whole, in the transaction', async () => {
  await database.db.transaction((tx) =>
    tx.script(`
      -- a comment; with a semicolon
      CREATE FUNCTION lk_script_test() RETURNS text LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM 1;
        RETURN 'a;b';
      END
      $$;
      CREATE TABLE lk_script_rows (v text);
      INSERT INTO lk_script_rows VALUES ('x;y');
    `),
  );
  const [row] = await database.db.query<{ f: string; v: string }>('SELECT lk_script_test() AS f, (SELECT v FROM lk_script_rows) AS v');
  assert.deepEqual(row, { f: 'a;b', v: 'x;y' });
});

test('a failing script rolls back with its transaction: nothing of it stays', async () => {
  await assert.rejects(database.db.transaction((tx) => tx.script('CREATE TABLE lk_script_half (v int); SELECT 1/0;')));
  const rows = await database.db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'lk_script_half'");
  assert.equal(rows.length, 0);
});

test('every migration of the repository is applied and recorded once', async () => {
  const recorded = await database.db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version');
  assert.deepEqual(recorded.map((r) => r.version), (await listMigrations()).map((m) => m.version));
});
