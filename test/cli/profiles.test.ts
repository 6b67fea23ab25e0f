// Saved logins: `latchkey login` writes a profile (URL and secrets) to $XDG_CONFIG_HOME/latchkey/config.json,
// mode 0600; commands use it when no flag or environment variable says otherwise; `profile list` never
// prints a secret; a file other users can read is refused.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';
import { runCli } from './cli.ts';

const ctx = useTestService();

/** A fresh config home, and a runner with it and no other setting (no LATCHKEY_URL, no token). */
function home() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'latchkey-profiles-'));
  const file = path.join(dir, 'latchkey', 'config.json');
  const run = (args: string[], env: Record<string, string> = {}) => runCli(args, { XDG_CONFIG_HOME: dir, ...env });
  return { dir, file, run };
}

/** A URL where nothing listens. */
const NOWHERE = 'http://127.0.0.1:9';

/** Another service: answers every call with an empty page and records the Authorization header of each. */
async function startRecorder() {
  const authorizations: string[] = [];
  const server = createServer((request, response) => {
    authorizations.push(request.headers.authorization ?? '(none)');
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[],"next_cursor":null}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('profiles', () => {
  test('login saves the URL and token 0600; commands use them; profile list shows names and URLs, never secrets', async () => {
    const { file, run } = home();
    const login = await run(['login', '--url', ctx.service.url, '--admin-token', ADMIN_TOKEN]);
    assert.equal(login.code, 0, login.stderr);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(path.dirname(file)).mode & 0o777, 0o700);
    assert.ok(!login.stdout.includes(ADMIN_TOKEN) && !login.stderr.includes(ADMIN_TOKEN), 'login does not echo the token');
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { default_profile: string; profiles: Record<string, { url: string; admin_token: string }> };
    assert.deepEqual(saved, { profiles: { default: { url: ctx.service.url, admin_token: ADMIN_TOKEN } }, default_profile: 'default' });

    const created = await run(['--json', 'admin', 'accounts', 'create', 'Profiled']);
    assert.equal(created.code, 0, created.stderr);
    const listed = await run(['admin', 'accounts', 'list', '--all']);
    assert.match(listed.stdout, /Profiled/);

    const apiKey = 'lk_test_not_a_real_key_0123456789';
    assert.equal((await run(['login', '--profile', 'reader', '--url', ctx.service.url, '--api-key', apiKey])).code, 0);
    for (const args of [['profile', 'list'], ['--json', 'profile', 'list']]) {
      const shown = await run(args);
      assert.equal(shown.code, 0, shown.stderr);
      const output = shown.stdout + shown.stderr;
      assert.ok(!output.includes(ADMIN_TOKEN) && !output.includes(apiKey), `${args.join(' ')} printed a secret:\n${output}`);
      assert.ok(output.includes(ctx.service.url));
    }
    const table = (await run(['profile', 'list'])).stdout;
    assert.match(table, /^\*\s+default\s+\S+\s+operator token$/m);
    assert.match(table, /^\s+reader\s+\S+\s+API key$/m);
    const json = JSON.parse((await run(['--json', 'profile', 'list'])).stdout) as { data: unknown[] };
    assert.deepEqual(json.data, [
      { name: 'default', url: ctx.service.url, has_api_key: false, has_admin_token: true, default: true },
      { name: 'reader', url: ctx.service.url, has_api_key: true, has_admin_token: false, default: false },
    ]);

    // With the default profile logged out, "default" is the one used, and marked so.
    assert.equal((await run(['profile', 'use', 'reader'])).code, 0);
    assert.equal((await run(['logout', '--profile', 'reader'])).code, 0);
    assert.match((await run(['profile', 'list'])).stdout, /^\*\s+default\s/m);
    assert.equal((await run(['login', '--profile', 'reader', '--url', ctx.service.url, '--api-key', apiKey])).code, 0);

    const logout = await run(['logout', '--profile', 'reader']);
    assert.equal(logout.code, 0, logout.stderr);
    assert.ok(!readFileSync(file, 'utf8').includes(apiKey), 'logout removes the secret from the file');
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  test('--profile and LATCHKEY_PROFILE select a profile; a missing one is a usage error', async () => {
    const { run } = home();
    assert.equal((await run(['login', '--profile', 'away', '--url', NOWHERE, '--admin-token', 'x'.repeat(20), '--no-verify'])).code, 0);
    assert.equal((await run(['login', '--profile', 'here', '--url', ctx.service.url, '--admin-token', ADMIN_TOKEN])).code, 0);

    // The first login made "away" the default.
    const byDefault = await run(['admin', 'accounts', 'list']);
    assert.equal(byDefault.code, 3);
    assert.match(byDefault.stderr, /cannot reach http:\/\/127\.0\.0\.1:9/);
    assert.equal((await run(['--profile', 'here', 'admin', 'accounts', 'list'])).code, 0);
    assert.equal((await run(['admin', 'accounts', 'list'], { LATCHKEY_PROFILE: 'here' })).code, 0);
    // The flag wins over the environment variable.
    assert.equal((await run(['--profile', 'away', 'admin', 'accounts', 'list'], { LATCHKEY_PROFILE: 'here' })).code, 3);

    const missing = await run(['--profile', 'nope', 'admin', 'accounts', 'list']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no profile "nope" .*\(profiles: away, here\)/);

    assert.equal((await run(['profile', 'use', 'here'])).code, 0);
    assert.equal((await run(['admin', 'accounts', 'list'])).code, 0);
  });

  test('flags and environment variables win over the profile', async () => {
    const { run } = home();
    assert.equal((await run(['login', '--url', NOWHERE, '--admin-token', 'wrong-token-0123456789', '--no-verify'])).code, 0);

    // The profile's URL and token alone: nothing listens there.
    assert.equal((await run(['admin', 'accounts', 'list'])).code, 3);
    // --url wins; the profile's token is another service's and is not sent there: a usage error saying so.
    const elsewhere = await run(['--url', ctx.service.url, 'admin', 'accounts', 'list']);
    assert.equal(elsewhere.code, 2, elsewhere.stderr);
    assert.match(elsewhere.stderr, /belong to another service/);
    // --admin-token wins, and so do LATCHKEY_URL and LATCHKEY_ADMIN_TOKEN.
    assert.equal((await run(['--url', ctx.service.url, '--admin-token', ADMIN_TOKEN, 'admin', 'accounts', 'list'])).code, 0);
    assert.equal((await run(['admin', 'accounts', 'list'], { LATCHKEY_URL: ctx.service.url, LATCHKEY_ADMIN_TOKEN: ADMIN_TOKEN })).code, 0);
  });

  test("a profile's secrets go to its own service only: another URL gets none of them, only what the call gives", async () => {
    const { run } = home();
    const savedKey = 'lk_saved_for_the_first_service_0123456789';
    assert.equal((await run(['login', '--url', ctx.service.url, '--api-key', savedKey, '--admin-token', ADMIN_TOKEN])).code, 0);
    const other = await startRecorder();
    try {
      const calls: Array<[string[], Record<string, string>]> = [
        [['people', 'list'], { LATCHKEY_URL: other.url }],
        [['--url', other.url, 'admin', 'accounts', 'list'], {}],
        [['--url', `${other.url}/v1`, 'webhooks', 'listen', '--print-secret'], {}],
        // Another host name is another origin, even for the same address.
        [['--url', ctx.service.url.replace('127.0.0.1', 'localhost'), 'locks', 'list'], {}],
      ];
      for (const [args, env] of calls) {
        const refused = await run(args, env);
        assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
        assert.ok(refused.stderr.includes(`the saved credentials (profile "default") belong to another service, ${ctx.service.url}, and are sent only there`), refused.stderr);
        assert.ok(!refused.stderr.includes(savedKey) && !refused.stderr.includes(ADMIN_TOKEN));
      }
      assert.deepEqual(other.authorizations, [], 'nothing was sent to the other service');

      // A secret given on the call goes where the call says.
      const givenKey = 'lk_given_for_the_other_service_0123456789';
      const given = await run(['people', 'list'], { LATCHKEY_URL: other.url, LATCHKEY_API_KEY: givenKey });
      assert.equal(given.code, 0, given.stderr);
      assert.deepEqual(other.authorizations, [`Bearer ${givenKey}`]);

      // The profile's own service, however its URL is spelled, gets the saved secrets.
      for (const url of [`${ctx.service.url}/`, `${ctx.service.url}/v1/`, ctx.service.url.replace('http://', 'HTTP://')]) {
        const own = await run(['--url', url, 'admin', 'accounts', 'list']);
        assert.equal(own.code, 0, `${url}: ${own.stderr}`);
      }
    } finally {
      await other.close();
    }
  });

  test('a config file other users can read is refused, with how to fix it; login checks the token first', async () => {
    const { file, run } = home();
    assert.equal((await run(['login', '--url', ctx.service.url, '--admin-token', ADMIN_TOKEN])).code, 0);
    chmodSync(file, 0o644);
    const refused = await run(['admin', 'accounts', 'list']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /other users can access it \(mode 0644\); not using it\. Fix: chmod 600 /);
    assert.ok(!refused.stderr.includes(ADMIN_TOKEN));
    chmodSync(file, 0o600);
    assert.equal((await run(['admin', 'accounts', 'list'])).code, 0);

    // A token the service refuses is not saved.
    const bad = await run(['login', '--profile', 'bad', '--url', ctx.service.url, '--admin-token', 'not-the-token-0123456789']);
    assert.equal(bad.code, 1);
    assert.ok(!readFileSync(file, 'utf8').includes('not-the-token'));
  });
});
