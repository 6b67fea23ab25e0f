// The SDK against a real Latchkey: people, keys and invitations, locks and security groups, paging and errors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ALL_SCOPES, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { activate, latestLink } from '../helpers/keys.ts';
import { useTestService } from '../helpers/service.ts';
import { Latchkey, LatchkeyError, type Person } from '../../packages/sdk/src/index.ts';

const ctx = useTestService();

let counter = 0;
/** A phone number of its own (London, one per call in this process). */
function phone(): string {
  counter++;
  return `+44207947${String(counter).padStart(4, '0')}`;
}

/** A tenant with every scope, and the requests its client sends (method and path with query). */
async function tenant() {
  const account = await createAccount(ctx.service);
  await createSecurityGroup(ctx.service, account.rootLocationId, 'staff', { is_default: true });
  await createSecurityGroup(ctx.service, account.rootLocationId, 'night');
  const lockId = await createLock(ctx.service, account.rootLocationId, { name: 'Front door', place: 'Lobby', security_groups: ['staff'] });
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ALL_SCOPES);
  const sent: string[] = [];
  const lk = new Latchkey({
    apiKey: token,
    baseUrl: ctx.service.url,
    fetch: (request) => {
      const url = new URL(request.url);
      sent.push(`${request.method} ${url.pathname}${url.search}`);
      return fetch(request);
    },
  });
  return { account, lockId, lk, sent };
}

async function rejection(promise: Promise<unknown>): Promise<LatchkeyError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof LatchkeyError, `a LatchkeyError, not ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('people', () => {
  test('create, get, update, find by e-mail and delete', async () => {
    const { lk } = await tenant();
    const ada = await lk.people.create({ name: 'Ada Lovelace', email: 'ada@example.com', phone: phone(), language: 'en-gb' });
    assert.equal(ada.name, 'Ada Lovelace');
    assert.equal(ada.language, 'en-GB');
    const again = await lk.people.create({ name: 'Ada again', email: 'ADA@example.com' });
    assert.equal(again.id, ada.id, 'the service de-duplicates on e-mail');
    const read = await lk.people.get(ada.id);
    assert.deepEqual(read.keys, []);
    const updated = await lk.people.update(ada.id, { title: 'Analyst', company_name: null });
    assert.deepEqual([updated.title, updated.email], ['Analyst', 'ada@example.com']);
    const found = await lk.people.list({ email: 'ada@example.com' }).page();
    assert.deepEqual(found.data.map((p) => p.id), [ada.id]);
    assert.equal(await lk.people.delete(ada.id), undefined);
    assert.equal((await rejection(lk.people.get(ada.id))).status, 404);
  });

  test('for await follows next_cursor across pages; page() and pages() read one page at a time', async () => {
    const { lk, sent } = await tenant();
    const made: Person[] = [];
    for (let i = 0; i < 7; i++) made.push(await lk.people.create({ name: `Person ${i}` }));
    sent.length = 0;
    const seen: string[] = [];
    for await (const person of lk.people.list({ limit: 3 })) seen.push(person.id);
    assert.deepEqual(seen, made.map((p) => p.id), 'every person once, in creation order');
    assert.deepEqual(sent.length, 3, `three pages of three: ${sent.join(' | ')}`);
    assert.ok(sent[1]?.includes('cursor='), 'the second page asks for the cursor of the first');

    const first = await lk.people.list({ limit: 5 }).page();
    assert.equal(first.data.length, 5);
    assert.ok(first.next_cursor);
    const rest = await lk.people.list({ limit: 5, cursor: first.next_cursor }).all();
    assert.deepEqual(rest.map((p) => p.id), made.slice(5).map((p) => p.id), 'a list can start at a cursor');
    const sizes: number[] = [];
    for await (const page of lk.people.list({ limit: 4 }).pages()) sizes.push(page.data.length);
    assert.deepEqual(sizes, [4, 3]);
  });
});

describe('keys and invitations', () => {
  test('issue a key, read and resend its invitation, activate it, then update and revoke the key', async () => {
    const { lk } = await tenant();
    const number = phone();
    const person = await lk.people.create({ name: 'Grace Hopper', phone: number });
    const issued = await lk.keys.create({ person_id: person.id, security_groups: ['staff'], name: 'Office key' });
    assert.deepEqual([issued.state, issued.person_id, issued.sent], ['sent', person.id, { sms: true, email: false }]);
    const invitation = await lk.invitations.get(issued.invitation_id);
    assert.deepEqual([invitation.state, invitation.name], ['pending', 'Office key']);
    const resent = await lk.invitations.resend(issued.invitation_id);
    assert.equal(resent.state, 'pending');
    const listed = await lk.invitations.list({ person_id: person.id }).all();
    assert.deepEqual(listed.map((i) => i.id), [issued.invitation_id]);

    const activated = await activate(ctx.service, await latestLink(ctx.service, number));
    assert.equal(activated.status, 200, activated.text);
    const key = await lk.keys.get(activated.body.key_id);
    assert.deepEqual([key.state, key.person_id, key.invitation_id], ['handed_over', person.id, issued.invitation_id]);
    assert.deepEqual((await lk.keys.list({ person_id: person.id }).all()).map((k) => k.id), [key.id]);
    const renamed = await lk.keys.update(key.id, { name: 'Front desk key' });
    assert.equal(renamed.name, 'Front desk key');
    assert.equal(await lk.keys.revoke(key.id), undefined);
    assert.equal((await rejection(lk.keys.get(key.id))).code, 'not_found');
  });

  test('cancel an invitation; a second cancel answers invitation_not_pending', async () => {
    const { lk } = await tenant();
    const person = await lk.people.create({ name: 'Katherine Johnson', phone: phone() });
    const issued = await lk.keys.create({ person_id: person.id, security_groups: ['night'] });
    assert.equal(await lk.invitations.cancel(issued.invitation_id), undefined);
    assert.equal((await lk.invitations.get(issued.invitation_id)).state, 'cancelled');
    const error = await rejection(lk.invitations.cancel(issued.invitation_id));
    assert.deepEqual([error.status, error.code], [409, 'invitation_not_pending']);
  });
});

describe('locks and security groups', () => {
  test('list and get', async () => {
    const { lk, lockId, account } = await tenant();
    const locks = await lk.locks.list().all();
    assert.deepEqual(locks.map((l) => [l.id, l.name, l.place, l.online, l.location.id]), [[lockId, 'Front door', 'Lobby', null, account.rootLocationId]]);
    assert.deepEqual((await lk.locks.get(lockId)).security_groups, ['staff']);
    const groups = await lk.securityGroups.list().all();
    assert.deepEqual(groups.map((g) => g.code).sort(), ['night', 'staff']);
    assert.deepEqual((await lk.securityGroups.list({ is_default: true }).all()).map((g) => g.code), ['staff']);
  });
});

describe('errors', () => {
  test('404 carries status, code, message and the X-Request-Id', async () => {
    const { lk } = await tenant();
    const error = await rejection(lk.locks.get(987654));
    assert.deepEqual([error.status, error.code, error.details], [404, 'not_found', []]);
    assert.ok(error.message.length > 0);
    assert.match(error.requestId ?? '', /\S/);
    assert.equal(error.name, 'LatchkeyError');
  });

  test('422 carries the details of every field', async () => {
    const { lk } = await tenant();
    const error = await rejection(lk.people.create({ name: 'Admin', phone: '0207 946 0000' }));
    assert.deepEqual([error.status, error.code], [422, 'validation_failed']);
    assert.deepEqual(
      error.details.map((d) => [d.field, d.code]).sort(),
      [
        ['name', 'reserved_name'],
        ['phone', 'invalid'],
      ],
    );
  });

  test('401 for a token that is not a live API key', async () => {
    const lk = new Latchkey({ apiKey: 'lk_not_a_real_token', baseUrl: `${ctx.service.url}/v1/` });
    const error = await rejection(lk.people.list().page());
    assert.deepEqual([error.status, error.code], [401, 'unauthenticated']);
  });

  test('the constructor wants an API key and a base URL', () => {
    assert.throws(() => new Latchkey({ apiKey: '', baseUrl: ctx.service.url }), TypeError);
    assert.throws(() => new Latchkey({ apiKey: 'lk_x', baseUrl: '' }), TypeError);
  });
});
