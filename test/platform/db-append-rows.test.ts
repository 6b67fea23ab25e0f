// Database.appendRows, the request log's bulk write (a binary COPY embedded, an INSERT from JSON on PostgreSQL): every
// value arrives as it was, whatever characters or numbers it holds, and a batch is written whole or not at all.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { encodeCopyRows, insertFromJson, type AppendValue } from '../../src/platform/db/append-rows.ts';
import { isDatabaseUnavailable } from '../../src/platform/db/errors.ts';
import { REQUEST_LOG_COLUMNS } from '../../src/platform/request-log.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

let database: TestDatabase;
before(async () => {
  database = await createTestDatabase();
});
after(async () => {
  await database?.close();
});

/** The request log's columns hold every type appendRows sends. */
const COLUMNS = REQUEST_LOG_COLUMNS;

interface Row {
  at: Date;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  api_key_id: number | null;
}

const rowsOf = (ip: string) =>
  database.db.query<Row>('SELECT at, method, path, status, duration_ms, api_key_id FROM request_log WHERE ip = $1 ORDER BY status', [ip]);

test('text with tabs, newlines, backslashes, \\N, quotes and any Unicode arrives as it was', async () => {
  const ip = '10.77.0.1';
  const awkward = ['/v1/a\tb', '/v1/a\nb\r', '/v1/a\\b', '\\N', '\\.', '/v1/"quoted"', '/v1/ünïcödé ✓ 𝄞', ''];
  await database.db.appendRows(
    'request_log',
    COLUMNS,
    awkward.map((path, i) => [Date.UTC(2026, 10, 28), 'GET', path, i, 0.25, ip, i % 2 === 0 ? null : i]),
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
});

test('numbers and times arrive exact: int4 and int8 at their ends, float4, times before 2000 and after, to the millisecond', async () => {
  const ip = '10.77.0.3';
  const times = ['1970-01-01T00:00:00.000Z', '1999-12-31T23:59:59.999Z', '2000-01-01T00:00:00.000Z', '2026-11-28T12:34:56.789Z', '2199-06-30T01:02:03.004Z'];
  const int8s = [Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 32, -1, 0];
  const statuses = [-(2 ** 31), -1, 0, 2 ** 31 - 1, 2 ** 16];
  await database.db.appendRows(
    'request_log',
    COLUMNS,
    times.map((at, i) => [Date.parse(at), 'GET', '/v1/n', statuses[i] as number, 1.5 + i, ip, int8s[i] as number]),
  );
  const rows = await rowsOf(ip);
  const byStatus = new Map(statuses.map((status, i) => [status, i]));
  assert.equal(rows.length, times.length);
  for (const row of rows) {
    const i = byStatus.get(row.status) as number;
    assert.equal(row.at.toISOString(), times[i]);
    assert.equal(row.api_key_id, int8s[i]);
    assert.equal(row.duration_ms, 1.5 + i);
  }
});

test('a batch the database refuses for one value is written not at all, the error is not an outage, and the next is written', async () => {
  const ip = '10.77.0.2';
  const at = Date.UTC(2026, 10, 28);
  // PostgreSQL's text holds no NUL character: the server refuses the second row.
  const refused: AppendValue[][] = [
    [at, 'GET', '/v1/ok', 200, 1, ip, null],
    [at, 'GET', '/v1/nul\u0000', 201, 1, ip, null],
  ];
  await assert.rejects(database.db.appendRows('request_log', COLUMNS, refused), (error) => !isDatabaseUnavailable(error));
  assert.deepEqual(await rowsOf(ip), []);
  // The database (on PostgreSQL, the pool's connection) serves the next batch.
  await database.db.appendRows('request_log', COLUMNS, [[at, 'GET', '/v1/next', 202, 1, ip, 7]]);
  assert.deepEqual(
    (await rowsOf(ip)).map((r) => [r.path, r.api_key_id]),
    [['/v1/next', 7]],
  );
});

test('a value of the wrong kind for its column is refused before anything is sent, in either encoding', () => {
  const row = (status: AppendValue, at: AppendValue = 0, key: AppendValue = null): AppendValue[] => [at, 'GET', '/', status, 1, '::1', key];
  for (const wrong of [row('200'), row(2 ** 31), row(1.5), row(200, Number.NaN), row(200, 'today'), row(200, 0, 2 ** 53), row(200, 0, 'seven')]) {
    assert.throws(() => encodeCopyRows(COLUMNS, [wrong]), /appended value for/);
    assert.throws(() => insertFromJson('request_log', COLUMNS, [wrong]), /appended value for/);
  }
  assert.throws(() => encodeCopyRows(COLUMNS, [[0, 'GET']]), /appended row of 2 values for 7 columns/);
  assert.throws(() => insertFromJson('request_log', COLUMNS, [[0, 'GET']]), /appended row of 2 values for 7 columns/);
  assert.ok(encodeCopyRows(COLUMNS, [row(200)]).length > 0);
});
