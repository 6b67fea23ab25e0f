// `latchkey admin accounts list` and `admin locations list` against a real Latchkey: tables, --json pages and
// pagination like the other lists; `admin locks list` through the operator API's list of locks.
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
    const unsaid = await cli.run(['admin', 'locations', 'list']);
    assert.equal(unsaid.code, 2, 'the operator API lists one account\'s locations: --account is required');
    assert.match(unsaid.stderr, /--account/);
  });

  test('admin locks list: every account\'s locks, or one account\'s or a location\'s and below', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Locked']);
    const other = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Elsewhere']);
    const location = String(account.root_location.id);
    const annex = await cli.json<{ id: number }>(['admin', 'locations', 'create', 'Annex', '--parent', location]);
    const side = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Side door', '--location', location, '--place', 'Yard']);
    const back = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Back door', '--location', String(annex.id)]);
    const foreign = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Their door', '--location', String(other.root_location.id)]);

    const table = await cli.run(['admin', 'locks', 'list', '--account', String(account.id)]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+NAME\s+PLACE\s+LOCATION\s+ONLINE\s+GATEWAY\s+GROUPS$/m);
    assert.match(table.stdout, /Side door\s+Yard\s+Locked \(\d+\)\s+not remote/);
    const ofAccount = await cli.json<Page<{ id: number }>>(['admin', 'locks', 'list', '--account', String(account.id)]);
    assert.deepEqual(ofAccount.data.map((l) => l.id), [side.id, back.id]);
    const ofAnnex = await cli.json<Page<{ id: number }>>(['admin', 'locks', 'list', '--location', String(annex.id)]);
    assert.deepEqual(ofAnnex.data.map((l) => l.id), [back.id]);
    const every = await cli.json<Page<{ id: number }>>(['admin', 'locks', 'list', '--all']);
    assert.ok([side.id, back.id, foreign.id].every((id) => every.data.some((l) => l.id === id)));
    const missing = await cli.run(['admin', 'locks', 'list', '--account', '999999']);
    assert.notEqual(missing.code, 0);
  });
});
