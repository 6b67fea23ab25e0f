// What a receiver can de-duplicate on (docs/webhooks.md, "What a delivery looks like"): the delivery id
// (X-Service-Delivery, the body's `id`) is the same on every attempt of one delivery and differs between
// deliveries; `data.id` with `type` is shared by distinct events (two person.updated of one person) or absent
// (key.issued), so the guide must not give it as the key.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { useTestService } from '../helpers/service.ts';
import type { Page } from '../helpers/types.ts';

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

test('one delivery keeps its id across retries; distinct events sharing data.id and type, or without data.id, have distinct delivery ids', async () => {
  const { rootLocationId } = await createAccount(ctx.service);
  await createSecurityGroup(ctx.service, rootLocationId, 'staff');
  await createLock(ctx.service, rootLocationId, { name: 'Front door', security_groups: ['staff'] });
  const { token } = await createApiKey(ctx.service, rootLocationId, ['people:write', 'keys:write', 'webhooks:manage']);
  const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token, body: { url: receiver.url('/dedupe'), events: ['*'] } });
  assert.equal(sub.status, 201, sub.text);
  const received = () => receiver.received.filter((r) => r.path === '/dedupe');

  // A retry: the first attempt fails, the second (a minute later) carries the same id, header and body alike.
  receiver.answer({ status: 500 });
  const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Dee Dupe', phone: '+442079460777' } });
  assert.equal(person.status, 201, person.text);
  await advanceClock(ctx.service, 0);
  receiver.answer({ status: 200 });
  await advanceClock(ctx.service, 61);
  const created = received().filter((r) => r.body.type === 'person.created');
  assert.equal(created.length, 2, 'the failed attempt and its retry');
  assert.equal(created[0]?.headers['x-service-delivery'], created[1]?.headers['x-service-delivery']);
  assert.equal(created[0]?.body.id, created[1]?.body.id);
  assert.equal(created[0]?.headers['x-service-delivery'], created[0]?.body.id);

  // Two person.updated of one person: the same data.id and type, two deliveries.
  for (const title of ['Engineer', 'Manager']) {
    assert.equal((await ctx.service.request('PUT', `/v1/people/${person.body.id}`, { token, body: { title } })).status, 200);
  }
  // Two key.issued (an invitation and its resend): no data.id at all, two deliveries.
  const key = await ctx.service.request<{ invitation_id: number }>('POST', '/v1/keys', { token, body: { person_id: person.body.id, security_groups: ['staff'] } });
  assert.equal(key.status, 202, key.text);
  assert.equal((await ctx.service.request('POST', `/v1/invitations/${key.body.invitation_id}/resend`, { token })).status, 202);
  await advanceClock(ctx.service, 0);

  const updated = received().filter((r) => r.body.type === 'person.updated');
  assert.deepEqual(updated.map((r) => [r.body.data.id, r.body.data.title]), [
    [person.body.id, 'Engineer'],
    [person.body.id, 'Manager'],
  ]);
  assert.notEqual(updated[0]?.body.id, updated[1]?.body.id);
  const issued = received().filter((r) => r.body.type === 'key.issued');
  assert.equal(issued.length, 2);
  assert.ok(issued.every((r) => !('id' in r.body.data)), 'key.issued has no data.id');
  assert.notEqual(issued[0]?.body.id, issued[1]?.body.id);

  // A redelivery asked for is a new delivery, with a new id.
  const deliveries = await ctx.service.request<Page<{ id: string; event_type: string }>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?event_type=person.created`, { token });
  const original = deliveries.body.data[0]?.id as string;
  const again = await ctx.service.request<{ id: string; event_id: string }>('POST', `/v1/webhooks/${sub.body.id}/deliveries/${original}/redeliver`, { token });
  assert.equal(again.status, 202, again.text);
  assert.equal(again.body.event_id, original);
  await advanceClock(ctx.service, 0);
  const last = received().at(-1);
  assert.deepEqual([last?.body.type, last?.body.id, last?.headers['x-service-delivery']], ['person.created', again.body.id, again.body.id]);
  assert.notEqual(again.body.id, original);
});

test('the guide gives the delivery id as the key to de-duplicate on, not data.id with type alone', () => {
  const guide = readFileSync('docs/webhooks.md', 'utf8');
  assert.match(guide, /\*\*De-duplicate on the delivery id\*\*, `X-Service-Delivery`/);
  assert.doesNotMatch(guide, /De-duplicate\s+on `data\.id` together with `type`/);
});
