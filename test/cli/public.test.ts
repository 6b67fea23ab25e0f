// The public commands (`latchkey people|keys|webhooks …`, built on @latchkey/sdk) with an API key: tables for
// people, --json for scripts, the API's errors with their fields, and the exit codes scripts rely on.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createSecurityGroup } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import { cliFor, runCli } from './cli.ts';

const ctx = useTestService();

/** A fresh account whose API key may do everything the tests below need. */
async function client() {
  const account = await createAccount(ctx.service);
  await createSecurityGroup(ctx.service, account.rootLocationId, 'staff');
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['people:write', 'keys:write', 'webhooks:manage']);
  const cli = cliFor(ctx.service);
  const asClient = { LATCHKEY_API_KEY: token };
  return {
    run: (args: string[]) => cli.run(args, asClient),
    json: <T = Record<string, unknown>>(args: string[]) => cli.json<T>(args, asClient),
  };
}

describe('people', () => {
  test('list prints a table, and with --json the page envelope', async () => {
    const lk = await client();
    await lk.json(['people', 'create', 'Ada Lovelace', '--email', 'ada@example.com', '--phone', '+442079460000']);
    await lk.json(['people', 'create', 'Grace Hopper', '--email', 'grace@example.com', '--company', 'US Navy']);

    const table = await lk.run(['people', 'list']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^ID\s+NAME\s+EMAIL\s+PHONE\s+COMPANY\s+LOCATION$/);
    assert.match(lines[1] ?? '', /^[0-9a-f-]{36}\s+Ada Lovelace\s+ada@example\.com\s+\+442079460000\s+-\s+Acme \(\d+\)$/);
    assert.match(lines[2] ?? '', /^[0-9a-f-]{36}\s+Grace Hopper\s+grace@example\.com\s+-\s+US Navy\s+Acme \(\d+\)$/);
    assert.equal(lines.length, 3);

    const page = await lk.json<{ data: Array<{ name: string; phone: string | null }>; next_cursor: string | null }>(['people', 'list']);
    assert.deepEqual(page.data.map((p) => [p.name, p.phone]), [['Ada Lovelace', '+442079460000'], ['Grace Hopper', null]]);
    assert.equal(page.next_cursor, null);

    // --limit stops at a page boundary and hands over the cursor; --cursor continues exactly there.
    const first = await lk.run(['people', 'list', '--limit', '1']);
    const cursor = /--cursor (\S+) /.exec(first.stderr)?.[1];
    assert.ok(cursor, first.stderr);
    const rest = await lk.json<{ data: Array<{ name: string }> }>(['people', 'list', '--cursor', cursor]);
    assert.deepEqual(rest.data.map((p) => p.name), ['Grace Hopper']);
    const filtered = await lk.json<{ data: Array<{ name: string }> }>(['people', 'list', '--email', 'GRACE@example.com']);
    assert.deepEqual(filtered.data.map((p) => p.name), ['Grace Hopper']);
  });

  test('get, update (only the fields given, --clear empties one) and delete', async () => {
    const lk = await client();
    const person = await lk.json<{ id: string }>(['people', 'create', 'Dorothy Vaughan', '--email', 'dv@example.com', '--title', 'Lead']);
    const updated = await lk.json<{ name: string; email: string | null; title: string | null }>([
      'people', 'update', person.id, '--name', 'Dorothy J. Vaughan', '--clear', 'title',
    ]);
    assert.deepEqual([updated.name, updated.email, updated.title], ['Dorothy J. Vaughan', 'dv@example.com', null]);
    const shown = await lk.run(['people', 'get', person.id]);
    assert.match(shown.stdout, /^name\s+Dorothy J\. Vaughan$/m);
    assert.match(shown.stdout, /^No keys\.$/m);
    assert.deepEqual(await lk.json(['people', 'delete', person.id]), { id: person.id, deleted: true });
    assert.equal((await lk.run(['people', 'get', person.id])).code, 1);

    const nothing = await lk.run(['people', 'update', person.id]);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /nothing to change/);
    const noneCleared = await lk.run(['people', 'update', person.id, '--clear', '']);
    assert.equal(noneCleared.code, 2, 'an empty --clear changes nothing');
    assert.match(noneCleared.stderr, /nothing to change/);
  });
});

describe('errors and exit codes', () => {
  test("an API error prints the API's message and each detail's field, and exits 1", async () => {
    const lk = await client();
    const result = await lk.run(['people', 'create', 'Bad Phone', '--phone', '12345']);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    const lines = result.stderr.split('\n');
    assert.match(lines[0] ?? '', /^error: .+ \(validation_failed, HTTP 422\)$/);
    assert.match(lines[1] ?? '', /^ {2}phone: .*international.* \(invalid\)$/);
    assert.match(result.stderr, /^request id: \S+$/m);

    const person = await lk.json<{ id: string }>(['people', 'create', 'Katherine Johnson', '--phone', '+14155550111']);
    const json = await lk.run(['--json', 'keys', 'create', '--person', person.id, '--security-groups', 'staff,nope']);
    assert.equal(json.code, 1);
    const { error } = JSON.parse(json.stderr) as { error: { status: number; code: string; details?: Array<{ field: string; code: string }> } };
    assert.equal(error.status, 422);
    assert.equal(error.code, 'validation_failed');
    assert.deepEqual(error.details?.map((d) => [d.field, d.code]), [['security_groups[1]', 'unknown_security_group']]);
  });

  test('usage errors exit 2 and say what is wrong; --help exits 0 on every level', async () => {
    const lk = await client();
    const unknown = await lk.run(['people', 'list', '--bogus']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown option '--bogus'/);
    const missing = await lk.run(['keys', 'create', '--security-groups', 'staff']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required option '--person <id>' not specified/);
    const notANumber = await lk.run(['keys', 'get', 'abc']);
    assert.equal(notANumber.code, 2);
    assert.match(notANumber.stderr, /expected a positive integer/);
    assert.equal((await lk.run(['nonsense'])).code, 2);
    const noApiKey = await runCli(['people', 'list'], { LATCHKEY_URL: ctx.service.url });
    assert.equal(noApiKey.code, 2);
    assert.match(noApiKey.stderr, /no API key: set LATCHKEY_API_KEY, pass --api-key or save one with latchkey login/);

    for (const args of [['--help'], ['people', '--help'], ['people', 'list', '--help'], ['admin', 'gateways', 'create', '--help'], ['sandbox', 'advance', '--help']]) {
      const help = await runCli(args);
      assert.equal(help.code, 0, args.join(' '));
      assert.match(help.stdout, /^Usage: latchkey/m, args.join(' '));
    }
    const root = await runCli(['--help']);
    assert.match(root.stdout, /Exit codes: 0 ok, 1 the API refused the request/);
    assert.match((await runCli(['people', 'list', '--help'])).stdout, /--api-key <token>/, 'global flags are listed');
  });

  test('a service that cannot be reached exits 3', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const result = await runCli(['sandbox', 'clock', '--admin-token', 'x'.repeat(20)], { LATCHKEY_URL: `http://127.0.0.1:${port}` });
    assert.equal(result.code, 3);
    assert.match(result.stderr, new RegExp(`cannot reach http://127\\.0\\.0\\.1:${port}: ECONNREFUSED`));
  });
});

describe('keys, invitations and webhooks', () => {
  test('a phone key issued, its invitation resent and cancelled; a webhook URL refused on its field', async () => {
    const lk = await client();
    const person = await lk.json<{ id: string }>(['people', 'create', 'Sally Ride', '--phone', '+14155550100', '--email', 'sally@example.com']);
    const created = await lk.json<{ invitation_id: number; state: string }>(['keys', 'create', '--person', person.id, '--security-groups', 'staff', '--name', 'Phone']);
    const id = String(created.invitation_id);
    const resent = await lk.json<{ state: string; sent: { email_at: string | null } }>(['invitations', 'resend', id, '--channel', 'email']);
    assert.equal(resent.state, 'pending');
    assert.ok(resent.sent.email_at);
    assert.deepEqual(await lk.json(['invitations', 'cancel', id]), { id: created.invitation_id, cancelled: true });
    const again = await lk.run(['invitations', 'cancel', id]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /invitation_not_pending, HTTP 409/);
    assert.deepEqual((await lk.json<{ data: unknown[] }>(['keys', 'list', '--person', person.id])).data, []);

    // A card handed over by the operator, renamed and revoked by the client.
    const card = await lk.json<{ id: number }>(['admin', 'keys', 'create', 'Badge', '--person', person.id, '--type', 'card', '--security-groups', 'staff']);
    const renamed = await lk.json<{ name: string; state: string }>(['keys', 'update', String(card.id), '--name', 'Badge 2']);
    assert.deepEqual([renamed.name, renamed.state], ['Badge 2', 'handed_over']);
    const unchanged = await lk.run(['keys', 'update', String(card.id)]);
    assert.equal(unchanged.code, 2);
    assert.match(unchanged.stderr, /nothing to change/);
    const keys = await lk.run(['keys', 'list', '--person', person.id]);
    assert.match(keys.stdout, new RegExp(`^${card.id}\\s+Badge 2\\s+card\\s+handed_over\\s+${person.id}\\s+staff`, 'm'));
    assert.deepEqual(await lk.json(['keys', 'revoke', String(card.id)]), { id: card.id, revoked: true });
    assert.equal((await lk.run(['keys', 'get', String(card.id)])).code, 1);

    const refused = await lk.run(['webhooks', 'create', 'http://example.com/hook', '--events', 'person.created']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^ {2}url: .+ \(invalid\)$/m);
    assert.equal((await lk.run(['webhooks', 'list'])).stdout.trim(), 'No subscriptions.');
  });
});
