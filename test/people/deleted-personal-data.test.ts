// A person's deletion and the personal data the service kept besides the webhook payloads: the person's own
// row keeps no contact details, the messages sent to them keep no address or words, and every ended message is
// deleted 30 days after it was made.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { advanceClock } from '../helpers/fixtures.ts';
import { issueKey, keysTenant } from '../helpers/keys.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

interface MessageRow {
  to_address: string;
  subject: string;
  body: string;
  status: string;
}

const messagesTo = (personId: string) =>
  ctx.database.db.query<MessageRow>(
    `SELECT m.to_address, m.subject, m.body, m.status FROM outbound_messages m JOIN invitations i ON i.id = m.invitation_id
      WHERE i.person_id = $1 ORDER BY m.id`,
    [personId],
  );

test("deleting a person empties their row's contact details and the messages sent to them", async () => {
  const t = await keysTenant(ctx.service);
  assert.equal((await ctx.service.request('PUT', `/v1/people/${t.personId}`, { token: t.token, body: { title: 'Night porter', company_name: 'Acme' } })).status, 200);
  assert.equal((await issueKey(ctx.service, t, { channel: 'both' })).status, 202);
  await advanceClock(ctx.service, 0); // the first invitation's messages are sent
  const before = await messagesTo(t.personId);
  assert.deepEqual(before.map((m) => m.status), ['sent', 'sent']);
  assert.ok(before.every((m) => m.to_address === t.phone || m.to_address === t.email));

  const card = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: t.personId, type: 'card', name: 'Badge' });
  assert.equal(card.status, 201, card.text);
  assert.equal((await ctx.service.request('DELETE', `/v1/people/${t.personId}`, { token: t.token })).status, 204);
  // The deletion's own events still carry the contact details the spec's payloads name.
  const events = await ctx.database.db.query<{ type: string; email: string | null }>(
    `SELECT type, coalesce(data->>'email', data->'person'->>'email') AS email FROM domain_events WHERE person_id = $1 AND type IN ('key.revoked', 'person.deleted') ORDER BY id`,
    [t.personId],
  );
  assert.deepEqual(events, [{ type: 'key.revoked', email: t.email }, { type: 'person.deleted', email: t.email }]);
  const [row] = await ctx.database.db.query<{ email: string | null; phone: string | null; title: string | null; company_name: string | null; name: string }>(
    'SELECT name, email, phone, title, company_name FROM people WHERE id = $1',
    [t.personId],
  );
  assert.deepEqual({ ...row, name: undefined }, { name: undefined, email: null, phone: null, title: null, company_name: null });
  const after = await messagesTo(t.personId);
  assert.deepEqual(
    after.map((m) => [m.to_address, m.subject, m.body]),
    after.map(() => ['', '', '']),
  );
  assert.deepEqual(after.map((m) => m.status), ['sent', 'sent']);
  // The person's e-mail and phone can be someone else's now.
  const again = await ctx.service.request('POST', '/v1/people', { token: t.token, body: { name: 'New Person', email: t.email, phone: t.phone } });
  assert.equal(again.status, 201, again.text);
});

test('ended messages are deleted 30 days after they were made', async () => {
  const t = await keysTenant(ctx.service);
  assert.equal((await issueKey(ctx.service, t, { channel: 'email' })).status, 202);
  await advanceClock(ctx.service, 0);
  const count = async () =>
    (await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbound_messages WHERE account_id = $1', [t.accountId]))[0]?.n;
  assert.equal(await count(), 1);
  await advanceClock(ctx.service, 29 * 86_400);
  assert.equal(await count(), 1, 'kept within 30 days');
  await advanceClock(ctx.service, 2 * 86_400);
  assert.equal(await count(), 0, 'deleted past 30 days');
});
