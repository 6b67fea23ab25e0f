// The embedded database runs PGlite on a thread of its own (platform/db/pglite-worker.mjs): a long statement holds
// that thread, not the service's, and the database port behaves across the thread as it did in it (transactions,
// errors, notifications before the commit's answer).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DatabaseError } from '../../src/platform/db/errors.ts';
import { openPglite, type PgliteDatabase } from '../../src/platform/db/pglite.ts';

let db: PgliteDatabase;
before(async () => {
  db = await openPglite({ dataDir: 'memory' });
  await db.query('CREATE TABLE parents (id int PRIMARY KEY)');
  await db.query('CREATE TABLE children (parent_id int REFERENCES parents DEFERRABLE INITIALLY DEFERRED)');
});
after(() => db.close());

test("a long statement holds the database's thread, not the service's: timers fire while it runs", async () => {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 5);
  const started = performance.now();
  try {
    await db.query('SELECT count(*) FROM generate_series(1, 4000000)');
  } finally {
    clearInterval(timer);
  }
  const ms = performance.now() - started;
  assert.ok(ms > 100, `the statement took ${ms.toFixed(0)} ms: too short to tell`);
  assert.ok(ticks >= (ms / 5) * 0.3, `${ticks} ticks of 5 ms in ${ms.toFixed(0)} ms`);
});

test('a transaction commits what it wrote, and rolls back when its function throws, passing the error on unchanged', async () => {
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO parents VALUES (1)');
  });
  const mine = new Error('the caller gave up');
  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.query('INSERT INTO parents VALUES (2)');
      throw mine;
    }),
    (error) => error === mine,
  );
  assert.deepEqual(await db.query('SELECT id FROM parents ORDER BY id'), [{ id: 1 }]);
});

test("a COMMIT that fails (a deferred foreign key) is the database's error, and nothing is kept", async () => {
  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.query('INSERT INTO children VALUES (99)');
    }),
    (error) => error instanceof DatabaseError && error.code === '23503' && error.constraint === 'children_parent_id_fkey',
  );
  assert.deepEqual(await db.query('SELECT * FROM children'), []);
});

test('a statement asked for while a transaction is open runs after it, and sees what it committed', async () => {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const writing = db.transaction(async (tx) => {
    await tx.query('INSERT INTO parents VALUES (3)');
    await held;
  });
  await new Promise((resolve) => setTimeout(resolve, 20)); // the transaction has begun on the database's thread
  const reading = db.query<{ n: number }>('SELECT count(*)::int AS n FROM parents WHERE id = 3');
  release();
  await writing;
  assert.deepEqual(await reading, [{ n: 1 }]);
});

test('checkNestedQueries (the tests): a query on the database from inside a transaction fails at once instead of waiting for it forever', async () => {
  const checked = await openPglite({ dataDir: 'memory', checkNestedQueries: true });
  try {
    await assert.rejects(
      checked.transaction(async () => {
        await checked.query('SELECT 1');
      }),
      /query on the database inside a transaction/,
    );
    // appendRows (the request log's COPY) too.
    await assert.rejects(
      checked.transaction(async () => {
        await checked.appendRows('no_such_table', [{ name: 'n', type: 'int4' }], [[1]]);
      }),
      /query on the database inside a transaction \(use tx\): COPY no_such_table/,
    );
    assert.deepEqual(await checked.query('SELECT 1 AS n'), [{ n: 1 }], 'and the database goes on');
  } finally {
    await checked.close();
  }
});

test("this instance's listeners hear a transaction's notification before its commit answers", async () => {
  const heard: string[] = [];
  await db.listen('people_changed', (payload) => heard.push(payload));
  await db.listen('people_changed', (payload) => heard.push(`again ${payload}`)); // a second listener: one LISTEN, both hear
  await db.transaction(async (tx) => {
    await tx.notify('people_changed', '42');
    assert.deepEqual(heard, [], 'not before the commit');
  });
  assert.deepEqual(heard, ['42', 'again 42']);
});

test('a closed database refuses statements', async () => {
  const closing = await openPglite({ dataDir: 'memory' });
  await closing.close();
  await assert.rejects(closing.query('SELECT 1'), /closed/);
});

test("if the database's thread ends, the statement waiting on it and every later one fail (GET /readyz says so)", async () => {
  const dying = await openPglite({ dataDir: 'memory' });
  const waiting = dying.query('SELECT count(*) FROM generate_series(1, 4000000)');
  await (Reflect.get(dying, 'worker') as { terminate(): Promise<number> }).terminate();
  await assert.rejects(waiting, /stopped/);
  await assert.rejects(dying.query('SELECT 1'), /stopped/);
  await dying.close();
});
