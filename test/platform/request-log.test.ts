// The request log: method, path, status, duration and IP of each public request; no bodies, query
// strings or tokens; purged after 90 days on the service clock.
import assert from 'node:assert/strict';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { startService, useTestService } from '../helpers/service.ts';

interface LogRow {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  ip: string;
  api_key_id: number | null;
  at: Date;
}

const ctx = useTestService(undefined, {}, { transport: 'inject' });


async function logRows(ip: string, expected: number): Promise<LogRow[]> {
  for (let i = 0; i < 50; i++) {
    const rows = await ctx.database.db.query<LogRow>('SELECT * FROM request_log WHERE ip = $1 ORDER BY at, status', [ip]);
    if (rows.length >= expected) return rows;
    await sleep(100);
  }
  throw new Error(`request log rows for ${ip} did not appear`);
}

test('each public request is logged with method, path, status, duration and IP, never the query or token', async () => {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
  const ip = '10.9.8.7';
  await ctx.service.request('GET', '/v1/locks?limit=5&email=secret%40example.com', { token: key.token, ip });
  await ctx.service.request('GET', '/v1/locks/999999', { token: key.token, ip });
  await ctx.service.request('GET', '/v1/locks', { ip });
  const rows = await logRows(ip, 3);
  assert.deepEqual(
    rows.map((r) => [r.method, r.path, r.status, r.api_key_id]).sort((a, b) => Number(a[2]) - Number(b[2])),
    [
      ['GET', '/v1/locks', 200, key.id],
      ['GET', '/v1/locks', 401, null],
      ['GET', '/v1/locks/999999', 404, key.id],
    ],
  );
  for (const row of rows) {
    assert.ok(row.duration_ms >= 0);
    assert.ok(!JSON.stringify(row).includes('secret'));
    assert.ok(!JSON.stringify(row).includes(key.token));
  }
});

test('a row keeps the service clock\'s time and the path exactly as it came, quotes and backslashes included', async () => {
  // Over a socket, not inject (which would percent-encode the path): the HTTP parser lets `"` and `\\` through.
  const service = await startService(ctx.database.db, {}, undefined, undefined, 'socket');
  try {
    const ip = '10.9.8.6';
    const path = '/v1/locks/a"b\\c';
    const before = Date.parse((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(service.url).port), '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString('latin1')));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${ip}\r\nConnection: close\r\n\r\n`);
    });
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
    const [row] = await logRows(ip, 1);
    assert.ok(row);
    assert.deepEqual([row.path, row.status], [path, status]);
    assert.ok(row.at.getTime() >= before && row.at.getTime() <= before + 60_000, `at ${row.at.toISOString()} is the service clock's`);
  } finally {
    await service.close();
  }
});

test('rows older than 90 days on the service clock are purged', async () => {
  const ip = '10.1.2.3';
  await ctx.service.request('GET', '/v1/locks', { ip });
  await logRows(ip, 1);
  await advanceClock(ctx.service, 89 * 86_400);
  assert.equal((await ctx.database.db.query('SELECT at FROM request_log WHERE ip = $1', [ip])).length, 1, 'kept at 89 days');
  await advanceClock(ctx.service, 2 * 86_400);
  assert.equal((await ctx.database.db.query('SELECT at FROM request_log WHERE ip = $1', [ip])).length, 0, 'gone after 90 days');
});
