// Webhook deliveries on PostgreSQL to the tests' local HTTPS receiver: a backlog drained, then the
// event-to-delivery latency of events made through the API.
import path from 'node:path';
import type pg from 'pg';
import { WEBHOOK_DUE_CHANNEL } from '../src/platform/channels.ts';
import { startReceiver } from '../test/helpers/receiver.ts';
import { admin, startBenchService, percentile, stop } from './common.ts';

export interface WebhookFigures {
  backlog: number;
  perSecond: number;
  latencyP50: number;
  latencyP99: number;
  latencyCount: number;
}

/**
 * Webhook deliveries on PostgreSQL to a local HTTPS receiver in this process: a backlog of deliveries
 * drained at 64 in flight (deliveries per second), then events made one by one through the API
 * (event-to-delivery latency: the envelope's created_at to the receiver's clock).
 */
export async function webhookRuns(pgUrl: string, client: pg.Client, schema: string): Promise<WebhookFigures> {
  const receiver = await startReceiver();
  const arrivals = receiver.received;
  const receiverUrl = receiver.url();
  const server = await startBenchService({
    DATABASE_URL: pgUrl,
    WEBHOOK_ALLOW_HOSTS: 'localhost',
    NODE_EXTRA_CA_CERTS: path.resolve('test/fixtures/tls/cert.pem'),
  });
  try {
    const account = await admin<{ root_location: { id: number } }>(server.url, 'POST', '/admin/v1/accounts', { name: 'Hooks' });
    const key = await admin<{ token: string }>(server.url, 'POST', '/admin/v1/api_keys', {
      location_id: account.root_location.id,
      name: 'hooks',
      scopes: ['webhooks:manage', 'people:write'],
    });
    const headers = { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' };
    const sub = (await (
      await fetch(`${server.url}/v1/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: receiverUrl, events: ['*'] }) })
    ).json()) as { id: string };

    const backlog = 10_000;
    await client.query(
      `INSERT INTO ${schema}.webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, next_attempt_at, created_at)
       SELECT gen_random_uuid(), $1, 'person.created', g::text, jsonb_build_object('id', g, 'name', 'Bench ' || g), 'pending', now(), now()
         FROM generate_series(1, $2::int) g`,
      [sub.id, backlog],
    );
    const started = Date.now();
    await client.query(`SELECT pg_notify('latchkey_${schema}_${WEBHOOK_DUE_CHANNEL}', '')`);
    while (arrivals.length < backlog && Date.now() - started < 120_000) await new Promise((resolve) => setTimeout(resolve, 20));
    const drained = (arrivals[arrivals.length - 1]?.at ?? Date.now()) - started;
    const perSecond = Math.round((arrivals.length / drained) * 1000);

    arrivals.length = 0;
    const events = 400;
    for (let i = 0; i < events; i += 4) {
      await Promise.all(
        Array.from({ length: 4 }, (_, j) =>
          fetch(`${server.url}/v1/people`, { method: 'POST', headers, body: JSON.stringify({ name: `Latency ${i + j}` }) }).then((r) => r.arrayBuffer()),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const waitUntil = Date.now() + 10_000;
    while (arrivals.length < events && Date.now() < waitUntil) await new Promise((resolve) => setTimeout(resolve, 20));
    const latencies = arrivals.map((a) => a.at - new Date(a.body.created_at).getTime()).sort((a, b) => a - b);
    return { backlog, perSecond, latencyP50: percentile(latencies, 50), latencyP99: percentile(latencies, 99), latencyCount: latencies.length };
  } finally {
    await stop(server);
    await receiver.close();
  }
}

