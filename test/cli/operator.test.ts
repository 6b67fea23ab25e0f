// `latchkey admin …` and `latchkey sandbox …`: an operator provisions a site with the CLI alone (account, API key,
// lock, gateway, people, a card hand-over) and drives the sandbox, against a real Latchkey.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { useTestService } from '../helpers/service.ts';
import { cliFor } from './cli.ts';

const ctx = useTestService();

describe('operator provisioning', () => {
  test('account, API key and lock made with the CLI; the key reads the lock through the public commands', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ id: number; root_location: { id: number } }>(['admin', 'accounts', 'create', 'Acme CLI', '--no-sms']);
    const location = String(account.root_location.id);
    assert.equal((await cli.json<{ sms_enabled: boolean }>(['admin', 'accounts', 'get', String(account.id)])).sms_enabled, false);
    const updated = await cli.json<{ name: string; phone_key_allowance: number | null }>([
      'admin', 'accounts', 'update', String(account.id), '--name', 'Acme Ltd', '--phone-key-allowance', '5',
    ]);
    assert.deepEqual([updated.name, updated.phone_key_allowance], ['Acme Ltd', 5]);

    const department = await cli.json<{ id: number; parent_id: number }>(['admin', 'locations', 'create', 'Lab', '--parent', location]);
    assert.equal(department.parent_id, account.root_location.id);
    await cli.json(['admin', 'security-groups', 'create', 'staff', '--location', location, '--title', 'Staff']);
    const lock = await cli.json<{ id: number; name: string; security_groups: string[] }>([
      'admin', 'locks', 'create', 'Front door', '--location', location, '--place', 'Lobby', '--security-groups', 'staff',
    ]);
    assert.deepEqual(lock.security_groups, ['staff']);

    // The token is printed once, by create; the list never shows it.
    const created = await cli.run(['admin', 'api-keys', 'create', 'HR sync', '--location', location, '--scopes', 'catalog:read,people:write']);
    assert.equal(created.code, 0, created.stderr);
    const token = /^token\s+(lk_\S+)$/m.exec(created.stdout)?.[1];
    assert.ok(token, created.stdout);
    assert.match(created.stderr, /shown only now/);
    const keys = await cli.json<{ data: Array<{ name: string; scopes: string[] }> }>(['admin', 'api-keys', 'list', '--location', location]);
    assert.deepEqual(keys.data.map((k) => [k.name, k.scopes]), [['HR sync', ['catalog:read', 'people:write']]]);
    const listed = await cli.run(['admin', 'api-keys', 'list', '--location', location]);
    assert.ok(!listed.stdout.includes(token), 'the list never prints the token');

    const locks = await cli.json<{ data: Array<{ id: number; name: string }> }>(['locks', 'list'], { LATCHKEY_API_KEY: token });
    assert.deepEqual(locks.data.map((l) => [l.id, l.name]), [[lock.id, 'Front door']]);
    const shown = await cli.run(['locks', 'get', String(lock.id), '--api-key', token]);
    assert.match(shown.stdout, /^place\s+Lobby$/m);

    const keyId = /^id\s+(\d+)$/m.exec(created.stdout)?.[1];
    assert.deepEqual(await cli.json(['admin', 'api-keys', 'revoke', String(keyId)]), { id: Number(keyId), revoked: true });
    const refused = await cli.run(['locks', 'list'], { LATCHKEY_API_KEY: token });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /unauthenticated, HTTP 401/);
  });

  test('people, a card handed over and returned, and gateways from create to delete', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ root_location: { id: number } }>(['admin', 'accounts', 'create', 'Gatehouse']);
    const location = String(account.root_location.id);
    const person = await cli.json<{ id: string; name: string }>(['admin', 'people', 'create', 'Mary Jackson', '--location', location, '--managed']);
    const card = await cli.json<{ id: number; state: string; type: string }>(['admin', 'keys', 'create', 'Badge 7', '--person', person.id, '--type', 'card']);
    assert.deepEqual([card.type, card.state], ['card', 'handed_over']);
    assert.equal((await cli.json<{ state: string }>(['admin', 'keys', 'return', String(card.id)])).state, 'returned');

    const created = await cli.json<{ id: number; mqtt: { password: string } }>(['admin', 'gateways', 'create', 'Bridge', '--location', location]);
    assert.ok(created.mqtt.password.length > 20);
    const listed = await cli.run(['admin', 'gateways', 'list', '--location', location]);
    assert.match(listed.stdout, /^ID\s+NAME\s+LOCATION\s+ONLINE\s+LAST SEEN\s+LAST REFUSED\s+CLIENT ID$/m);
    assert.ok(!listed.stdout.includes(created.mqtt.password));
    // Never connected: listed offline, not online.
    const offline = await cli.json<{ data: Array<{ id: number }> }>(['admin', 'gateways', 'list', '--location', location, '--online', 'false']);
    assert.deepEqual(offline.data.map((g) => g.id), [created.id]);
    const online = await cli.json<{ data: Array<{ id: number }> }>(['admin', 'gateways', 'list', '--location', location, '--online', 'true']);
    assert.deepEqual(online.data, []);
    const rotated = await cli.json<{ mqtt: { password: string } }>(['admin', 'gateways', 'rotate-password', String(created.id)]);
    assert.notEqual(rotated.mqtt.password, created.mqtt.password);
    assert.equal((await cli.json<{ online: boolean }>(['admin', 'gateways', 'get', String(created.id)])).online, false);
    assert.deepEqual(await cli.json(['admin', 'gateways', 'delete', String(created.id)]), { id: created.id, deleted: true });
    const gone = await cli.run(['admin', 'gateways', 'get', String(created.id)]);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /not_found, HTTP 404/);
  });

  test('without an operator token: a usage error (exit 2) before anything is sent', async () => {
    const result = await cliFor(ctx.service).run(['admin', 'accounts', 'get', '1'], { LATCHKEY_ADMIN_TOKEN: '' });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no operator token: set LATCHKEY_ADMIN_TOKEN, pass --admin-token or save one with latchkey login/);
  });
});

describe('sandbox', () => {
  test('advance moves the service clock by a duration; malformed durations are usage errors', async () => {
    const cli = cliFor(ctx.service);
    const before = new Date((await cli.json<{ now: string }>(['sandbox', 'clock'])).now);
    const advanced = await cli.run(['sandbox', 'advance', '1h30m']);
    assert.equal(advanced.code, 0, advanced.stderr);
    const now = new Date(/^Clock now (\S+)\.$/m.exec(advanced.stdout)?.[1] ?? '');
    const moved = (now.getTime() - before.getTime()) / 1000;
    assert.ok(moved >= 5400 && moved < 5400 + 60, `moved ${moved} s`);
    assert.ok(new Date((await cli.json<{ now: string }>(['sandbox', 'advance', '90s'])).now) > now);

    const bad = await cli.run(['sandbox', 'advance', '1 hour']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /expected a duration such as 90s, 15m, 1h, 2d/);
  });

  test('outbox shows the setup link an invitation sent', async () => {
    const cli = cliFor(ctx.service);
    const account = await cli.json<{ root_location: { id: number } }>(['admin', 'accounts', 'create', 'Outbox Co']);
    const location = String(account.root_location.id);
    await cli.json(['admin', 'security-groups', 'create', 'visitors', '--location', location, '--title', 'Visitors']);
    const created = await cli.json<{ token: string }>(['admin', 'api-keys', 'create', 'Desk', '--location', location, '--scopes', 'people:write,keys:write']);
    const asClient = { LATCHKEY_API_KEY: created.token };
    const person = await cli.json<{ id: string }>(['people', 'create', 'Kathy Sullivan', '--phone', '+14155550123'], asClient);
    const invitation = await cli.json<{ invitation_id: number }>(['keys', 'create', '--person', person.id, '--security-groups', 'visitors'], asClient);

    const outbox = await cli.json<{ data: Array<{ to: string; channel: string; link: string }> }>(['sandbox', 'outbox', '--to', '+14155550123']);
    assert.equal(outbox.data.length, 1);
    assert.equal(outbox.data[0]?.channel, 'sms');
    assert.match(outbox.data[0]?.link ?? '', /\/activate\//);
    const invitations = await cli.run(['invitations', 'list', '--person', person.id], asClient);
    assert.match(invitations.stdout, new RegExp(`^${invitation.invitation_id}\\s+pending\\s+${person.id}`, 'm'));
  });
});
