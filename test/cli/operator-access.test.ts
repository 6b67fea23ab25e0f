// `latchkey admin …` beyond the first provisioning (test/cli/operator.test.ts): weekly windows of security groups,
// a card's credential, changes to locks, locations and security groups, the lists by account, people and users,
// and the overview, each read back through the operator API to show the CLI changed what it says it changed.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useTestService } from '../helpers/service.ts';
import { cliFor } from './cli.ts';

const ctx = useTestService();

interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
type Windows = Array<{ days: string[]; start: string; end: string }> | null;

async function account(name: string) {
  const cli = cliFor(ctx.service);
  const made = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', name]);
  return { cli, id: String(made.id), location: String(made.root_location.id) };
}

describe('operator changes through the CLI', () => {
  test('security groups: weekly windows on create, listed, replaced, removed; bad windows are usage errors', async () => {
    const { cli, id, location } = await account('Windowed');
    const created = await cli.json<{ id: number; windows: Windows }>([
      'admin', 'security-groups', 'create', 'office', '--location', location, '--title', 'Office hours',
      '--window', 'mon-fri,08:00-18:00', '--window', 'sat,9:00-13:00',
    ]);
    // sat,9:00: the hour is sent with its zero (the API takes HH:MM only).
    const office = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '08:00', end: '18:00' }, { days: ['sat'], start: '09:00', end: '13:00' }];
    assert.deepEqual(created.windows, office);
    const stored = await ctx.service.admin<Page<{ id: number; windows: Windows }>>('GET', `/admin/v1/security_groups?account_id=${id}`);
    assert.deepEqual(stored.body.data.find((g) => g.id === created.id)?.windows, office, 'the operator API reads the windows the CLI sent');

    await cli.json(['admin', 'security-groups', 'create', 'staff', '--location', location, '--title', 'Staff']);
    const table = await cli.run(['admin', 'security-groups', 'list', '--account', id]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^ID\s+CODE\s+TITLE\s+LOCATION\s+DEFAULT\s+WINDOWS$/m);
    assert.match(table.stdout, /office\s+Office hours\s+\d+\s+false\s+mon-fri 08:00-18:00; sat 09:00-13:00$/m);
    assert.match(table.stdout, /staff\s+Staff\s+\d+\s+false\s+any time$/m);

    const night = await cli.json<{ windows: Windows; title: string; is_default: boolean }>([
      'admin', 'security-groups', 'update', String(created.id), '--window', 'fri-mon,22:00-06:00', '--title', 'Nights', '--default',
    ]);
    assert.deepEqual(night.windows, [{ days: ['mon', 'fri', 'sat', 'sun'], start: '22:00', end: '06:00' }]);
    assert.deepEqual([night.title, night.is_default], ['Nights', true]);
    const anyTime = await cli.json<{ windows: Windows; title: string }>(['admin', 'security-groups', 'update', String(created.id), '--any-time']);
    assert.deepEqual([anyTime.windows, anyTime.title], [null, 'Nights'], 'only the windows changed');

    for (const [args, message] of [
      [['--window', 'weekdays,08:00-18:00'], /unknown day "weekdays"/],
      [['--window', 'mon-fri'], /expected days and times such as mon-fri,08:00-18:00/],
      [['--window', 'mon,08:00-18:00', '--any-time'], /--window and --any-time contradict/],
      [[], /nothing to change/],
    ] as const) {
      const refused = await cli.run(['admin', 'security-groups', 'update', String(created.id), ...args]);
      assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stderr}`);
      assert.match(refused.stderr, message);
    }
    const outOfRange = await cli.run(['admin', 'security-groups', 'update', String(created.id), '--window', 'mon,08:00-25:00']);
    assert.equal(outOfRange.code, 1, 'times are judged by the service');
    assert.match(outOfRange.stderr, /validation_failed, HTTP 422/);
  });

  test('a card handed over with its credential shows it; the credential is changed and removed', async () => {
    const { cli, location } = await account('Carded');
    await cli.json(['admin', 'security-groups', 'create', 'staff', '--location', location, '--title', 'Staff']);
    const person = await cli.json<{ id: string }>(['admin', 'people', 'create', 'Grace Hopper', '--location', location]);
    const card = await cli.json<{ id: number; credential: string | null; state: string }>([
      'admin', 'keys', 'create', 'Badge 12', '--person', person.id, '--type', 'card', '--credential', 'wiegand26:12:34567', '--security-groups', 'staff',
    ]);
    assert.deepEqual([card.credential, card.state], ['wiegand26:12:34567', 'handed_over']);
    const stored = await ctx.service.admin<{ credential: string | null; security_groups: string[] }>('GET', `/admin/v1/keys/${card.id}`);
    assert.deepEqual([stored.body.credential, stored.body.security_groups], ['wiegand26:12:34567', ['staff']]);
    const shown = await cli.run(['admin', 'keys', 'get', String(card.id)]);
    assert.match(shown.stdout, /^credential\s+wiegand26:12:34567$/m);

    const taken = await cli.run(['admin', 'keys', 'create', 'Copy', '--person', person.id, '--type', 'card', '--credential', 'wiegand26:12:34567']);
    assert.equal(taken.code, 1, 'a credential in use is refused by the service');

    const changed = await cli.json<{ credential: string | null }>(['admin', 'keys', 'update', String(card.id), '--credential', 'uid:04a1b2c3']);
    assert.equal((await ctx.service.admin<{ credential: string | null }>('GET', `/admin/v1/keys/${card.id}`)).body.credential, changed.credential);
    assert.match(changed.credential ?? '', /^uid:04a1b2c3$/i);
    assert.equal((await cli.json<{ credential: string | null }>(['admin', 'keys', 'update', String(card.id), '--credential', 'none'])).credential, null);
    const nothing = await cli.run(['admin', 'keys', 'update', String(card.id)]);
    assert.equal(nothing.code, 2);

    // A card has no phone devices; removing one it does not have is the API's 404.
    const devices = await cli.run(['admin', 'keys', 'devices', 'list', String(card.id)]);
    assert.equal(devices.code, 0, devices.stderr);
    assert.equal(devices.stdout.trim(), 'No devices.');
    const removed = await cli.run(['admin', 'keys', 'devices', 'remove', String(card.id), '999']);
    assert.equal(removed.code, 1);
    assert.match(removed.stderr, /not_found, HTTP 404/);
  });

  test('locks, locations: updated through the CLI, read back', async () => {
    const { cli, id, location } = await account('Moved');
    await cli.json(['admin', 'security-groups', 'create', 'staff', '--location', location, '--title', 'Staff']);
    await cli.json(['admin', 'security-groups', 'create', 'cleaners', '--location', location, '--title', 'Cleaners']);
    const gateway = await cli.json<{ id: number }>(['admin', 'gateways', 'create', 'Bridge', '--location', location]);
    const lock = await cli.json<{ id: number }>(['admin', 'locks', 'create', 'Door', '--location', location, '--security-groups', 'staff']);

    const updated = await cli.json<{ name: string; place: string; security_groups: string[]; online: boolean | null }>([
      'admin', 'locks', 'update', String(lock.id), '--name', 'Main door', '--place', 'Hall', '--gateway', String(gateway.id), '--security-groups', 'staff,cleaners',
    ]);
    assert.deepEqual([updated.name, updated.place, [...updated.security_groups].sort(), updated.online], ['Main door', 'Hall', ['cleaners', 'staff'], false]);
    const listed = await ctx.service.admin<Page<{ id: number; name: string; online: boolean | null; security_groups: string[] }>>('GET', `/admin/v1/locks?account_id=${id}`);
    assert.deepEqual(listed.body.data.map((l) => [l.id, l.name, l.online]), [[lock.id, 'Main door', false]]);
    const local = await cli.json<{ online: boolean | null; security_groups: string[] }>(['admin', 'locks', 'update', String(lock.id), '--gateway', 'none', '--security-groups', '']);
    assert.deepEqual([local.online, local.security_groups], [null, []], 'not remote any more, in no group');

    const department = await cli.json<{ id: number; time_zone: string | null; effective_time_zone: string }>([
      'admin', 'locations', 'create', 'Berlin office', '--parent', location, '--time-zone', 'Europe/Berlin',
    ]);
    assert.deepEqual([department.time_zone, department.effective_time_zone], ['Europe/Berlin', 'Europe/Berlin']);
    const root = await cli.json<{ name: string; time_zone: string | null }>(['admin', 'locations', 'update', location, '--name', 'HQ', '--time-zone', 'America/New_York']);
    assert.deepEqual([root.name, root.time_zone], ['HQ', 'America/New_York']);
    const inherited = await cli.json<{ time_zone: string | null; effective_time_zone: string }>(['admin', 'locations', 'update', String(department.id), '--time-zone', 'inherit']);
    assert.deepEqual([inherited.time_zone, inherited.effective_time_zone], [null, 'America/New_York']);
    const stored = await ctx.service.admin<Page<{ id: number; name: string; effective_time_zone: string }>>('GET', `/admin/v1/locations?account_id=${id}`);
    assert.deepEqual(stored.body.data.map((l) => [l.name, l.effective_time_zone]), [['HQ', 'America/New_York'], ['Berlin office', 'America/New_York']]);
    const badZone = await cli.run(['admin', 'locations', 'update', location, '--time-zone', 'Mars/Olympus']);
    assert.equal(badZone.code, 1);
  });

  test('accounts: the locking system and offline access; lists by account: users, people, API keys, gateways; the overview', async () => {
    const cli = cliFor(ctx.service);
    const made = await cli.json<{ id: number; locking_system: string | null; offline_access_seconds: number; root_location: { id: number } }>([
      'admin', 'accounts', 'create', 'Listed Co', '--locking-system', 'uhppote', '--offline-access', '1d', '--phone-key-allowance', '3',
    ]);
    assert.deepEqual([made.locking_system, made.offline_access_seconds], ['uhppote', 86_400]);
    const changed = await cli.json<{ locking_system: string | null; offline_access_seconds: number; phone_key_allowance: number | null }>(['admin', 'accounts', 'update', String(made.id), '--locking-system', 'none', '--offline-access', '2h', '--phone-key-allowance', 'unlimited']);
    assert.deepEqual([changed.locking_system, changed.offline_access_seconds, changed.phone_key_allowance], [null, 7200, null]);
    const id = String(made.id);
    const location = String(made.root_location.id);

    const user = await cli.json<{ id: number }>(['admin', 'users', 'create', 'Ops Person', '--account', id, '--email', 'ops@example.com']);
    assert.deepEqual((await cli.json<Page<{ id: number; email: string }>>(['admin', 'users', 'list', '--account', id])).data.map((u) => [u.id, u.email]), [[user.id, 'ops@example.com']]);
    const users = await cli.run(['admin', 'users', 'list', '--account', id]);
    assert.match(users.stdout, new RegExp(`^${user.id}\\s+Ops Person\\s+ops@example.com\\s+${id}$`, 'm'));

    const ada = await cli.json<{ id: string }>(['admin', 'people', 'create', 'Ada Lovelace', '--location', location, '--email', 'ada@example.com']);
    await cli.json(['admin', 'people', 'create', 'Charles Babbage', '--location', location]);
    const found = await cli.json<Page<{ id: string }>>(['admin', 'people', 'list', '--account', id, '--search', 'ADA@']);
    assert.deepEqual(found.data.map((p) => p.id), [ada.id]);
    assert.equal((await cli.json<Page<{ id: string }>>(['admin', 'people', 'list', '--account', id])).data.length, 2);

    const other = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Other Co']);
    const ours = await cli.json<{ id: number }>(['admin', 'gateways', 'create', 'Ours', '--location', location]);
    await cli.json(['admin', 'gateways', 'create', 'Theirs', '--location', String(other.root_location.id)]);
    const gateways = await cli.json<Page<{ id: number }>>(['admin', 'gateways', 'list', '--account', id]);
    assert.deepEqual(gateways.data.map((g) => g.id), [ours.id]);
    const key = await cli.json<{ id: number }>(['admin', 'api-keys', 'create', 'Ours', '--location', location, '--scopes', 'catalog:read']);
    await cli.json(['admin', 'api-keys', 'create', 'Theirs', '--location', String(other.root_location.id), '--scopes', 'catalog:read']);
    assert.deepEqual((await cli.json<Page<{ id: number }>>(['admin', 'api-keys', 'list', '--account', id])).data.map((k) => k.id), [key.id]);

    const overview = await cli.json<{ accounts: number; gateways: { online: number; offline: number } }>(['admin', 'overview']);
    const direct = await ctx.service.admin<{ accounts: number; gateways: { offline: number } }>('GET', '/admin/v1/overview');
    assert.deepEqual(overview, direct.body);
    assert.ok(overview.gateways.offline >= 2);
    const shown = await cli.run(['admin', 'overview']);
    assert.match(shown.stdout, /^gateways\.offline\s+\d+$/m);
  });
});
