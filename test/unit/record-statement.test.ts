// The access log's write is prepared under one name per guard kind and built once: a second guard under a name
// already built with other SQL is refused, never run as the first one's statement with its own parameters.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { insertEntries } from '../../src/modules/events/store.ts';
import type { PreparedSql, Queryable } from '../../src/platform/db/index.ts';

/** Records the statements it is given and answers no row. */
function recording(): Queryable & { seen: PreparedSql[] } {
  const seen: PreparedSql[] = [];
  return {
    seen,
    query: async <T extends object>(sql: string | PreparedSql) => {
      if (typeof sql !== 'string') seen.push(sql);
      return [] as T[];
    },
  };
}

const guard = (sql: string) => ({ name: 'recordStatementTest', sql: (param: (n: number) => string) => `${sql} ${param(1)}`, params: [1] });

test('one guard kind builds one statement, reused; another SQL under its name is refused', async () => {
  const db = recording();
  await insertEntries(db, [], new Date(0), guard('SELECT 1 WHERE 1 ='));
  await insertEntries(db, [], new Date(0), guard('SELECT 1 WHERE 1 ='));
  assert.equal(db.seen.length, 2);
  assert.equal(db.seen[0], db.seen[1], 'built once');
  assert.match(db.seen[0]?.text ?? '', /guard AS \(SELECT 1 WHERE 1 = \$12\)/);
  await assert.rejects(insertEntries(db, [], new Date(0), guard('SELECT 2 WHERE 2 =')), /two guards share this name/);
  assert.equal(db.seen.length, 2, 'nothing run');
});
