// Database.copyIn, the request log's bulk write (COPY on both engines): every value arrives as it was, whatever
// characters it holds, and a batch is written whole or not at all.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { copyValue } from '../../src/platform/db/database.ts';
import { isDatabaseUnavailable } from '../../src/platform/db/errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database?.close();
});

const COLUMNS = ['at', 'method', 'path', 'status', 'duration_ms', 'ip', 'api_key_id'];

function line(values: Array<string | number | null>): string {
  return `${values.map(copyValue).join('\t')}\n`;
}

interface Row {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  api_key_id: number | null;
}

const rowsOf = (ip: string) =>
  database.db.query<Row>('SELECT method, path, status, duration_ms, api_key_id FROM request_log WHERE ip = $1 ORDER BY status', [ip]);

test('values with tabs, newlines, carriage returns, backslashes and a literal \\N arrive as they were', async () => {
  const ip = '10.77.0.1';
  const awkward = ['/v1/a\tb', '/v1/a\nb', '/v1/a\rb', '/v1/a\\b', '\\N', '/v1/\\\\t', '/v1/ünïcödé ✓', ''];
  await database.db.copyIn(
    'request_log',
    COLUMNS,
    awkward.map((path, i) => line(['2026-11-28T12:00:00.000Z', 'GET', path, 200 + i, 0.25, ip, i % 2 === 0 ? null : i])).join(''),
  );
  const rows = await rowsOf(ip);
  assert.deepEqual(
    rows.map((r) => r.path),
    awkward,
  );
  assert.deepEqual(
    rows.map((r) => r.api_key_id),
    awkward.map((_, i) => (i % 2 === 0 ? null : i)),
  );
  assert.equal(rows[0]?.duration_ms, 0.25);
});

test('a batch with one value the column refuses is written not at all, and the error is not an outage', async () => {
  const ip = '10.77.0.2';
  const batch = line(['2026-11-28T12:00:00.000Z', 'GET', '/v1/ok', 200, 1, ip, null]) + line(['2026-11-28T12:00:00.000Z', 'GET', '/v1/bad', 'two hundred', 1, ip, null]);
  await assert.rejects(database.db.copyIn('request_log', COLUMNS, batch), (error) => !isDatabaseUnavailable(error));
  assert.deepEqual(await rowsOf(ip), []);
  // The database (on PostgreSQL, the pool's connection) serves the next batch.
  await database.db.copyIn('request_log', COLUMNS, line(['2026-11-28T12:00:00.000Z', 'GET', '/v1/next', 201, 1, ip, 7]));
  assert.deepEqual(
    (await rowsOf(ip)).map((r) => [r.path, r.api_key_id]),
    [['/v1/next', 7]],
  );
});
