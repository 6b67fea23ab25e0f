// The SDK's webhook calls and verifyWebhook() against real deliveries from a real Latchkey to a local
// HTTPS receiver.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver.ts';
import { useTestService } from '../helpers/service.ts';
import { Latchkey, verifyWebhook, WebhookVerificationError, type WebhookEvent } from '../../packages/sdk/src/index.ts';

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

let paths = 0;
/** A client with a subscription of its own to `*`, delivered to a path of its own on the receiver. */
async function subscribed() {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  const lk = new Latchkey({ apiKey: token, baseUrl: ctx.service.url });
  const path = `/sdk-${++paths}`;
  const subscription = await lk.webhooks.create({ url: receiver.url(path), events: ['*'], description: 'SDK test' });
  const received = async (type: string): Promise<Received> => {
    let found: Received | undefined;
    await waitFor(async () => {
      await advanceClock(ctx.service, 0); // runs the dispatcher
      found = receiver.received.find((r) => r.path === path && r.body.type === type);
      return found !== undefined;
    }, `a ${type} delivery`);
    return found as Received;
  };
  return { lk, subscription, received };
}

async function refusal(promise: Promise<unknown>): Promise<WebhookVerificationError> {
  const error = await promise.catch((e: unknown) => e);
  assert.ok(error instanceof WebhookVerificationError, `a WebhookVerificationError, not ${String(error)}`);
  return error;
}

describe('webhooks', () => {
  test('create shows the secret once; list, get, update, ping, deliveries and redeliver', async () => {
    const { lk, subscription } = await subscribed();
    assert.match(subscription.secret, /^whsec_/);
    assert.deepEqual([subscription.status, subscription.events, subscription.description], ['active', ['*'], 'SDK test']);
    const read = await lk.webhooks.get(subscription.id);
    assert.ok(!('secret' in read), 'reads never show the secret');
    assert.deepEqual((await lk.webhooks.list().all()).map((w) => w.id), [subscription.id]);
    const updated = await lk.webhooks.update(subscription.id, { description: 'renamed', events: ['person.created', 'key.issued'] });
    assert.deepEqual([updated.description, updated.events], ['renamed', ['person.created', 'key.issued']]);

    const ping = await lk.webhooks.ping(subscription.id);
    assert.deepEqual([ping.event_type, ping.status, ping.response_status], ['ping', 'delivered', 200]);
    const deliveries = await lk.webhooks.deliveries(subscription.id).all();
    assert.deepEqual(deliveries.map((d) => d.id), [ping.id]);
    const again = await lk.webhooks.redeliver(subscription.id, ping.id);
    assert.deepEqual([again.event_id, again.event_type], [ping.id, 'ping']);
    assert.deepEqual((await lk.webhooks.deliveries(subscription.id, { event_type: 'ping', limit: 1 }).all()).length, 2);
  });

  test('verifyWebhook accepts a real delivery and types it; lk.webhooks.verify is the same', async () => {
    const { lk, subscription, received } = await subscribed();
    const person = await lk.people.create({ name: 'Signed Person', email: 'signed@example.com' });
    const delivery = await received('person.created');
    const event: WebhookEvent = await verifyWebhook(delivery.raw, delivery.headers, subscription.secret);
    assert.equal(event.id, delivery.headers['x-service-delivery']);
    assert.equal(event.type, 'person.created');
    if (event.type === 'person.created') assert.deepEqual([event.data.id, event.data.name, event.data.email], [person.id, 'Signed Person', 'signed@example.com']);
    // As bytes and with Fetch Headers, as a receiver on another runtime would have them.
    const headers = new Headers(delivery.headers as Record<string, string>);
    const again = await lk.webhooks.verify(new TextEncoder().encode(delivery.raw), headers, subscription.secret);
    assert.deepEqual(again, event);

    await lk.webhooks.ping(subscription.id);
    const pinged = await received('ping');
    const ping = await verifyWebhook(Buffer.from(pinged.raw), pinged.headers, subscription.secret);
    assert.ok(ping.type === 'ping' && ping.data.message === 'pong');
  });

  test('refuses a tampered body, a wrong secret, an old or future timestamp and a missing or malformed signature', async () => {
    const { lk, subscription, received } = await subscribed();
    await lk.people.create({ name: 'Tamper Target' });
    const delivery = await received('person.created');
    const { secret } = subscription;
    const t = Number(/t=(\d+)/.exec(String(delivery.headers['x-service-signature']))?.[1]);

    const tampered = delivery.raw.replace('Tamper Target', 'Tamper Targes');
    assert.equal((await refusal(verifyWebhook(tampered, delivery.headers, secret))).reason, 'signature_mismatch');
    assert.equal((await refusal(verifyWebhook(delivery.raw, delivery.headers, `${secret}x`))).reason, 'signature_mismatch');
    assert.equal((await refusal(verifyWebhook(delivery.raw, delivery.headers, secret, { now: (t + 301) * 1000 }))).reason, 'timestamp_out_of_tolerance');
    assert.equal((await refusal(verifyWebhook(delivery.raw, delivery.headers, secret, { now: (t - 301) * 1000 }))).reason, 'timestamp_out_of_tolerance');
    assert.equal((await verifyWebhook(delivery.raw, delivery.headers, secret, { now: new Date((t + 300) * 1000) })).type, 'person.created', '300 s is within');

    const signature = String(delivery.headers['x-service-signature']);
    const withSignature = (value: string | undefined) => ({ ...delivery.headers, 'x-service-signature': value });
    assert.equal((await refusal(verifyWebhook(delivery.raw, withSignature(undefined), secret))).reason, 'missing_signature');
    assert.equal((await refusal(verifyWebhook(delivery.raw, withSignature('v1=abc'), secret))).reason, 'malformed_signature');
    // The signature of another moment does not carry over to a new timestamp.
    const moved = signature.replace(/t=\d+/, `t=${t + 1}`);
    assert.equal((await refusal(verifyWebhook(delivery.raw, withSignature(moved), secret, { now: t * 1000 }))).reason, 'signature_mismatch');
  });

  test('options that are not what they say fail closed: NaN, negative or infinite tolerance, NaN or invalid now, an empty secret', async () => {
    const secret = 'whsec_test-secret';
    const raw = JSON.stringify({ id: 'd1', type: 'person.created', created_at: new Date().toISOString(), data: {} });
    const dayOld = Math.floor(Date.now() / 1000) - 86_400;
    const signed = (key: string, t: number) => ({ 'x-service-signature': `t=${t},v1=${createHmac('sha256', key).update(`${t}.${raw}`).digest('hex')}` });
    const headers = signed(secret, dayOld);
    for (const options of [
      { toleranceSeconds: Number.NaN },
      { toleranceSeconds: -1 },
      { toleranceSeconds: Number.POSITIVE_INFINITY },
      { now: Number.NaN },
      { now: new Date('not a date') },
      { now: Number.POSITIVE_INFINITY },
    ]) {
      const error = await refusal(verifyWebhook(raw, headers, secret, options));
      assert.equal(error.reason, 'invalid_options', JSON.stringify(options));
    }
    // An empty secret is refused as such, however the delivery was signed.
    const emptyKeyed = signed('', Math.floor(Date.now() / 1000));
    assert.equal((await refusal(verifyWebhook(raw, emptyKeyed, ''))).reason, 'invalid_options');
    // Without the stale timestamp, the same delivery passes: the options were the only fault.
    assert.equal((await verifyWebhook(raw, headers, secret, { now: dayOld * 1000 })).type, 'person.created');
  });
});
