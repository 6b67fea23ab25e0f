// uuid_v7_at (migration 007): webhook deliveries made in SQL carry the same time-ordered ids as those
// made in TypeScript (src/platform/ids.ts).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { uuidv7 } from '../../src/platform/ids.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(() => database.close());

const layout = (id: string) => ({
  ms: parseInt(id.replace(/-/g, '').slice(0, 12), 16),
  version: id[14],
  variant: (parseInt(id[19] as string, 16) & 0b1100).toString(2),
});

test('uuid_v7_at puts the milliseconds, version 7 and the RFC variant where uuidv7 does, with random bits', async () => {
  const at = new Date('2026-11-22T10:11:12.345Z');
  const rows = await database.db.query<{ id: string }>('SELECT uuid_v7_at($1) AS id FROM generate_series(1, 50)', [at]);
  const fromSql = rows.map((r) => r.id);
  assert.equal(new Set(fromSql).size, 50, 'random bits differ');
  for (const id of fromSql) assert.deepEqual(layout(id), layout(uuidv7(at)));
  assert.equal(layout(fromSql[0] as string).ms, at.getTime());
  const later = await database.db.query<{ id: string }>('SELECT uuid_v7_at($1) AS id', [new Date(at.getTime() + 1)]);
  assert.ok((later[0]?.id as string) > (fromSql.sort().at(-1) as string), 'a later millisecond sorts after');
});
