// A setup link's token is never logged, whatever spelling of its path a client sends: `GET /%61ctivate/<token>`
// reaches the activation page as `/activate/<token>` does, and neither the log lines nor the request log hold
// the token (README: Security, "Logged").
import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { outboxFor } from '../helpers/keys.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { safePath } from '../../src/platform/http.ts';

const lines: string[] = [];
let database: TestDatabase;
let service: TestService;

before(async () => {
  database = await createTestDatabase();
  service = await startService(database.db, { LOG_LEVEL: 'trace' }, undefined, { level: 'trace', stream: { write: (line: string) => lines.push(line) } });
});

after(async () => {
  await service?.close();
  await database?.close();
});

/** A request with its path sent exactly as written (fetch would resolve `%2E%2E` and the like). */
function rawGet(path: string): Promise<number> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'GET', headers: { 'x-forwarded-for': '10.77.0.1' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

test('safePath masks the segment after any spelling of `activate`, and leaves every other path as it came', () => {
  const t = 'IpowODeELZ-nmqPjuZvCFGNYn0xRbAnAyz9Y0JV-7zs';
  for (const path of [
    `/activate/${t}`,
    `/activate/${t}?x=1`,
    `/activate/${t}/`,
    `/%61ctivate/${t}`,
    `/%61%63%74%69%76%61%74%65/${t}`,
    `/%2561ctivate/${t}`,
    `/%252561ctivate/${t}`,
    `/ACTIVATE/${t}`,
    `/Activate/${t}`,
    `//activate//${t}`,
    `/activate%2F${t}`,
    `/activate%2f${t}`,
    `/%2Factivate/${t}`,
    `/v1/%2E%2E/activate/${t}`,
    `/v1/activate/${t}`,
  ]) {
    const safe = safePath(path);
    assert.ok(!safe.includes(t), `${path} -> ${safe}`);
    assert.match(safe, /\/activate\/\[token\]\/?$/i, `${path} -> ${safe}`);
  }
  assert.equal(safePath(`/activate/${t}/passkey/options`), '/activate/[token]/passkey/options');
  assert.equal(safePath(`/%61ctivate/${t}/passkey`), '/activate/[token]/passkey');
  for (const path of ['/v1/locks', '/v1/locks/%ff', '/v1/people/a%20b', '/v1/locks/a"b\\c', '/activate', '/activated/x', '/v1/inactivate/x']) {
    assert.equal(safePath(`${path}?email=a@b`), path);
  }
  // Escapes that are not printable ASCII stay escaped, so nothing logged holds a NUL or a control character.
  assert.equal(safePath('/%00activate/x/%00'), '/%00activate/x/%00');
  assert.equal(safePath('/activate/x/%00/%0a'), '/activate/[token]/%00/%0a');
});

test('GET /%61ctivate/<token> reaches the activation page, and no log line nor request-log row holds the token', async () => {
  const { rootLocationId } = await createAccount(service);
  await createSecurityGroup(service, rootLocationId, 'staff');
  await createLock(service, rootLocationId, { name: 'Front door', security_groups: ['staff'] });
  const { token } = await createApiKey(service, rootLocationId, ['people:write', 'keys:write']);
  const email = `log.${process.pid}@example.com`;
  const person = await service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Ann', email } });
  assert.equal(person.status, 201, person.text);
  const issued = await service.request('POST', '/v1/keys', { token, body: { person_id: person.body.id, security_groups: ['staff'], channel: 'email' } });
  assert.equal(issued.status, 202, issued.text);
  const [mail] = await outboxFor(service, email);
  const linkToken = new URL(mail?.link as string).pathname.split('/').pop() as string;
  assert.equal(linkToken.length, 43);

  const before = lines.length;
  // Spellings the router takes to the activation page, and some it does not (their paths are logged all the same).
  for (const [path, status] of [
    [`/activate/${linkToken}`, 200],
    [`/%61ctivate/${linkToken}`, 200],
    [`/%61%63tivate/${linkToken}/`, 200],
    [`/ACTIVATE/${linkToken}`, 404],
    [`//activate/${linkToken}`, 404],
    [`/activate%2F${linkToken}`, 404],
    [`/%2561ctivate/${linkToken}`, 404],
    [`/v1/%2E%2E/activate/${linkToken}`, 404],
    [`/v1/%61ctivate/${linkToken}`, 404],
  ] as const) {
    assert.equal(await rawGet(path), status, path);
  }
  const logged = lines.slice(before);
  for (const line of logged) assert.ok(!line.includes(linkToken), line);
  const withPaths = logged.filter((line) => line.includes('"msg":"incoming request"') && /activate\/\[token\]/i.test(line));
  assert.equal(withPaths.length, 9, "each request's line, its path masked");
  let requestLog: Array<{ path: string }> = [];
  for (let i = 0; i < 50 && requestLog.length < 2; i++) {
    await sleep(100);
    requestLog = await database.db.query<{ path: string }>(`SELECT path FROM request_log WHERE ip = '10.77.0.1'`);
  }
  assert.deepEqual(requestLog.map((row) => row.path).sort(), ['/v1/../activate/[token]', '/v1/activate/[token]']);
  assert.ok(!JSON.stringify(await database.db.query('SELECT * FROM request_log')).includes(linkToken));
});
