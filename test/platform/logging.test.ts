// No log line holds a request body, a query string or a header value: not the request logs, not the 500
// handler's error, not the errors of the router or of Node's HTTP parser (whose rawPacket is the request's
// raw bytes). The service logs at trace level into memory here and every line is searched.
import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { buildApp, type Latchkey } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { sqlText, type Database } from '../../src/platform/db/database.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

const ADMIN = 'test-admin-token-0123456789';
// Lower case: the e-mail filter reaches the database folded (emailKey), and the fault below picks it by this text.
const MARK = 'zq7secretmark';

const lines: string[] = [];
let database: TestDatabase;
let latchkey: Latchkey;
let base: string;
let port: number;

before(async () => {
  database = await createTestDatabase();
  // A database that fails a query the way a driver error does, with the statement's parameters on the error.
  // A proxy, so that everything else (its LISTEN connection among it) stays the real database's and closes.
  const real = database.db;
  const query: Database['query'] = async (sql, params) => {
    if ((params ?? []).some((p) => typeof p === 'string' && p.includes(`${MARK}fail`))) {
      throw Object.assign(new Error('driver failure'), { code: 'XX000', params, query: sqlText(sql) });
    }
    return real.query(sql, params);
  };
  const failing = new Proxy(real, {
    get: (target, property) => {
      if (property === 'query') return query;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const config = loadConfig({ ADMIN_TOKEN: ADMIN, SANDBOX: 'true', PORT: '0', HOST: '127.0.0.1', MQTT_PORT: '0', LOG_LEVEL: 'trace' });
  latchkey = await buildApp({ config, db: failing, logger: { stream } });
  await latchkey.app.listen({ port: 0, host: '127.0.0.1' });
  port = (latchkey.app.server.address() as net.AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});

after(async () => {
  await latchkey?.close();
  await database?.close();
});

async function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<number> {
  const res = await fetch(base + path, { method, headers, body });
  await res.text();
  return res.status;
}

function rawRequest(text: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('data', () => undefined);
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
    socket.write(text);
  });
}

/** A log line as text, with every serialised Buffer ({type: 'Buffer', data: [...]}) decoded into it. */
function searchable(line: string): string {
  const decoded: string[] = [line];
  JSON.parse(line, (_key, value: unknown) => {
    const buffer = value as { type?: unknown; data?: unknown };
    if (buffer && buffer.type === 'Buffer' && Array.isArray(buffer.data)) decoded.push(Buffer.from(buffer.data as number[]).toString('latin1'));
    return value;
  });
  return decoded.join('\n');
}

test('no log line holds a body, a query string or a header value, whatever the request and its answer', async () => {
  const admin = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const account = (await (await fetch(`${base}/admin/v1/accounts`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'Acme' }) })).json()) as { root_location: { id: number } };
  const key = (await (
    await fetch(`${base}/admin/v1/api_keys`, { method: 'POST', headers: admin, body: JSON.stringify({ location_id: account.root_location.id, name: 'k', scopes: ['people:write', 'catalog:read'] }) })
  ).json()) as { token: string };
  const auth = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' };

  const statuses = [
    await call('GET', `/v1/people?email=${MARK}q%40example.com`, auth),
    await call('POST', '/v1/people', auth, JSON.stringify({ name: `${MARK}body` })),
    await call('POST', '/v1/people', auth, JSON.stringify({ name: 'x', bogus: `${MARK}unknown` })),
    await call('POST', '/v1/people', auth, `{"name": "${MARK}json`),
    await call('POST', '/v1/people', auth, JSON.stringify({ name: `${MARK}nul\u0000` })),
    await call('GET', `/v1/locks/%ff?q=${MARK}badurl`, auth),
    await call('GET', `/v1/locks/${'1'.repeat(300)}?q=${MARK}long`, auth),
    await call('GET', `/v1/people?email=${MARK}fail%40example.com`, auth),
    await call('GET', `/v1/nowhere?q=${MARK}404`, {}),
  ];
  assert.deepEqual(statuses, [200, 201, 422, 400, 422, 400, 400, 500, 404]);
  await rawRequest(`GET /v1/locks HTTP/1.1\r\nHost: x\r\nX-Note: ${MARK}header\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
  await rawRequest(`POST /v1/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key.token}\r\nContent-Length: zz\r\n\r\n{"name":"${MARK}raw"}`);
  await new Promise((resolve) => setTimeout(resolve, 100));

  assert.ok(lines.length > 10, 'the service logged');
  const leaks = lines.filter((line) => searchable(line).includes(MARK) || searchable(line).includes(key.token));
  assert.deepEqual(leaks, []);

  // The 500 is still logged usefully: the error, the request id, the route; and the parser errors by code.
  const failure = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry.msg === 'unexpected error');
  assert.ok(failure, 'the 500 is logged');
  assert.equal((failure.err as { message: string }).message, 'driver failure');
  assert.equal(failure.route, '/v1/people');
  assert.ok(failure.requestId);
  assert.ok(lines.some((line) => line.includes('"code":"HPE_HEADER_OVERFLOW"')));
});
