// Statements marked anyValue (the door events' write and its batch's reads) run on server PostgreSQL on connections
// of their own that plan once for any value; every other statement keeps plans made for its values (the pages of
// the lists need them). PGlite ignores the mark.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Database, PreparedSql } from '../../src/platform/db/index.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/database.ts';

const skip = backend !== 'postgres' && 'server PostgreSQL only (LATCHKEY_TEST_BACKEND=postgres)';

let database: TestDatabase;
let db: Database;
before(async () => {
  if (skip) return;
  database = await createTestDatabase();
  db = database.db;
});
after(async () => database?.close());

const MODE = 'SELECT current_setting($1) AS mode, pg_backend_pid() AS pid';
const anyValue: PreparedSql = { name: 'test.anyValueMode', text: MODE, anyValue: true };
const forTheValues: PreparedSql = { name: 'test.valuesMode', text: MODE };

test('a statement marked anyValue is planned for any value, on connections other than the pool’s; others as before', { skip }, async () => {
  // The mode is the connection's from its start: no query of ours runs beside the first one (pg 8 warns of that).
  const warnings: string[] = [];
  const warned = (warning: Error) => warnings.push(warning.message);
  process.on('warning', warned);
  after(() => void process.off('warning', warned));
  const [marked] = await db.query<{ mode: string; pid: number }>(anyValue, ['plan_cache_mode']);
  const [named] = await db.query<{ mode: string; pid: number }>(forTheValues, ['plan_cache_mode']);
  const [plain] = await db.query<{ mode: string; pid: number }>(MODE, ['plan_cache_mode']);
  assert.equal(marked?.mode, 'force_generic_plan');
  assert.equal(named?.mode, 'auto');
  assert.equal(plain?.mode, 'auto');
  assert.notEqual(marked?.pid, named?.pid);
  // Many at once stay on the few connections of their own.
  const pids = await Promise.all(Array.from({ length: 20 }, () => db.query<{ pid: number }>(anyValue, ['plan_cache_mode'])));
  assert.ok(new Set(pids.map(([row]) => row?.pid)).size <= 4, 'at most 4 connections');
  // Inside a transaction the mark changes nothing: the statement runs on the transaction's connection.
  const inTx = await db.transaction(async (tx) => (await tx.query<{ mode: string }>(anyValue, ['plan_cache_mode']))[0]?.mode);
  assert.equal(inTx, 'auto');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(warnings, []);
});

test('the search path of the pool holds on those connections (a test’s schema, say)', { skip }, async () => {
  const [row] = await db.query<{ mode: string }>({ name: 'test.anyValuePath', text: 'SELECT current_schema() AS mode', anyValue: true });
  const [pool] = await db.query<{ mode: string }>('SELECT current_schema() AS mode');
  assert.equal(row?.mode, pool?.mode);
});
