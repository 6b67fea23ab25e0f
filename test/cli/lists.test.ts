// `latchkey admin accounts list` and `admin locations list` against a real Latchkey: tables, --json pages and
// pagination like the other lists; `admin locks list` names the public `locks list` (the operator API has none).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useTestService } from '../helpers/service.ts';
import { cliFor } from './cli.ts';

const ctx = useTestService();

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

describe('operator lists', () => {
  test('admin accounts list: a table, --json pages, --limit with a cursor hint, --all, --name', async () => {
    const cli = cliFor(ctx.service);
    const made: number[] = [];
    for (const name of ['Listed North', 'Listed South', 'Listed East']) {
      made.push((await cli.json<{ id: number }>(['admin', 'accounts', 'create', name])).id);
    }

    const shown = await cli.run(['admin', 'accounts', 'list', '--all']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^ID\s+NAME\s+ROOT LOCATION\s+RESELLER\s+SMS\s+PHONE KEYS\s+LOCKING SYSTEM$/m);
    assert.match(shown.stdout, new RegExp(`^${made[1]}\\s+Listed South\\s+Listed South \\(\\d+\\)\\s+false\\s+true\\s+unlimited\\s+-$`, 'm'));

    const first = await cli.run(['admin', 'accounts', 'list', '--name', 'listed', '--limit', '2', '--json']);
    assert.equal(first.code, 0, first.stderr);
    const page = JSON.parse(first.stdout) as Page<{ id: number; name: string }>;
    assert.deepEqual(page.data.map((a) => a.id), made.slice(0, 2));
    assert.ok(page.next_cursor);
    const rest = await cli.json<Page<{ id: number }>>(['admin', 'accounts', 'list', '--name', 'listed', '--cursor', page.next_cursor]);
    assert.deepEqual(rest.data.map((a) => a.id), made.slice(2));
    assert.equal(rest.next_cursor, null);

    const limited = await cli.run(['admin', 'accounts', 'list', '--name', 'LISTED', '--limit', '1']);
    assert.match(limited.stderr, /More accounts: --cursor \S+ \(or --all\)\./);
    const none = await cli.run(['admin', 'accounts', 'list', '--name', 'no such account']);
    assert.equal(none.stdout.trim(), 'No accounts.');
  });

  test('admin locations list: roots and departments, by account', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Located']);
    const department = await cli.json<{ id: number }>(['admin', 'locations', 'create', 'Annex', '--parent', String(account.root_location.id)]);
    const listed = await cli.json<Page<{ id: number; name: string; parent_id: number | null }>>(['admin', 'locations', 'list', '--account', String(account.id)]);
    assert.deepEqual(
      listed.data.map((l) => [l.id, l.name, l.parent_id]),
      [[account.root_location.id, 'Located', null], [department.id, 'Annex', account.root_location.id]],
    );
    const table = await cli.run(['admin', 'locations', 'list', '--account', String(account.id)]);
    assert.match(table.stdout, new RegExp(`^${department.id}\\s+Annex\\s+${account.root_location.id}\\s+${account.id}\\s+UTC$`, 'm'));
  });

  test('admin locks list points to latchkey locks list, which lists them with an API key', async () => {
    const cli = cliFor(ctx.service);
    const refused = await cli.run(['admin', 'locks', 'list']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /operator API has no list of locks: run `latchkey locks list` with an API key/);

    const account = await cli.json<{ root_location: { id: number } }>(['admin', 'accounts', 'create', 'Locked']);
    const location = String(account.root_location.id);
    await cli.json(['admin', 'locks', 'create', 'Side door', '--location', location, '--place', 'Yard']);
    const created = await cli.run(['admin', 'api-keys', 'create', 'Reader', '--location', location, '--scopes', 'catalog:read']);
    const token = /^token\s+(lk_\S+)$/m.exec(created.stdout)?.[1] as string;
    const locks = await cli.run(['locks', 'list'], { LATCHKEY_API_KEY: token });
    assert.equal(locks.code, 0, locks.stderr);
    assert.match(locks.stdout, /^ID\s+NAME\s+PLACE\s+ONLINE/m);
    assert.match(locks.stdout, /Side door\s+Yard/);
  });
});
