import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { advanceClock, createApiKey, createDepartment, createSecurityGroup } from '../helpers/fixtures.ts';
import { activate, issueKey, keysTenant, latestLink, linkPath, outboxFor, type KeysTenant } from '../helpers/keys.ts';
import { overriding } from '../helpers/database.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import type { ErrorBody, Page } from '../helpers/types.ts';

interface Key {
  id: number;
  name: string;
  type: string;
  state: string;
  person_id: string;
  invitation_id?: number | null;
  security_groups: string[];
  starts_at: string;
  expires_at: string | null;
}
interface Invitation {
  id: number;
  state: string;
  key_id: number | null;
  sent: { email_at: string | null; sms_at: string | null };
  expires_at: string;
}

const ctx = useTestService();

async function eventTypes(accountId: number, since = 0): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return ctx.database.db.query('SELECT type, data FROM domain_events WHERE account_id = $1 AND id > $2 ORDER BY id', [accountId, since]);
}

async function lastEventId(): Promise<number> {
  const [row] = await ctx.database.db.query<{ id: number | null }>('SELECT max(id) AS id FROM domain_events');
  return row?.id ?? 0;
}

async function activatedKey(service: TestService, tenant: KeysTenant, body: Record<string, unknown> = {}): Promise<number> {
  const issued = await issueKey(service, tenant, body);
  assert.equal(issued.status, 202, issued.text);
  const done = await activate(service, await latestLink(service, tenant.phone));
  assert.equal(done.status, 200, done.text);
  return done.body.key_id;
}

/**
 * A service on the same database whose next transaction starts just after the hook given to `beforeNext` ran (once):
 * a change made through `ctx.service` then lands between a request's checks and its transaction.
 */
async function racingService(): Promise<{ racing: TestService; beforeNext: (hook: () => Promise<unknown>) => void }> {
  let next: (() => Promise<unknown>) | null = null;
  const racing = await startService(
    overriding(ctx.database.db, {
      transaction: async (fn) => {
        const hook = next;
        next = null;
        await hook?.();
        return ctx.database.db.transaction(fn);
      },
    }),
  );
  return { racing, beforeNext: (hook) => (next = hook) };
}

describe('the whole life of a phone key', () => {
  test('person, POST /keys, link, activation, GET /keys and /people/{id}, PATCH held, confirm, DELETE', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const issued = await issueKey(ctx.service, t, { name: 'Office key', channel: 'both' });
    assert.equal(issued.status, 202);
    assert.deepEqual(issued.body, {
      invitation_id: issued.body.invitation_id,
      person_id: t.personId,
      security_groups: ['staff'],
      state: 'sent',
      sent: { email: true, sms: true },
    });

    const sms = await outboxFor(ctx.service, t.phone);
    const mail = await outboxFor(ctx.service, t.email);
    assert.equal(sms.length, 1);
    assert.equal(mail.length, 1);
    assert.equal(sms[0]?.channel, 'sms');
    assert.equal(mail[0]?.channel, 'email');
    assert.equal(sms[0]?.link, mail[0]?.link);
    const link = sms[0]?.link as string;
    assert.match(link, /^http:\/\/localhost:\d+\/activate\/[A-Za-z0-9_-]{43}$/);
    assert.match(sms[0]?.body ?? '', /Front door/);
    assert.ok(sms[0]?.body.includes(link));

    const invitation = await ctx.service.request<Invitation>('GET', `/v1/invitations/${issued.body.invitation_id}`, { token: t.token });
    assert.equal(invitation.body.state, 'pending');
    assert.ok(invitation.body.sent.sms_at && invitation.body.sent.email_at, 'sent times are recorded');

    const page = await ctx.service.request('GET', linkPath(link));
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(page.text, /<button type="submit">Activate my key<\/button>/);
    assert.match(page.text, /Office key/);

    const activated = await activate(ctx.service, link);
    assert.equal(activated.status, 200);
    assert.equal(activated.body.invitation_id, issued.body.invitation_id);
    const keyId = activated.body.key_id;

    const after = await ctx.service.request<Invitation>('GET', `/v1/invitations/${issued.body.invitation_id}`, { token: t.token });
    assert.equal(after.body.state, 'activated');
    assert.equal(after.body.key_id, keyId);

    const list = await ctx.service.request<Page<Key>>('GET', '/v1/keys', { token: t.token });
    assert.equal(list.body.data.length, 1);
    const key = list.body.data[0] as Key;
    assert.deepEqual(
      { id: key.id, name: key.name, type: key.type, state: key.state, person_id: key.person_id, invitation_id: key.invitation_id, groups: key.security_groups },
      { id: keyId, name: 'Office key', type: 'digital', state: 'handed_over', person_id: t.personId, invitation_id: issued.body.invitation_id, groups: ['staff'] },
    );
    const person = await ctx.service.request<{ keys: Key[] }>('GET', `/v1/people/${t.personId}`, { token: t.token });
    assert.equal(person.body.keys.length, 1);
    assert.equal(person.body.keys[0]?.id, keyId);
    assert.equal('invitation_id' in (person.body.keys[0] as object), false);

    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'hold' });
    const held = await ctx.service.request<Key>('PATCH', `/v1/keys/${keyId}`, { token: t.token, body: { security_groups: ['staff', 'night'] } });
    assert.equal(held.status, 200);
    assert.equal(held.body.state, 'sent');
    const confirm = await ctx.service.admin<{ confirmed: number }>('POST', '/admin/v1/sandbox/locking_system/confirm', { account_id: t.accountId });
    assert.deepEqual(confirm.body, { confirmed: 1 });
    // An unknown account is told as the sandbox's PUT tells it.
    for (const [method, path, body] of [
      ['POST', '/admin/v1/sandbox/locking_system/confirm', { account_id: 999_999 }],
      ['PUT', '/admin/v1/sandbox/locking_system', { account_id: 999_999, mode: 'hold' }],
    ] as const) {
      const unknown = await ctx.service.admin<ErrorBody>(method, path, body);
      assert.equal(unknown.status, 422, `${method} ${path}`);
      assert.deepEqual(unknown.body.error.details?.map((d) => d.field), ['account_id']);
    }
    const confirmed = await ctx.service.request<Key>('GET', `/v1/keys/${keyId}`, { token: t.token });
    assert.equal(confirmed.body.state, 'handed_over');
    assert.deepEqual(confirmed.body.security_groups, ['staff', 'night']);

    const revoked = await ctx.service.request('DELETE', `/v1/keys/${keyId}`, { token: t.token });
    assert.equal(revoked.status, 204);
    assert.equal((await ctx.service.request('GET', `/v1/keys/${keyId}`, { token: t.token })).status, 404);
    assert.deepEqual((await ctx.service.request<Page<Key>>('GET', '/v1/keys', { token: t.token })).body.data, []);
    assert.deepEqual((await ctx.service.request<{ keys: Key[] }>('GET', `/v1/people/${t.personId}`, { token: t.token })).body.keys, []);

    const events = await eventTypes(t.accountId);
    assert.deepEqual(
      events.map((e) => e.type),
      ['person.created', 'key.issued', 'key.activated', 'key.activated', 'key.revoked'],
    );
    const issuedEvent = events[1]?.data as { invitation_id: number; channel: string; person: { id: string; email: string }; security_groups: string[]; expires_at: string };
    assert.deepEqual(
      [issuedEvent.invitation_id, issuedEvent.channel, issuedEvent.person.id, issuedEvent.person.email, issuedEvent.security_groups, issuedEvent.expires_at],
      [issued.body.invitation_id, 'both', t.personId, t.email, ['staff'], after.body.expires_at],
    );
    const revokedEvent = events[4]?.data as { id: number; type: string; key: { id: number; state: string }; person: { id: string } };
    assert.equal(revokedEvent.id, keyId);
    assert.equal(revokedEvent.type, 'key.revoked');
    assert.deepEqual(revokedEvent.key, { id: keyId, name: 'Office key', state: 'returned' });
    assert.equal(revokedEvent.person.id, t.personId);

    // Removal from the locking system runs afterwards, as a job.
    await advanceClock(ctx.service, 0);
    const writes = await ctx.database.db.query<{ operation: string; entity_id: string }>(
      'SELECT operation, entity_id FROM sandbox_locking_system_writes WHERE account_id = $1 AND operation LIKE $2 ORDER BY id',
      [t.accountId, 'key.%'],
    );
    assert.deepEqual(writes.map((w) => w.operation), ['key.create', 'key.update', 'key.delete']);
    assert.equal(writes[2]?.entity_id, String(keyId));
  });
});

describe('POST /keys', () => {
  test('answers 404 for a person outside the scope', async () => {
    const t = await keysTenant(ctx.service);
    const dept = await createDepartment(ctx.service, t.locationId);
    const deptKey = (await createApiKey(ctx.service, dept, ['keys:write'])).token;
    const res = await ctx.service.request<ErrorBody>('POST', '/v1/keys', { token: deptKey, body: { person_id: t.personId, security_groups: ['staff'] } });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
  });

  test('an empty security_groups list is valid: the key is issued without groups and given them later', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const before = await lastEventId();
    const issued = await issueKey(ctx.service, t, { security_groups: [] });
    assert.equal(issued.status, 202, issued.text);
    assert.deepEqual([issued.body.state, (issued.body as { security_groups?: string[] }).security_groups, issued.body.sent], ['sent', [], { email: false, sms: true }]);
    const link = await latestLink(ctx.service, t.phone);
    const page = await ctx.service.request('GET', linkPath(link));
    assert.match(page.text, /<dt>Opens<\/dt><dd>no doors yet/);
    const activated = await activate(ctx.service, link);
    assert.equal(activated.status, 200, activated.text);
    const keyId = activated.body.key_id;
    const key = await ctx.service.request<Key>('GET', `/v1/keys/${keyId}`, { token: t.token });
    assert.deepEqual([key.body.state, key.body.security_groups], ['handed_over', []]);

    const given = await ctx.service.request<Key>('PATCH', `/v1/keys/${keyId}`, { token: t.token, body: { security_groups: ['staff'] } });
    assert.equal(given.status, 200, given.text);
    assert.deepEqual([given.body.state, given.body.security_groups], ['handed_over', ['staff']]);
    const emptied = await ctx.service.request<Key>('PATCH', `/v1/keys/${keyId}`, { token: t.token, body: { security_groups: [] } });
    assert.equal(emptied.status, 200, emptied.text);
    assert.deepEqual([emptied.body.state, emptied.body.security_groups], ['handed_over', []]);

    const events = await eventTypes(t.accountId, before);
    assert.deepEqual(events.map((e) => e.type), ['key.issued', 'key.activated', 'key.activated', 'key.activated']);
    assert.deepEqual((events[0]?.data as { security_groups: string[] }).security_groups, []);
    const writes = await ctx.database.db.query<{ operation: string }>(
      'SELECT operation FROM sandbox_locking_system_writes WHERE account_id = $1 AND operation LIKE $2 ORDER BY id',
      [t.accountId, 'key.%'],
    );
    assert.deepEqual(writes.map((w) => w.operation), ['key.create', 'key.update', 'key.update']);
  });

  test('security_groups keeps its other bounds on POST and PATCH: at most 100, distinct, known', async () => {
    const t = await keysTenant(ctx.service);
    const id = await activatedKey(ctx.service, t);
    const tooMany = Array.from({ length: 101 }, (_, i) => `g${i}`);
    for (const [groups, code] of [
      [tooMany, 'invalid'],
      [['staff', 'staff'], 'invalid'],
    ] as const) {
      const created = await issueKey(ctx.service, t, { security_groups: groups });
      assert.equal(created.status, 422, `POST ${groups.length}`);
      assert.deepEqual((created.body as ErrorBody).error.details?.map((d) => [d.field, d.code]), [['security_groups', code]]);
      const changed = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { security_groups: groups } });
      assert.equal(changed.status, 422, `PATCH ${groups.length}`);
      assert.deepEqual(changed.body.error.details?.map((d) => [d.field, d.code]), [['security_groups', code]]);
    }
    const unknown = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { security_groups: ['vault'] } });
    assert.deepEqual(unknown.body.error.details?.map((d) => [d.field, d.code]), [['security_groups[0]', 'unknown_security_group']]);
    const hundred = Array.from({ length: 100 }, () => 'staff').map((code, i) => (i === 0 ? code : `x${i}`));
    const atBound = await issueKey(ctx.service, t, { security_groups: hundred });
    assert.equal((atBound.body as ErrorBody).error.details?.length, 99, '100 codes pass the schema; the 99 unknown ones are named');
  });

  test("POST and PATCH take the same groups: those at the key's person's location and above, nothing beside or below it", async () => {
    const t = await keysTenant(ctx.service);
    const annex = await createDepartment(ctx.service, t.locationId, 'Annex');
    const lab = await createDepartment(ctx.service, t.locationId, 'Lab');
    await createSecurityGroup(ctx.service, annex, 'annex-only');
    await createSecurityGroup(ctx.service, lab, 'lab-only');
    const dee = await ctx.service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Dee', email: 'dee@example.com', location_id: annex });
    const asked = { person_id: dee.body.id, channel: 'email' };
    // The root's key gives Dee her department's group and the root's; not the sibling department's.
    const issued = await issueKey(ctx.service, t, { ...asked, security_groups: ['annex-only', 'staff'] });
    assert.equal(issued.status, 202, JSON.stringify(issued.body));
    const sibling = await issueKey(ctx.service, t, { ...asked, security_groups: ['lab-only'] });
    assert.deepEqual((sibling.body as ErrorBody).error.details?.map((d) => [d.field, d.code]), [['security_groups[0]', 'unknown_security_group']]);
    const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: dee.body.id, type: 'card', name: 'Badge' });
    for (const [groups, status] of [
      [['annex-only', 'staff'], 200],
      [['lab-only'], 422],
    ] as const) {
      const changed = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${card.body.id}`, { token: t.token, body: { security_groups: groups } });
      assert.equal(changed.status, status, `PATCH ${groups.join(',')}`);
    }
  });

  test('names each unknown security group by its index', async () => {
    const t = await keysTenant(ctx.service);
    const res = await issueKey(ctx.service, t, { security_groups: ['staff', 'vault', 'night', 'roof'] });
    assert.equal(res.status, 422);
    assert.deepEqual((res.body as ErrorBody).error.details?.map((d) => [d.field, d.code]), [
      ['security_groups[1]', 'unknown_security_group'],
      ['security_groups[3]', 'unknown_security_group'],
    ]);
  });

  test('refuses SMS on an account without SMS, and a channel the person cannot receive', async () => {
    const noSms = await keysTenant(ctx.service, { sms_enabled: false });
    for (const channel of ['sms', 'both']) {
      const res = await issueKey(ctx.service, noSms, { channel });
      assert.deepEqual((res.body as ErrorBody).error.details?.map((d) => [d.field, d.code]), [['channel', 'sms_disabled']], channel);
    }
    assert.equal((await issueKey(ctx.service, noSms, { channel: 'email' })).status, 202);

    const t = await keysTenant(ctx.service);
    const noPhone = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'No Phone', email: 'nophone@example.com' } });
    const res = await ctx.service.request<ErrorBody>('POST', '/v1/keys', {
      token: t.token,
      body: { person_id: noPhone.body.id, security_groups: ['staff'] }, // channel defaults to sms
    });
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['channel', 'invalid']]);
    const noMail = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'No Mail', phone: '+14155550142' } });
    const byMail = await ctx.service.request<ErrorBody>('POST', '/v1/keys', {
      token: t.token,
      body: { person_id: noMail.body.id, security_groups: ['staff'], channel: 'email' },
    });
    assert.deepEqual(byMail.body.error.details?.map((d) => [d.field, d.code]), [['channel', 'invalid']]);
  });

  test('answers 422 entitlement_exceeded, without details, once the allowance is used', async () => {
    const t = await keysTenant(ctx.service, { phone_key_allowance: 2 });
    assert.equal((await issueKey(ctx.service, t)).status, 202);
    const invitation = await issueKey(ctx.service, t);
    assert.equal(invitation.status, 202);
    const res = await issueKey(ctx.service, t);
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'entitlement_exceeded');
    assert.equal('details' in res.body.error, false);
    // A resend uses the allowance too.
    const resend = await ctx.service.request<ErrorBody>('POST', `/v1/invitations/${invitation.body.invitation_id}/resend`, { token: t.token });
    assert.equal(resend.status, 422);
    assert.equal(resend.body.error.code, 'entitlement_exceeded');
  });

  test('is limited to 30 a minute per API key, shared with resend and counted before validation', async () => {
    const t = await keysTenant(ctx.service);
    const { alignToMinuteStart } = await import('../helpers/fixtures.ts');
    await alignToMinuteStart(ctx.service);
    for (let i = 0; i < 29; i++) {
      const res = await ctx.service.request('POST', '/v1/keys', { token: t.token, body: { nonsense: true } });
      assert.equal(res.status, 422);
      if (i === 0) assert.equal(res.headers.get('x-ratelimit-limit'), '30');
    }
    const resend = await ctx.service.request('POST', '/v1/invitations/999999/resend', { token: t.token });
    assert.equal(resend.status, 404);
    assert.equal(resend.headers.get('x-ratelimit-remaining'), '0');
    const limited = await ctx.service.request<ErrorBody>('POST', '/v1/keys', { token: t.token, body: {} });
    assert.equal(limited.status, 429);
    assert.ok(limited.headers.get('retry-after'));
    const readOnly = (await createApiKey(ctx.service, t.locationId, ['keys:read'])).token;
    // Counted before the scope check: a key without keys:write spends its own budget and gets 403.
    const refused = await ctx.service.request('POST', '/v1/keys', { token: readOnly, body: {} });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('x-ratelimit-remaining'), '29');
  });

  test('honours Idempotency-Key; without it every call sends', async () => {
    const t = await keysTenant(ctx.service);
    const headers = { 'idempotency-key': 'issue-once' };
    const body = { person_id: t.personId, security_groups: ['staff'] };
    const first = await ctx.service.request('POST', '/v1/keys', { token: t.token, body, headers });
    const again = await ctx.service.request('POST', '/v1/keys', { token: t.token, body, headers });
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal((await outboxFor(ctx.service, t.phone)).length, 1);
    await ctx.service.request('POST', '/v1/keys', { token: t.token, body });
    assert.equal((await outboxFor(ctx.service, t.phone)).length, 2);
  });

  test('messages use the person\'s language where a template exists', async () => {
    const t = await keysTenant(ctx.service);
    await ctx.service.request('PUT', `/v1/people/${t.personId}`, { token: t.token, body: { language: 'de' } });
    await issueKey(ctx.service, t);
    const [sms] = await outboxFor(ctx.service, t.phone);
    assert.match(sms?.body ?? '', /Ihr Handyschlüssel/);
  });
});

describe('setup links', () => {
  test('in the sandbox the outbox shows the link, while the sent messages keep no trace of the token', async () => {
    const t = await keysTenant(ctx.service);
    const issued = await issueKey(ctx.service, t, { channel: 'both' });
    const link = await latestLink(ctx.service, t.phone);
    assert.equal(await latestLink(ctx.service, t.email), link);
    const token = new URL(link).pathname.split('/').pop() as string;
    const rows = await ctx.database.db.query<{ status: string; text: string }>(
      'SELECT status, row_to_json(m)::text AS text FROM outbound_messages m WHERE invitation_id = $1',
      [issued.body.invitation_id],
    );
    assert.deepEqual(
      rows.map((r) => r.status),
      ['sent', 'sent'],
    );
    for (const row of rows) assert.ok(!row.text.includes(token), row.text);
    assert.equal((await activate(ctx.service, link)).status, 200);
  });

  test('a used, cancelled or expired link answers 410 link_unusable and creates nothing', async () => {
    const t = await keysTenant(ctx.service);
    await activatedKey(ctx.service, t);
    const used = await latestLink(ctx.service, t.phone);
    const again = await activate(ctx.service, used);
    assert.equal(again.status, 410);
    assert.equal(again.body.error.code, 'link_unusable');
    assert.equal((await ctx.service.request('GET', linkPath(used))).status, 410);

    const cancelled = await issueKey(ctx.service, t);
    const cancelledLink = await latestLink(ctx.service, t.phone);
    assert.equal((await ctx.service.request('DELETE', `/v1/invitations/${cancelled.body.invitation_id}`, { token: t.token })).status, 204);
    assert.equal((await activate(ctx.service, cancelledLink)).status, 410);

    const expiring = await issueKey(ctx.service, t, { expires_at: new Date(Date.now() + 3 * 86_400_000).toISOString() });
    const expiringLink = await latestLink(ctx.service, t.phone);
    await advanceClock(ctx.service, 4 * 86_400);
    assert.equal((await activate(ctx.service, expiringLink)).status, 410);
    const invitation = await ctx.service.request<Invitation>('GET', `/v1/invitations/${expiring.body.invitation_id}`, { token: t.token });
    assert.equal(invitation.body.state, 'expired');
    assert.equal((await ctx.service.request<Page<Key>>('GET', '/v1/keys', { token: t.token })).body.data.length, 1);
    assert.equal((await ctx.service.request('POST', '/activate/not-a-real-token', { headers: { accept: 'application/json' } })).status, 410);
  });

  test('two concurrent activations of one link create one key', async () => {
    const t = await keysTenant(ctx.service);
    await issueKey(ctx.service, t);
    const link = await latestLink(ctx.service, t.phone);
    const results = await Promise.all([activate(ctx.service, link), activate(ctx.service, link), activate(ctx.service, link)]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 410, 410]);
    const keys = await ctx.database.db.query('SELECT id FROM keys WHERE person_id = $1', [t.personId]);
    assert.equal(keys.length, 1);
  });

  test('the page form posts and answers an HTML confirmation', async () => {
    const t = await keysTenant(ctx.service);
    await issueKey(ctx.service, t);
    const link = await latestLink(ctx.service, t.phone);
    const res = await ctx.service.request('POST', linkPath(link), {
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: '',
    });
    assert.equal(res.status, 200);
    assert.match(res.text, /Your key is ready/);
    assert.equal((await ctx.service.request<Page<Key>>('GET', '/v1/keys', { token: t.token })).body.data.length, 1);
  });

  test('a locking system that refuses the key spends the link: the invitation reads expired', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const issued = await issueKey(ctx.service, t);
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'reject' });
    const res = await activate(ctx.service, await latestLink(ctx.service, t.phone));
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'lockingsystem_rejected');
    const invitation = await ctx.service.request<Invitation>('GET', `/v1/invitations/${issued.body.invitation_id}`, { token: t.token });
    assert.equal(invitation.body.state, 'expired');
    assert.equal(invitation.body.key_id, null);
  });
});

describe('invitations', () => {
  test('list by person and state; an unknown state answers 422', async () => {
    const t = await keysTenant(ctx.service);
    const a = await issueKey(ctx.service, t);
    await activate(ctx.service, await latestLink(ctx.service, t.phone));
    const b = await issueKey(ctx.service, t);
    const c = await issueKey(ctx.service, t);
    await ctx.service.request('DELETE', `/v1/invitations/${c.body.invitation_id}`, { token: t.token });
    const ids = async (query: string) =>
      (await ctx.service.request<Page<Invitation>>('GET', `/v1/invitations?person_id=${t.personId}${query}`, { token: t.token })).body.data.map((i) => i.id);
    assert.deepEqual(await ids(''), [a.body.invitation_id, b.body.invitation_id, c.body.invitation_id]);
    assert.deepEqual(await ids('&state=activated'), [a.body.invitation_id]);
    assert.deepEqual(await ids('&state=pending'), [b.body.invitation_id]);
    assert.deepEqual(await ids('&state=cancelled'), [c.body.invitation_id]);
    const bad = await ctx.service.request<ErrorBody>('GET', '/v1/invitations?state=sent', { token: t.token });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.error.details?.map((d) => [d.field, d.code]), [['state', 'invalid']]);
    assert.equal(bad.body.error.message, 'The query failed validation.', 'there is no body to blame');
  });

  test('cancel and resend work only on pending invitations', async () => {
    const t = await keysTenant(ctx.service);
    const issued = await issueKey(ctx.service, t);
    const id = issued.body.invitation_id;
    const firstLink = await latestLink(ctx.service, t.phone);
    const before = await lastEventId();

    const resent = await ctx.service.request<Invitation>('POST', `/v1/invitations/${id}/resend`, { token: t.token });
    assert.equal(resent.status, 202);
    assert.equal(resent.body.id, id);
    assert.equal(resent.body.state, 'pending');
    const secondLink = await latestLink(ctx.service, t.phone);
    assert.notEqual(secondLink, firstLink);
    assert.equal((await activate(ctx.service, firstLink)).status, 410, 'the previous link stops working');
    assert.deepEqual((await eventTypes(t.accountId, before)).map((e) => e.type), ['key.issued']);

    const noMail = await ctx.service.request<ErrorBody>('POST', `/v1/invitations/${id}/resend`, { token: t.token, body: { channel: 'email' } });
    assert.equal(noMail.status, 202, 'the person has an e-mail address');

    assert.equal((await ctx.service.request('DELETE', `/v1/invitations/${id}`, { token: t.token })).status, 204);
    for (const [method, path] of [
      ['DELETE', `/v1/invitations/${id}`],
      ['POST', `/v1/invitations/${id}/resend`],
    ] as const) {
      const res = await ctx.service.request<ErrorBody>(method, path, { token: t.token });
      assert.equal(res.status, 409, `${method} ${path}`);
      assert.equal(res.body.error.code, 'invitation_not_pending');
    }
    assert.equal((await ctx.service.request('DELETE', '/v1/invitations/999999', { token: t.token })).status, 404);
  });

  test('the 202 of resend shows the sending it ordered: the channels ordered carry the time of the order', async () => {
    const t = await keysTenant(ctx.service);
    const issued = await issueKey(ctx.service, t, { channel: 'sms' });
    const id = issued.body.invitation_id;
    await outboxFor(ctx.service, t.phone); // the first SMS is accepted by the provider
    const firstSms = (await ctx.service.request<Invitation>('GET', `/v1/invitations/${id}`, { token: t.token })).body.sent.sms_at;
    assert.ok(firstSms);
    await advanceClock(ctx.service, 60);
    const clock = async () => (await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now;

    const before = await clock();
    const both = await ctx.service.request<Invitation>('POST', `/v1/invitations/${id}/resend`, { token: t.token, body: { channel: 'both' } });
    const after = await clock();
    assert.equal(both.status, 202);
    const orderedAt = both.body.sent.sms_at as string;
    assert.ok(orderedAt >= before && orderedAt <= after, `${orderedAt} is the time of this order`);
    assert.deepEqual(both.body.sent, { sms_at: orderedAt, email_at: orderedAt });

    await advanceClock(ctx.service, 60);
    const mailOnly = await ctx.service.request<Invitation>('POST', `/v1/invitations/${id}/resend`, { token: t.token, body: { channel: 'email' } });
    assert.equal(mailOnly.status, 202);
    assert.ok((mailOnly.body.sent.email_at as string) > orderedAt, 'the e-mail ordered now');
    assert.ok((mailOnly.body.sent.sms_at as string) < (mailOnly.body.sent.email_at as string), 'no SMS ordered: its last sending stays');
  });

  test('resend refuses a channel the person cannot receive and SMS on an account without it', async () => {
    const t = await keysTenant(ctx.service);
    const noPhone = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'Mail Only', email: 'mailonly@example.com' } });
    const issued = await ctx.service.request<{ invitation_id: number }>('POST', '/v1/keys', {
      token: t.token,
      body: { person_id: noPhone.body.id, security_groups: ['staff'], channel: 'email' },
    });
    const res = await ctx.service.request<ErrorBody>('POST', `/v1/invitations/${issued.body.invitation_id}/resend`, { token: t.token });
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['channel', 'invalid']]);
    await ctx.service.admin('PATCH', `/admin/v1/accounts/${t.accountId}`, { sms_enabled: false });
    const disabled = await ctx.service.request<ErrorBody>('POST', `/v1/invitations/${issued.body.invitation_id}/resend`, { token: t.token, body: { channel: 'both' } });
    assert.deepEqual(disabled.body.error.details?.map((d) => [d.field, d.code]), [['channel', 'sms_disabled']]);
    // A channel that is none: one detail, naming the channels (the body may be left out, but it was not).
    const fax = await ctx.service.request<ErrorBody>('POST', `/v1/invitations/${issued.body.invitation_id}/resend`, { token: t.token, body: { channel: 'fax' } });
    assert.equal(fax.status, 422);
    assert.equal(fax.body.error.message, 'The request body failed validation.');
    assert.deepEqual(fax.body.error.details, [{ field: 'channel', code: 'invalid', message: 'channel must be one of "sms", "email", "both".' }]);
  });
});

describe('keys', () => {
  test('GET /keys lists cards and fobs too, and filters by person, state and security group', async () => {
    const t = await keysTenant(ctx.service);
    const digital = await activatedKey(ctx.service, t);
    const card = await ctx.service.admin<Key>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge', security_groups: ['night'] });
    assert.equal(card.status, 201);
    assert.equal(card.body.state, 'handed_over');
    const ids = async (query: string) =>
      (await ctx.service.request<Page<Key>>('GET', `/v1/keys${query}`, { token: t.token })).body.data.map((k) => [k.id, k.type]);
    assert.deepEqual(await ids(''), [
      [digital, 'digital'],
      [card.body.id, 'card'],
    ]);
    assert.deepEqual(await ids('?security_group=night'), [[card.body.id, 'card']]);
    assert.deepEqual(await ids('?state=handed_over'), [
      [digital, 'digital'],
      [card.body.id, 'card'],
    ]);
    assert.deepEqual(await ids('?state=lost'), []);
    assert.deepEqual(await ids(`?person_id=${t.personId}&state=sent`), []);
  });

  test('PATCH: a pure rename keeps the state; the same groups in another order are no change', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const id = await activatedKey(ctx.service, t, { security_groups: ['staff', 'night'] });
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'hold' });
    const before = await lastEventId();
    const renamed = await ctx.service.request<Key>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { name: 'Renamed' } });
    assert.equal(renamed.body.state, 'handed_over');
    assert.equal(renamed.body.name, 'Renamed');
    const reordered = await ctx.service.request<Key>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { security_groups: ['night', 'staff'] } });
    assert.equal(reordered.body.state, 'handed_over');
    assert.deepEqual(await eventTypes(t.accountId, before), []);
    const empty = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: {} });
    assert.equal(empty.status, 422);
  });

  test("a key's name on more than one line, or with a bidirectional control, answers 422 on POST and PATCH and changes nothing", async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const id = await activatedKey(ctx.service, t, { security_groups: ['staff'] });
    const invitations = await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invitations');
    for (const name of ['Phone\nIMPORTANT', 'Phone\t2', 'Phone \u202e2', 'Phone\u2029']) {
      const issued = await issueKey(ctx.service, t, { name, channel: 'email' });
      assert.equal(issued.status, 422, issued.text);
      assert.deepEqual(issued.body.error.details?.map((d) => [d.field, d.code, d.message]), [['name', 'invalid', 'name must not contain control characters or line breaks.']]);
      const renamed = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { name } });
      assert.equal(renamed.status, 422, renamed.text);
      assert.deepEqual(renamed.body.error.details?.map((d) => [d.field, d.code]), [['name', 'invalid']]);
    }
    assert.deepEqual(await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM invitations'), invitations, 'no setup link was sent');
    const key = await ctx.service.request<Key>('GET', `/v1/keys/${id}`, { token: t.token });
    assert.equal(key.body.name, 'Phone key');
  });

  test('PATCH with the locking system accepting returns to handed_over at once with key.activated', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const id = await activatedKey(ctx.service, t);
    const before = await lastEventId();
    const res = await ctx.service.request<Key>('PATCH', `/v1/keys/${id}`, {
      token: t.token,
      body: { expires_at: '2031-06-30T18:00:00' },
    });
    assert.equal(res.status, 200);
    assert.equal(res.body.state, 'handed_over');
    assert.equal(res.body.expires_at, '2031-06-30T18:00:00.000Z', 'read as UTC');
    assert.deepEqual((await eventTypes(t.accountId, before)).map((e) => e.type), ['key.activated']);
  });

  test('PATCH refused by the locking system answers 409 and changes nothing', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const id = await activatedKey(ctx.service, t);
    await ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'reject' });
    const res = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { security_groups: ['night'] } });
    assert.equal(res.status, 409);
    assert.equal(res.body.error.code, 'lockingsystem_rejected');
    const key = await ctx.service.request<Key>('GET', `/v1/keys/${id}`, { token: t.token });
    assert.deepEqual([key.body.state, key.body.security_groups], ['handed_over', ['staff']]);
  });

  test('a fob managed in the locking system accepts only name', async () => {
    const t = await keysTenant(ctx.service);
    const fob = await ctx.service.admin<Key>('POST', '/admin/v1/keys', {
      person_id: t.personId,
      type: 'fob',
      name: 'Fob',
      security_groups: ['staff'],
      managed_in_locking_system: true,
    });
    const res = await ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${fob.body.id}`, {
      token: t.token,
      body: { name: 'Blue fob', security_groups: ['night'], expires_at: null },
    });
    assert.equal(res.status, 422);
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [
      ['security_groups', 'not_editable'],
      ['expires_at', 'not_editable'],
    ]);
    const renamed = await ctx.service.request<Key>('PATCH', `/v1/keys/${fob.body.id}`, { token: t.token, body: { name: 'Blue fob' } });
    assert.equal(renamed.body.name, 'Blue fob');
  });

  test('the operator cannot hand over a key that has already expired or ends before it starts', async () => {
    const t = await keysTenant(ctx.service);
    const now = (await advanceClock(ctx.service, 0)).getTime();
    const at = (ms: number) => new Date(now + ms).toISOString();
    const before = await lastEventId();
    for (const window of [
      { expires_at: at(-60_000) },
      { starts_at: at(86_400_000), expires_at: at(3_600_000) },
      { starts_at: at(3_600_000), expires_at: at(3_600_000) },
    ]) {
      const res = await ctx.service.admin<ErrorBody>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge', ...window });
      assert.equal(res.status, 422, JSON.stringify(window));
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['expires_at', 'invalid']]);
    }
    assert.deepEqual(await eventTypes(t.accountId, before), []);
    const ok = await ctx.service.admin<Key>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge', starts_at: at(3_600_000), expires_at: at(7_200_000) });
    assert.equal(ok.status, 201);
  });

  test('the operator returns a key: state returned and key.revoked', async () => {
    const t = await keysTenant(ctx.service);
    const card = await ctx.service.admin<Key>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge' });
    const before = await lastEventId();
    const returned = await ctx.service.admin<Key>('POST', `/admin/v1/keys/${card.body.id}/return`);
    assert.equal(returned.body.state, 'returned');
    const events = await eventTypes(t.accountId, before);
    assert.deepEqual(events.map((e) => e.type), ['key.revoked']);
    assert.deepEqual((events[0]?.data as { key: unknown }).key, { id: card.body.id, name: 'Badge', state: 'returned' });
  });

  test('with KEY_REVOCATION_ENABLED=false, DELETE answers 503 not_available and changes nothing', async () => {
    const noRevocation = await startService(ctx.database.db, { KEY_REVOCATION_ENABLED: 'false' });
    try {
      const t = await keysTenant(noRevocation);
      const id = await activatedKey(noRevocation, t);
      const res = await noRevocation.request<ErrorBody>('DELETE', `/v1/keys/${id}`, { token: t.token });
      assert.equal(res.status, 503);
      assert.equal(res.body.error.code, 'not_available');
      assert.equal((await noRevocation.request<Key>('GET', `/v1/keys/${id}`, { token: t.token })).body.state, 'handed_over');
    } finally {
      await noRevocation.close();
    }
  });

  test("deleting a person revokes their keys and cancels their pending invitations", async () => {
    const t = await keysTenant(ctx.service);
    const keyId = await activatedKey(ctx.service, t);
    const pending = await issueKey(ctx.service, t);
    const before = await lastEventId();
    assert.equal((await ctx.service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token })).status, 204);
    assert.deepEqual((await eventTypes(t.accountId, before)).map((e) => e.type), ['key.revoked', 'person.deleted']);
    assert.equal((await ctx.service.request('GET', `/v1/keys/${keyId}`, { token: t.token })).status, 404);
    const [invitation] = await ctx.database.db.query<{ cancelled_at: Date | null }>('SELECT cancelled_at FROM invitations WHERE id = $1', [
      pending.body.invitation_id,
    ]);
    assert.ok(invitation?.cancelled_at);
  });

  test('a key revoked while its change is written to the locking system: 404, the revocation stands, its removal queued again', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    const id = await activatedKey(ctx.service, t);
    const slow = (delay_ms: number) => ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'accept', delay_ms });
    assert.equal((await slow(1500)).status, 200);
    const change = ctx.service.request<ErrorBody>('PATCH', `/v1/keys/${id}`, { token: t.token, body: { security_groups: ['night'] } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await slow(0)).status, 200);
    assert.equal((await ctx.service.request('DELETE', `/v1/keys/${id}`, { token: t.token })).status, 204);
    const answer = await change;
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.body.error.code, 'not_found');
    const [row] = await ctx.database.db.query<{ state: string; revoked: boolean; groups: string[] }>(
      'SELECT state, revoked_at IS NOT NULL AS revoked, security_groups AS groups FROM keys WHERE id = $1',
      [id],
    );
    assert.deepEqual(row, { state: 'returned', revoked: true, groups: ['staff'] });
    const deletes = await ctx.database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM locking_system_tasks WHERE account_id = $1 AND operation = 'key.delete' AND entity_id = $2`,
      [t.accountId, String(id)],
    );
    assert.equal(deletes[0]?.n, 2, "the revocation's removal, and another after the change written meanwhile");
  });

  test("a card's credential changed while the operator takes the key back: it stays returned (opens nothing)", async () => {
    const t = await keysTenant(ctx.service);
    const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge', credential: 'wiegand26:12:34001' });
    assert.equal(card.status, 201);
    // A service on the same database whose next transaction starts just after the key was taken back.
    const { racing, beforeNext } = await racingService();
    try {
      beforeNext(() => ctx.service.admin('POST', `/admin/v1/keys/${card.body.id}/return`));
      const changed = await racing.admin<{ state: string; credential: string }>('PATCH', `/admin/v1/keys/${card.body.id}`, { credential: 'wiegand26:12:34002' });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.body.state, 'returned');
      assert.equal((await ctx.service.request<Key>('GET', `/v1/keys/${card.body.id}`, { token: t.token })).body.state, 'returned');
      // Another card taken back while it is revoked: 404, as once revoked.
      const other = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge 2' });
      beforeNext(() => ctx.service.request('DELETE', `/v1/keys/${other.body.id}`, { token: t.token }));
      const gone = await racing.admin<ErrorBody>('POST', `/admin/v1/keys/${other.body.id}/return`);
      assert.equal(gone.status, 404, gone.text);
    } finally {
      await racing.close();
    }
  });

  test('a card handed over while its person is deleted is refused (422 on person_id): no key outlives the deletion', async () => {
    const t = await keysTenant(ctx.service);
    // A service on the same database whose next transaction starts just after the person was deleted: after the
    // hand-over's check that the person is there, before its key is written.
    const { racing, beforeNext } = await racingService();
    try {
      beforeNext(() => ctx.service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token }));
      const card = await racing.admin<ErrorBody>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge', credential: 'wiegand26:12:35001' });
      assert.equal(card.status, 422, card.text);
      assert.deepEqual(card.body.error.details?.map((d) => [d.field, d.code]), [['person_id', 'invalid']]);
    } finally {
      await racing.close();
    }
    const [live] = await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM keys WHERE person_id = $1 AND revoked_at IS NULL', [t.personId]);
    assert.equal(live?.n, 0, 'no live key for the deleted person');
  });

  test('a setup link issued or sent again while its person is deleted is not sent: 404 and 409, no message to anyone', async () => {
    const t = await keysTenant(ctx.service);
    const pending = await issueKey(ctx.service, t, { channel: 'email' });
    assert.equal(pending.status, 202, pending.text);
    const { racing, beforeNext } = await racingService();
    const messages = async () => (await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbound_messages WHERE account_id = $1', [t.accountId]))[0]?.n;
    try {
      const before = await messages();
      // The deletion commits after the issue's check that the person is there, before its transaction.
      beforeNext(() => ctx.service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token }));
      const issued = await racing.request<ErrorBody>('POST', '/v1/keys', { token: t.token, body: { person_id: t.personId, security_groups: ['staff'], channel: 'email' } });
      assert.equal(issued.status, 404, issued.text);
      const resent = await racing.request<ErrorBody>('POST', `/v1/invitations/${pending.body.invitation_id}/resend`, { token: t.token, body: { channel: 'email' } });
      assert.equal(resent.status, 409, resent.text);
      assert.equal(resent.body.error.code, 'invitation_not_pending');
      assert.equal(await messages(), before, 'no message queued');
    } finally {
      await racing.close();
    }
  });

  test('a link activated while its person is deleted leaves no key: 410 link_unusable', async () => {
    const t = await keysTenant(ctx.service, { locking_system: 'sandbox' });
    assert.equal((await issueKey(ctx.service, t)).status, 202);
    const link = await latestLink(ctx.service, t.phone);
    // The activation waits on the locking system's answer (1.5 s) after claiming the link; the deletion, not
    // delayed, commits in that gap.
    const slow = (delay_ms: number) => ctx.service.admin('PUT', '/admin/v1/sandbox/locking_system', { account_id: t.accountId, mode: 'accept', delay_ms });
    assert.equal((await slow(1500)).status, 200);
    const activation = activate(ctx.service, link);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await slow(0)).status, 200);
    assert.equal((await ctx.service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token })).status, 204);
    const answer = await activation;
    assert.equal(answer.status, 410, answer.text);
    assert.equal(answer.body.error.code, 'link_unusable');
    const [live] = await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM keys WHERE person_id = $1 AND revoked_at IS NULL', [t.personId]);
    assert.equal(live?.n, 0, 'no live key for the deleted person');
    // The locking system was told of the key before the deletion won: it is told to remove it.
    const writes = await ctx.database.db.query<{ operation: string; entity_id: string }>(
      `SELECT operation, entity_id FROM sandbox_locking_system_writes WHERE account_id = $1 AND entity_id LIKE 'invitation:%' ORDER BY id`,
      [t.accountId],
    );
    assert.deepEqual(writes.map((w) => w.operation), ['key.create']);
    await advanceClock(ctx.service, 60);
    const after = await ctx.database.db.query<{ operation: string; entity_id: string }>(
      `SELECT operation, entity_id FROM sandbox_locking_system_writes WHERE account_id = $1 AND entity_id LIKE 'invitation:%' ORDER BY id`,
      [t.accountId],
    );
    assert.deepEqual(after.map((w) => [w.operation, w.entity_id]), [
      ['key.create', writes[0]?.entity_id],
      ['key.delete', writes[0]?.entity_id],
    ]);
  });
});
