import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { purgeExpired } from '../../src/modules/webhooks/dispatcher.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { advanceClock, alignToMinuteStart, createAccount, createApiKey, createDepartment } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startReceiver, verifySignature, type Receiver } from '../helpers/receiver.ts';
import { startService, useTestService, type TestService } from '../helpers/service.ts';
import type { ErrorBody, Page } from '../helpers/types.ts';

interface Subscription {
  id: string;
  url: string;
  events: string[];
  status: string;
  failing_since: string | null;
  last_delivery_at: string | null;
  secret?: string;
}
interface Delivery {
  id: string;
  event_type: string;
  event_id: string;
  status: string;
  attempt: number;
  response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  payload: Record<string, unknown> | null;
}

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

async function tenant(service: TestService = ctx.service) {
  const account = await createAccount(service);
  const user = await service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops', email: `ops${account.id}@example.com` });
  const key = await createApiKey(service, account.rootLocationId, ['webhooks:manage', 'people:write'], { created_by_user_id: user.body.id });
  return { account, token: key.token, opsEmail: `ops${account.id}@example.com` };
}

async function subscribe(token: string, body: Record<string, unknown> = {}, service: TestService = ctx.service) {
  return service.request<Subscription & ErrorBody>('POST', '/v1/webhooks', { token, body: { url: receiver.url(), events: ['*'], ...body } });
}

async function createPerson(token: string, name: string) {
  const res = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name } });
  assert.equal(res.status, 201);
  return res.body.id;
}

/** Runs due jobs (the dispatcher among them). */
const runJobs = () => advanceClock(ctx.service, 0);

function receivedFor(subscriptionUrlPath: string) {
  return receiver.received.filter((r) => r.path === subscriptionUrlPath);
}

describe('subscriptions', () => {
  test('create answers 201 with the secret once; reads never show it; it is stored encrypted', async () => {
    const t = await tenant();
    const res = await subscribe(t.token, { description: 'HR sync' });
    assert.equal(res.status, 201);
    assert.match(res.body.secret ?? '', /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.equal(res.body.status, 'active');
    const read = await ctx.service.request<Subscription>('GET', `/v1/webhooks/${res.body.id}`, { token: t.token });
    assert.equal(read.body.secret, undefined);
    const list = await ctx.service.request<Page<Subscription>>('GET', '/v1/webhooks', { token: t.token });
    assert.equal(list.body.data[0]?.secret, undefined);
    const [row] = await ctx.database.db.query<{ secret_ciphertext: string }>('SELECT secret_ciphertext FROM webhook_subscriptions WHERE id = $1', [res.body.id]);
    assert.ok(row && !row.secret_ciphertext.includes(res.body.secret as string));
    const withSecret = await subscribe(t.token, { secret: 'mine' });
    assert.deepEqual(withSecret.body.error.details?.map((d) => [d.field, d.code]), [['secret', 'unknown_field']]);
  });

  test('refuses every URL that is not https to a public host', async () => {
    const t = await tenant();
    const hostile = [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://127.1/hook',
      'https://2130706433/hook',
      'https://0x7f.0.0.1/hook',
      'https://0177.0.0.1/hook',
      'https://10.0.0.8/hook',
      'https://172.16.5.4/hook',
      'https://192.168.1.1/hook',
      'https://169.254.169.254/latest',
      'https://100.64.0.1/hook',
      'https://224.0.0.1/hook',
      'https://0.0.0.0/hook',
      'https://192.0.2.10/hook',
      'https://198.51.100.7/hook',
      'https://203.0.113.9/hook',
      'https://240.1.2.3/hook',
      'https://[::1]/hook',
      'https://[fe80::1]/hook',
      'https://[fc00::1]/hook',
      'https://[::ffff:127.0.0.1]/hook',
      'https://[::ffff:7f00:1]/hook',
      'https://[64:ff9b::7f00:1]/hook',
      'https://[2002:7f00:1::1]/hook',
      'https://[2001:db8::1]/hook',
      'https://printer.local/hook',
      'https://db.internal./hook',
      'https://app.localhost/hook',
      'https://Service.INTERNAL/hook',
      `https://example.com/${'a'.repeat(2048)}`,
      'not a url',
    ];
    for (const url of hostile) {
      const res = await subscribe(t.token, { url });
      assert.equal(res.status, 422, url);
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']], url);
    }
    assert.equal((await subscribe(t.token, { url: 'https://93.184.215.14/hook' })).status, 201);
  });

  test('events: the single wildcard or known names, at least one; ping cannot be subscribed', async () => {
    const t = await tenant();
    for (const events of [[], ['ping'], ['person.exploded'], ['*', 'person.created']]) {
      const res = await subscribe(t.token, { events });
      assert.equal(res.status, 422, JSON.stringify(events));
    }
    assert.equal((await subscribe(t.token, { events: ['person.created', 'key.issued'] })).status, 201);
  });

  test('a location holds at most 5 active subscriptions; departments have their own allowance', async () => {
    const t = await tenant();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await subscribe(t.token)).body.id);
    const sixth = await subscribe(t.token);
    assert.equal(sixth.status, 422);
    assert.deepEqual(sixth.body.error.details?.map((d) => [d.field, d.code]), [['url', 'limit_reached']]);
    const dept = await createDepartment(ctx.service, t.account.rootLocationId);
    const deptKey = (await createApiKey(ctx.service, dept, ['webhooks:manage'])).token;
    assert.equal((await subscribe(deptKey)).status, 201);
    await ctx.service.request('PATCH', `/v1/webhooks/${made[0]}`, { token: t.token, body: { status: 'paused' } });
    assert.equal((await subscribe(t.token)).status, 201);
    const resume = await ctx.service.request<ErrorBody>('PATCH', `/v1/webhooks/${made[0]}`, { token: t.token, body: { status: 'active' } });
    assert.equal(resume.status, 422);
    assert.equal(resume.body.error.details?.[0]?.code, 'limit_reached');
    // The list covers the key's own location only.
    const list = await ctx.service.request<Page<Subscription>>('GET', '/v1/webhooks', { token: t.token });
    assert.equal(list.body.data.length, 6);
    assert.equal((await ctx.service.request('GET', `/v1/webhooks/${made[0]}`, { token: deptKey })).status, 404);
  });

  test('PATCH needs a field, accepts only paused or active, and a new url keeps the secret', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { events: ['person.created'] });
    assert.equal((await ctx.service.request('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: {} })).status, 422);
    assert.equal((await ctx.service.request('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { status: 'deleted' } })).status, 422);
    const moved = await ctx.service.request<Subscription>('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { url: receiver.url('/moved') } });
    assert.equal(moved.status, 200);
    assert.equal(moved.body.url, receiver.url('/moved'));
    await createPerson(t.token, 'Moved Mo');
    await runJobs();
    const [delivery] = receivedFor('/moved');
    assert.ok(delivery);
    assert.ok(verifySignature(delivery, sub.body.secret as string, Math.floor(Date.now() / 1000) + 0), 'signed with the original secret');
  });
});

describe('deliveries', () => {
  test('each event is POSTed with the spec headers, a verifiable signature and the envelope', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/envelope'), events: ['person.created'] });
    const personId = await createPerson(t.token, 'Envelope Eve');
    await runJobs();
    const [got] = receivedFor('/envelope');
    assert.ok(got, 'delivered');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['user-agent'], 'Service-Webhooks/1.0');
    assert.equal(got.headers['x-service-event'], 'person.created');
    assert.equal(got.headers['x-service-delivery'], got.body.id);
    const clock = await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
    const serviceNow = Math.floor(new Date(clock.body.now).getTime() / 1000);
    assert.ok(Math.abs(Number(got.headers['x-service-timestamp']) - serviceNow) <= 5, 'timestamp on the service clock');
    assert.ok(verifySignature(got, sub.body.secret as string, serviceNow));
    assert.ok(!verifySignature({ ...got, raw: got.raw.replace('Eve', 'Eva') }, sub.body.secret as string, serviceNow), 'a changed body fails');
    assert.deepEqual(Object.keys(got.body), ['id', 'type', 'created_at', 'data']);
    assert.equal(got.body.type, 'person.created');
    assert.equal(got.body.data.id, personId);
    assert.equal(got.body.data.name, 'Envelope Eve');

    const records = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token });
    assert.equal(records.body.data[0]?.id, got.body.id);
    assert.equal(records.body.data[0]?.status, 'delivered');
    assert.equal(records.body.data[0]?.attempt, 1);
    assert.equal(records.body.data[0]?.response_status, 200);
    const subscription = await ctx.service.request<Subscription & { last_delivery_at: string | null }>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token });
    assert.ok(subscription.body.last_delivery_at);
  });

  test('subscriptions of the event location and of the locations above it receive it', async () => {
    const t = await tenant();
    const dept = await createDepartment(ctx.service, t.account.rootLocationId, 'Dept');
    const deptKey = (await createApiKey(ctx.service, dept, ['webhooks:manage', 'people:write'])).token;
    const rootSub = await subscribe(t.token, { url: receiver.url('/root-sees'), events: ['person.created'] });
    const deptSub = await subscribe(deptKey, { url: receiver.url('/dept-sees'), events: ['person.created'] });
    assert.equal(rootSub.status, 201);
    assert.equal(deptSub.status, 201);
    await ctx.service.request('POST', '/v1/people', { token: deptKey, body: { name: 'In Dept' } });
    await createPerson(t.token, 'At Root');
    await runJobs();
    assert.deepEqual(receivedFor('/root-sees').map((r) => r.body.data.name).sort(), ['At Root', 'In Dept']);
    assert.deepEqual(receivedFor('/dept-sees').map((r) => r.body.data.name), ['In Dept']);
  });

  test('failures follow the ladder 1 m, 5 m, 30 m, 2 h, 6 h, 24 h, then exhausted; a success ends the failure streak', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/always-500'), events: ['person.created'] });
    receiver.answer({ status: 500 });
    try {
      await createPerson(t.token, 'Ladder Lou');
      await runJobs();
      const deliveryId = receivedFor('/always-500')[0]?.body.id;
      assert.ok(deliveryId);
      const read = async () =>
        (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data.find(
          (d) => d.id === deliveryId,
        ) as Delivery;
      const subscription = async () => (await ctx.service.request<Subscription>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token })).body;
      let delivery = await read();
      assert.deepEqual([delivery.status, delivery.attempt, delivery.response_status], ['pending', 1, 500]);
      const firstFailure = (await subscription()).failing_since;
      assert.ok(firstFailure);
      assert.equal((await subscription()).last_delivery_at, null, 'a failed attempt is no delivery');

      // Checked 5 s before each rung: the sandbox clock also moves in real time, which on a loaded machine can be
      // more than a second between the attempt and the next advance.
      for (const [step, seconds] of [60, 300, 1800, 7200, 21_600].entries()) {
        await advanceClock(ctx.service, seconds - 5);
        assert.equal((await read()).attempt, step + 1, `not before ${seconds} s`);
        await advanceClock(ctx.service, 5);
        delivery = await read();
        assert.equal(delivery.attempt, step + 2, `after ${seconds} s`);
        assert.equal(delivery.status, 'pending');
      }
      // Same delivery id on every attempt.
      assert.ok(receivedFor('/always-500').every((r) => r.headers['x-service-delivery'] === deliveryId));
      assert.equal((await subscription()).failing_since, firstFailure, 'the streak keeps its start');

      // Another delivery succeeds: the streak ends, so the last retry, 24 hours later, finds no 24-hour streak.
      receiver.answer({ status: 200 });
      await createPerson(t.token, 'Streak Breaker');
      await runJobs();
      const worked = await subscription();
      assert.equal(worked.failing_since, null);
      assert.ok(worked.last_delivery_at);
      receiver.answer({ status: 500 });

      await advanceClock(ctx.service, 86_400);
      delivery = await read();
      assert.deepEqual([delivery.status, delivery.attempt, delivery.next_attempt_at], ['exhausted', 7, null]);
      const after = await subscription();
      assert.equal(after.status, 'active');
      assert.ok(after.failing_since, 'the last failure starts a new streak');
      assert.equal(after.last_delivery_at, worked.last_delivery_at, 'the last success, not the last attempt');
    } finally {
      receiver.answer({ status: 200 });
    }
  });

  test('a 3xx is a failure and is not followed', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/redirects'), events: ['person.created'] });
    receiver.answer({ status: 302, headers: { location: receiver.url('/redirect-target') } });
    try {
      await createPerson(t.token, 'Redirected Rae');
      await runJobs();
    } finally {
      receiver.answer({ status: 200 });
    }
    const [delivery] = (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
    assert.deepEqual([delivery?.status, delivery?.response_status], ['pending', 302]);
    assert.equal(receivedFor('/redirect-target').length, 0);
  });

  test('a receiver that never answers fails the attempt after 10 seconds', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/hangs'), events: ['person.created'] });
    receiver.answer('hang');
    const started = Date.now();
    try {
      await createPerson(t.token, 'Patient Pat');
      await runJobs();
    } finally {
      receiver.answer({ status: 200 });
    }
    const waited = Date.now() - started;
    assert.ok(waited >= 9_500 && waited < 20_000, `waited ${waited} ms`);
    const [delivery] = (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
    assert.equal(delivery?.status, 'pending');
    assert.equal(delivery?.response_status, null);
    assert.match(delivery?.last_error ?? '', /timeout|abort/i);
  });

  test('a name that resolves to a private address is never reached at delivery time', async () => {
    // A service that does not exempt localhost, on a database of its own; the row stands for a name that
    // looked public when the subscription was made.
    const strictDatabase = await createTestDatabase();
    const strict = await startService(strictDatabase.db);
    try {
      const t = await tenant(strict);
      for (const url of ['https://localhost/hook', 'https://LOCALHOST./hook', receiver.url()]) {
        const refused = await strict.request('POST', '/v1/webhooks', { token: t.token, body: { url, events: ['*'] } });
        assert.equal(refused.status, 422, `${url} without WEBHOOK_ALLOW_HOSTS`);
      }
      const sub = await strict.request<Subscription>('POST', '/v1/webhooks', { token: t.token, body: { url: 'https://93.184.215.14/hook', events: ['person.created'] } });
      await strictDatabase.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE id = $1', [sub.body.id, receiver.url('/rebound')]);
      await strict.request('POST', '/v1/people', { token: t.token, body: { name: 'Rebound Rob' } });
      await advanceClock(strict, 0);
      assert.equal(receivedFor('/rebound').length, 0);
      const [delivery] = (await strict.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
      assert.equal(delivery?.status, 'pending');
      assert.match(delivery?.last_error ?? '', /not public/);
    } finally {
      await strict.close();
      await strictDatabase.close();
    }
  });

  test('deliveries list newest first and filter by status, event type and since', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/listing') });
    await createPerson(t.token, 'First');
    await createPerson(t.token, 'Second');
    await runJobs();
    const all = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token });
    assert.deepEqual(all.body.data.map((d) => (d.payload as { name: string }).name), ['Second', 'First']);
    const page = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?limit=1`, { token: t.token });
    const next = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?limit=1&cursor=${page.body.next_cursor}`, { token: t.token });
    assert.equal((next.body.data[0]?.payload as { name: string }).name, 'First');
    const none = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?event_type=key.issued`, { token: t.token });
    assert.deepEqual(none.body.data, []);
    const future = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?since=2999-01-01T00:00:00`, { token: t.token });
    assert.deepEqual(future.body.data, []);
    const delivered = await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries?status=delivered`, { token: t.token });
    assert.equal(delivered.body.data.length, 2, JSON.stringify(all.body.data.map((d) => [d.status, d.attempt, d.last_error])));
  });

  test('redeliver makes a new delivery of the same payload; 409 on a paused subscription', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/again') });
    await createPerson(t.token, 'Again Al');
    await runJobs();
    const [original] = (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
    assert.ok(original);
    const redelivered = await ctx.service.request<Delivery>('POST', `/v1/webhooks/${sub.body.id}/deliveries/${original.id}/redeliver`, { token: t.token });
    assert.equal(redelivered.status, 202);
    assert.notEqual(redelivered.body.id, original.id);
    assert.equal(redelivered.body.event_id, original.id);
    assert.deepEqual(redelivered.body.payload, original.payload);
    // Sent at once, without waiting for the job loop (which test services never start).
    await waitFor(() => receivedFor('/again').length === 2, 'the redelivery');
    const got = receivedFor('/again');
    assert.equal(got[1]?.body.id, redelivered.body.id);
    await ctx.service.request('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { status: 'paused' } });
    const refused = await ctx.service.request<ErrorBody>('POST', `/v1/webhooks/${sub.body.id}/deliveries/${original.id}/redeliver`, { token: t.token });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'subscription_paused');
  });

  test('ping is one synchronous attempt that touches neither the streak nor the pause', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/ping') });
    const ok = await ctx.service.request<Delivery>('POST', `/v1/webhooks/${sub.body.id}/ping`, { token: t.token });
    assert.equal(ok.status, 200);
    assert.deepEqual([ok.body.event_type, ok.body.status, ok.body.attempt, ok.body.response_status], ['ping', 'delivered', 1, 200]);
    assert.deepEqual(receivedFor('/ping')[0]?.body.data, { message: 'pong' });
    await ctx.service.request('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { status: 'paused' } });
    receiver.answer({ status: 500 });
    try {
      const failed = await ctx.service.request<Delivery>('POST', `/v1/webhooks/${sub.body.id}/ping`, { token: t.token });
      assert.deepEqual([failed.body.status, failed.body.response_status, failed.body.next_attempt_at], ['failed', 500, null]);
    } finally {
      receiver.answer({ status: 200 });
    }
    const after = await ctx.service.request<Subscription>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token });
    assert.deepEqual([after.body.status, after.body.failing_since], ['paused', null]);
  });

  test('payloads are purged after 30 days, and at once when the person is deleted', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/retention'), events: ['person.created', 'person.updated'] });
    const kept = await createPerson(t.token, 'Kept Kim');
    const deleted = await createPerson(t.token, 'Gone Gus');
    await runJobs();
    await ctx.service.request('DELETE', `/v1/people/${deleted}`, { token: t.token });
    const payloads = async () =>
      (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data.map((d) => d.payload && (d.payload as { id: string }).id);
    assert.deepEqual(await payloads(), [null, kept]);
    await advanceClock(ctx.service, 31 * 86_400);
    assert.deepEqual(await payloads(), [null, null]);
  });

  test('the retention job keeps up with a busy site: more than one batch of old payloads and outbox rows goes in one run', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/retention-volume'), events: ['person.created'] });
    const person = await createPerson(t.token, 'Busy Bea');
    await runJobs();
    const now = await advanceClock(ctx.service, 0);
    const old = new Date(now.getTime() - 31 * 86_400_000);
    // 12,000 of each, over two batches of 5,000: a site with a few subscriptions and doors makes that in hours.
    const copies = 12_000;
    await ctx.database.db.query(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, attempt, created_at)
       SELECT gen_random_uuid(), d.subscription_id, d.event_type, d.event_id, d.person_id, d.payload, 'delivered', 1, $2
         FROM webhook_deliveries d, generate_series(1, ${copies}) WHERE d.subscription_id = $1`,
      [sub.body.id, old],
    );
    // The outbox in the order it is written, old rows first: ids below every id the file's other tests made.
    await ctx.database.db.query(
      `INSERT INTO domain_events (id, type, account_id, location_id, person_id, data, occurred_at)
       SELECT -g, e.type, e.account_id, e.location_id, e.person_id, e.data, $2 FROM domain_events e, generate_series(1, ${copies}) AS g
        WHERE e.id = (SELECT min(id) FROM domain_events WHERE person_id = $1)`,
      [person, old],
    );
    const left = async () =>
      (
        await ctx.database.db.query<{ payloads: number; events: number }>(
          `SELECT (SELECT count(*) FROM webhook_deliveries WHERE payload IS NOT NULL AND created_at < $1)::int AS payloads,
                  (SELECT count(*) FROM domain_events WHERE occurred_at < $1)::int AS events`,
          [new Date(now.getTime() - 30 * 86_400_000)],
        )
      )[0];
    assert.deepEqual(await left(), { payloads: copies, events: copies });
    // One run of the job (advancing the clock would run it until it reports nothing left).
    assert.equal(await purgeExpired(ctx.database.db, now), 2 * copies);
    assert.deepEqual(await left(), { payloads: 0, events: 0 });
    const recent = await ctx.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE subscription_id = $1 AND payload IS NOT NULL', [sub.body.id]);
    assert.equal(recent[0]?.n, 1, "the delivery of today keeps its payload");
  });

  test('ping is limited to 10 a minute and redeliver to 30 a minute per API key', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/limits') });
    await alignToMinuteStart(ctx.service);
    for (let i = 0; i < 10; i++) assert.equal((await ctx.service.request('POST', `/v1/webhooks/${sub.body.id}/ping`, { token: t.token })).status, 200);
    const limited = await ctx.service.request<ErrorBody>('POST', `/v1/webhooks/${sub.body.id}/ping`, { token: t.token });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('x-ratelimit-limit'), '10');
    const [ping] = (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
    const path = `/v1/webhooks/${sub.body.id}/deliveries/${ping?.id}/redeliver`;
    for (let i = 0; i < 30; i++) assert.equal((await ctx.service.request('POST', path, { token: t.token })).status, 202);
    assert.equal((await ctx.service.request('POST', path, { token: t.token })).status, 429);
  });
});

describe('auto-pause after 24 hours of failure', () => {
  const outbox = async (service: TestService, to: string) =>
    (await service.admin<{ data: Array<{ subject: string; body: string }> }>('GET', `/admin/v1/sandbox/outbox?to=${encodeURIComponent(to)}`)).body.data;
  const clockNow = async () => new Date((await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now).getTime();

  test('pauses the moment the streak is 24 hours old, between attempts; the creator is e-mailed once; nothing is sent after', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/pause-on-time'), events: ['person.created'] });
    const read = async () => (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data[0] as Delivery;
    const subscription = async () => (await ctx.service.request<Subscription>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token })).body;
    receiver.answer({ status: 500 });
    try {
      await createPerson(t.token, 'Failing Fay');
      await runJobs();
      // Through the ladder to the sixth attempt (8 h 36 min); the seventh would be at 32 h 36 min.
      for (const seconds of [60, 300, 1800, 7200, 21_600]) await advanceClock(ctx.service, seconds);
      assert.equal(receivedFor('/pause-on-time').length, 6);
      const failingSince = new Date((await subscription()).failing_since as string).getTime();
      const dayMark = failingSince + 86_400_000;

      await advanceClock(ctx.service, (dayMark - 10_000 - (await clockNow())) / 1000);
      assert.equal((await subscription()).status, 'active', 'not paused 10 seconds before the 24 hours');
      assert.equal((await read()).status, 'pending');
      assert.deepEqual(await outbox(ctx.service, t.opsEmail), []);

      const now = await advanceClock(ctx.service, 20);
      assert.ok(now.getTime() > dayMark);
      assert.equal((await subscription()).status, 'paused', 'paused as soon as the streak is 24 hours old');
      const delivery = await read();
      assert.deepEqual([delivery.status, delivery.attempt, delivery.last_error, delivery.next_attempt_at], ['failed', 6, 'subscription paused', null]);
      const mail = await outbox(ctx.service, t.opsEmail);
      assert.equal(mail.length, 1);
      assert.match(mail[0]?.body ?? '', /paused/);

      // Past the time the seventh attempt would have been due: nothing more is sent, and no second e-mail.
      await advanceClock(ctx.service, 30 * 3600);
      assert.equal(receivedFor('/pause-on-time').length, 6);
      assert.equal((await outbox(ctx.service, t.opsEmail)).length, 1);

      // A paused subscription receives nothing.
      await createPerson(t.token, 'Not Sent');
      await runJobs();
      assert.equal(receivedFor('/pause-on-time').length, 6);
      // Resuming clears the streak.
      receiver.answer({ status: 200 });
      const resumed = await ctx.service.request<Subscription>('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { status: 'active' } });
      assert.deepEqual([resumed.body.status, resumed.body.failing_since], ['active', null]);
    } finally {
      receiver.answer({ status: 200 });
    }
  });

  test('an attempt due after the 24 hours is never sent: a clock that jumps past both pauses first', async () => {
    const t = await tenant();
    const sub = await subscribe(t.token, { url: receiver.url('/jump'), events: ['person.created'] });
    receiver.answer({ status: 500 });
    try {
      await createPerson(t.token, 'Jumping Jo');
      await runJobs();
      assert.equal(receivedFor('/jump').length, 1);
      // The retry after 1 minute is due, but so is the pause (the streak began more than 24 hours ago).
      await advanceClock(ctx.service, 25 * 3600);
      assert.equal(receivedFor('/jump').length, 1);
      const [delivery] = (await ctx.service.request<Page<Delivery>>('GET', `/v1/webhooks/${sub.body.id}/deliveries`, { token: t.token })).body.data;
      assert.deepEqual([delivery?.status, delivery?.attempt], ['failed', 1]);
      assert.equal((await outbox(ctx.service, t.opsEmail)).length, 1);
    } finally {
      receiver.answer({ status: 200 });
    }
  });

  test('several instances pause a subscription once and send one e-mail', async () => {
    const other = await startService(await ctx.database.openAnother(), { WEBHOOK_ALLOW_HOSTS: 'localhost' });
    try {
      const t = await tenant();
      const subs = await Promise.all([0, 1, 2].map((i) => subscribe(t.token, { url: receiver.url(`/instances-${i}`), events: ['person.created'] })));
      receiver.answer({ status: 500 });
      try {
        await createPerson(t.token, 'Twice Tam');
        await runJobs();
        // Every subscription's first attempt has failed (on a busy machine some take longer than one run).
        for (let i = 0; i < 200; i++) {
          const failing = await ctx.database.db.query('SELECT id FROM webhook_subscriptions WHERE id = ANY($1::uuid[]) AND failing_since IS NOT NULL', [subs.map((s) => s.body.id)]);
          if (failing.length === subs.length) break;
          await runJobs();
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      } finally {
        receiver.answer({ status: 200 });
      }
      // Every streak is 24 hours old at once; both instances then run their due work together.
      await ctx.database.db.query(
        `UPDATE webhook_subscriptions SET failing_since = failing_since - interval '25 hours' WHERE id = ANY($1::uuid[])`,
        [subs.map((s) => s.body.id)],
      );
      await Promise.all([advanceClock(ctx.service, 0), advanceClock(other, 0), advanceClock(ctx.service, 0), advanceClock(other, 0)]);
      for (const sub of subs) {
        assert.equal((await ctx.service.request<Subscription>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token })).body.status, 'paused');
      }
      await advanceClock(other, 0);
      assert.equal((await outbox(ctx.service, t.opsEmail)).length, 3, 'one e-mail per subscription');
    } finally {
      await other.close();
    }
  });
});
