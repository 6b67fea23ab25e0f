// A deleted person's data in the outbox (domain_events): their events keep type and time and lose their data
// in the deletion's transaction (the deletion's own person.deleted keeps its spec'd data and is still sent),
// every event is deleted 30 days after it happened by the payload-retention job, and a purged event is never
// streamed by `GET /v1/webhooks/listen`.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { openListenStream } from '../helpers/listen.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** A listen stream of the test's service. */
const listen = (token: string, query = '') => openListenStream(ctx.service.url, token, query);

async function tenant() {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  return { account, token: key.token };
}

const eventsOf = (personId: string) =>
  ctx.database.db.query<{ type: string; data: Record<string, unknown> | null }>('SELECT type, data FROM domain_events WHERE person_id = $1 ORDER BY id', [personId]);

const PHONE = '+442079460999';

test("deleting a person empties their events' data at once; person.deleted keeps its own", async () => {
  const t = await tenant();
  const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', {
    token: t.token,
    body: { name: 'Forget Me', email: 'forget.me@example.com', phone: PHONE, company_name: 'Secret Co' },
  });
  assert.equal(person.status, 201, person.text);
  const kept = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'Kept Kim' } });
  assert.equal((await ctx.service.request('PUT', `/v1/people/${person.body.id}`, { token: t.token, body: { title: 'CFO' } })).status, 200);
  assert.equal((await eventsOf(person.body.id)).filter((e) => e.data !== null).length, 2);

  assert.equal((await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token: t.token })).status, 204);
  const events = await eventsOf(person.body.id);
  assert.deepEqual(
    events.map((e) => [e.type, e.data]),
    [
      ['person.created', null],
      ['person.updated', null],
      ['person.deleted', { id: person.body.id, name: 'Forget Me', email: 'forget.me@example.com', location: { id: t.account.rootLocationId, name: 'Acme' } }],
    ],
  );
  const leftovers = await ctx.database.db.query(`SELECT id FROM domain_events WHERE data::text LIKE '%' || $1 || '%' OR data::text LIKE '%Secret Co%'`, [PHONE]);
  assert.deepEqual(leftovers, [], 'the phone and the company are nowhere in the outbox');
  // Another person's events keep their data.
  assert.equal((await eventsOf(kept.body.id))[0]?.data?.name, 'Kept Kim');
});

test('the retention job deletes domain events 30 days after they happened, and only those', async () => {
  const t = await tenant();
  const old = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'Old Olga', email: 'olga@example.com' } });
  assert.equal(old.status, 201, old.text);
  assert.equal((await ctx.service.request('DELETE', `/v1/people/${old.body.id}`, { token: t.token })).status, 204);
  await advanceClock(ctx.service, 29 * 86_400);
  assert.equal((await eventsOf(old.body.id)).length, 2, 'kept within 30 days');
  const recent = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token: t.token, body: { name: 'Recent Rita' } });
  await advanceClock(ctx.service, 2 * 86_400);
  assert.deepEqual(await eventsOf(old.body.id), [], 'gone past 30 days, person.deleted with its name and e-mail included');
  assert.deepEqual((await eventsOf(recent.body.id)).map((e) => e.type), ['person.created']);
});

test('a listen stream never streams an event whose data was purged', async () => {
  const t = await tenant();
  const stream = await listen(t.token);
  await stream.ready();
  // An event purged before the stream read it: written as the deletion leaves it (its trigger wakes the stream).
  const now = await advanceClock(ctx.service, 0);
  await ctx.database.db.query(
    `INSERT INTO domain_events (type, account_id, location_id, person_id, data, occurred_at) VALUES ('person.updated', $1, $2, $3, 'null'::jsonb, $4)`,
    [t.account.id, t.account.rootLocationId, randomUUID(), now],
  );
  const after = await ctx.service.request('POST', '/v1/people', { token: t.token, body: { name: 'After Purge' } });
  assert.equal(after.status, 201, after.text);
  await waitFor(() => stream.deliveries().some((d) => d.body.includes('After Purge')), 'the later event on the stream');
  await stream.close();
  const bodies = stream.deliveries().map((d) => JSON.parse(d.body) as { type: string; data: unknown });
  assert.deepEqual(bodies.map((b) => b.type), ['person.created']);
  assert.ok(bodies.every((b) => b.data !== null));
});
