// Sends webhook deliveries: claims due ones with FOR UPDATE SKIP LOCKED (safe with several workers and
// instances), POSTs them signed with undici to addresses vetted at delivery time, and applies the retry
// ladder, the failure streak and the 24-hour auto-pause.
import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns';
import type { FastifyBaseLogger } from 'fastify';
import { Agent, request } from 'undici';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { WEBHOOK_DUE_CHANNEL } from '../../platform/domain-events.ts';
import type { Job } from '../../platform/jobs.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import type { MessageQueue } from '../notifications/message-queue.ts';
import { isPublicAddress } from './url-guard.ts';

/** Seconds before retry n (1-based): 1 m, 5 m, 30 m, 2 h, 6 h, 24 h; then `exhausted`. */
export const RETRY_LADDER_SECONDS = [60, 300, 1800, 7200, 21_600, 86_400];
export const AUTO_PAUSE_AFTER_MS = 24 * 3600_000;
export const PAYLOAD_RETENTION_MS = 30 * 86_400_000;
const RESPONSE_DEADLINE_MS = 10_000;
const MAX_RESPONSE_BYTES = 4096;
const CLAIM_MS = 60_000;
const BATCH = 64;

export interface DeliveryToSend {
  id: string;
  subscription_id: string;
  event_type: string;
  payload: unknown;
  attempt: number;
  created_at: Date;
  url: string;
  secret_ciphertext: string;
}

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

export class WebhookDispatcher {
  private readonly agent: Agent;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly messages: MessageQueue,
    private readonly allowHosts: readonly string[],
    private readonly log: FastifyBaseLogger,
  ) {
    // Every connection goes to an address vetted here, at delivery time: the name is resolved, refused if
    // any of its addresses is not public, and the socket connects to the vetted address itself, so a name
    // that resolves to a private address is never reached.
    this.agent = new Agent({
      connect: {
        timeout: RESPONSE_DEADLINE_MS,
        lookup: (hostname, options, callback) => {
          lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
            if (error) return callback(error, '', 0);
            const allowed = this.allowHosts.includes(hostname.toLowerCase().replace(/\.$/, ''));
            if (!allowed && addresses.some((a) => !isPublicAddress(a.address))) {
              return callback(Object.assign(new Error(`${hostname} resolves to an address that is not public`), { code: 'EFORBIDDEN' }), '', 0);
            }
            const first = addresses[0];
            if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
            if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof addresses) => void)(null, [first]);
            callback(null, first.address, first.family);
          });
        },
      },
      headersTimeout: RESPONSE_DEADLINE_MS,
      bodyTimeout: RESPONSE_DEADLINE_MS,
    });
  }

  /** The signature header: `t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`. */
  static sign(secret: string, unixSeconds: number, body: string): string {
    return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
  }

  private secretOf(delivery: DeliveryToSend, cache: Map<string, string>): string {
    let secret = cache.get(delivery.subscription_id);
    if (secret === undefined) {
      secret = this.secrets.open(delivery.secret_ciphertext);
      cache.set(delivery.subscription_id, secret);
    }
    return secret;
  }

  /** One HTTP attempt; never throws. `secrets` caches decrypted signing secrets by subscription. */
  async attempt(delivery: DeliveryToSend, secrets = new Map<string, string>()): Promise<AttemptResult> {
    const body = JSON.stringify({
      id: delivery.id,
      type: delivery.event_type,
      created_at: delivery.created_at.toISOString(),
      data: delivery.payload,
    });
    const t = Math.floor(this.clock.now().getTime() / 1000);
    try {
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Service-Webhooks/1.0',
          'x-service-event': delivery.event_type,
          'x-service-delivery': delivery.id,
          'x-service-timestamp': String(t),
          'x-service-signature': WebhookDispatcher.sign(this.secretOf(delivery, secrets), t, body),
        },
        body,
        signal: AbortSignal.timeout(RESPONSE_DEADLINE_MS), // the 10-second deadline runs on real time
      });
      await readAtMost(response.body, MAX_RESPONSE_BYTES);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return { ok, status: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}` };
    } catch (error) {
      const message = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
      return { ok: false, status: null, error: message.slice(0, 500) };
    }
  }

  private dispatching: Promise<void> | null = null;
  private again = false;
  private closed = false;

  /** Listens for new deliveries, so that they go out at once instead of at the next poll. */
  async start(): Promise<void> {
    await this.db.listen(WEBHOOK_DUE_CHANNEL, () => this.kick());
  }

  /** Dispatches until nothing is due; a kick during a run asks for one more run. */
  kick(): void {
    if (this.closed) return;
    if (this.dispatching) {
      this.again = true;
      return;
    }
    this.dispatching = (async () => {
      do {
        this.again = false;
        try {
          while ((await this.dispatch()) > 0);
        } catch (error) {
          this.log.error({ err: error }, 'webhook dispatch failed');
        }
      } while (this.again);
    })().finally(() => {
      this.dispatching = null;
    });
  }

  /** Pauses what failed for 24 hours, then claims and sends what is due; returns how much it handled. */
  async dispatch(): Promise<number> {
    if (this.closed) return 0;
    const now = this.clock.now();
    const streakLimit = new Date(now.getTime() - AUTO_PAUSE_AFTER_MS);
    const paused = await this.pauseLongFailures(streakLimit);
    // Deliveries of a paused subscription stop: their pending retries fail.
    await this.db.query(
      `UPDATE webhook_deliveries d SET status = 'failed', last_error = 'subscription paused', next_attempt_at = NULL
         FROM webhook_subscriptions s
        WHERE d.subscription_id = s.id AND s.status = 'paused' AND d.status = 'pending'`,
    );
    // Only active subscriptions whose streak is under 24 hours are sent to, even if another instance's pause
    // has not committed yet when this one looks.
    const due = await this.db.query<DeliveryToSend>(
      `WITH claimed AS (
         UPDATE webhook_deliveries SET claimed_until = $2, attempt = attempt + 1
          WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id
                        WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.claimed_until IS NULL OR d.claimed_until < $1)
                          AND s.status = 'active' AND (s.failing_since IS NULL OR s.failing_since > $3)
                        ORDER BY d.next_attempt_at LIMIT ${BATCH} FOR UPDATE OF d SKIP LOCKED)
          RETURNING id, subscription_id, event_type, payload, attempt, created_at)
       SELECT c.*, s.url, s.secret_ciphertext FROM claimed c JOIN webhook_subscriptions s ON s.id = c.subscription_id`,
      [now, new Date(now.getTime() + CLAIM_MS), streakLimit],
    );
    const secrets = new Map<string, string>(); // one decryption per subscription and batch
    const results = await Promise.all(due.map(async (delivery) => ({ delivery, result: await this.attempt(delivery, secrets) })));
    // Successes are recorded together (the common case, one statement for the batch); failures one by one.
    await this.recordSuccesses(results.filter((r) => r.result.ok));
    for (const { delivery, result } of results) if (!result.ok) await this.recordFailure(delivery, result);
    return paused + due.length;
  }

  private async recordSuccesses(done: Array<{ delivery: DeliveryToSend; result: AttemptResult }>): Promise<void> {
    if (done.length === 0) return;
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      await tx.query(
        `UPDATE webhook_deliveries w SET status = 'delivered', response_status = d.status, last_error = NULL, delivered_at = $3,
                next_attempt_at = NULL, claimed_until = NULL
           FROM unnest($1::uuid[], $2::int[]) AS d (id, status) WHERE w.id = d.id`,
        [done.map((d) => d.delivery.id), done.map((d) => d.result.status), now],
      );
      // A success ends the failure streak.
      await tx.query('UPDATE webhook_subscriptions SET failing_since = NULL, last_delivery_at = $2 WHERE id = ANY($1::uuid[])', [
        [...new Set(done.map((d) => d.delivery.subscription_id))],
        now,
      ]);
    });
  }

  private async recordFailure(delivery: DeliveryToSend, result: AttemptResult): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction(async (tx) => {
      const delay = RETRY_LADDER_SECONDS[delivery.attempt - 1];
      await tx.query(
        `UPDATE webhook_deliveries SET status = $2, response_status = $3, last_error = $4, next_attempt_at = $5, claimed_until = NULL WHERE id = $1`,
        [
          delivery.id,
          delay === undefined ? 'exhausted' : 'pending',
          result.status,
          result.error,
          delay === undefined ? null : new Date(now.getTime() + delay * 1000),
        ],
      );
      await tx.query(
        `UPDATE webhook_subscriptions SET failing_since = COALESCE(failing_since, $2), last_delivery_at = $2 WHERE id = $1`,
        [delivery.subscription_id, now],
      );
    });
  }

  /**
   * Auto-pause is a rule of time, not of attempts (README: failure streak and auto-pause): every active
   * subscription whose streak began at or before `streakLimit` (24 hours ago) is paused, whether or not an
   * attempt is due. Its pending deliveries fail and the dashboard user who made its API key is e-mailed,
   * in one transaction. The conditional UPDATE pauses each subscription once even when several instances
   * run this together: the second waits for the first's row lock and then finds it no longer active.
   */
  private async pauseLongFailures(streakLimit: Date): Promise<number> {
    // A cheap look first (partial index): dispatch runs often, and a transaction each time would be waste.
    const due = await this.db.query(`SELECT 1 FROM webhook_subscriptions WHERE status = 'active' AND failing_since <= $1 LIMIT 1`, [streakLimit]);
    if (due.length === 0) return 0;
    const paused = await this.db.transaction(async (tx) => {
      const rows = await tx.query<{ id: string; account_id: number; url: string; email: string | null }>(
        `WITH paused AS (
           UPDATE webhook_subscriptions SET status = 'paused'
            WHERE status = 'active' AND failing_since <= $1
            RETURNING id, account_id, url, created_by_key_id)
         SELECT p.id, p.account_id, p.url, u.email
           FROM paused p
           LEFT JOIN api_keys k ON k.id = p.created_by_key_id
           LEFT JOIN dashboard_users u ON u.id = k.created_by_user_id`,
        [streakLimit],
      );
      if (rows.length === 0) return rows;
      await tx.query(
        `UPDATE webhook_deliveries SET status = 'failed', last_error = 'subscription paused', next_attempt_at = NULL
          WHERE subscription_id = ANY($1::uuid[]) AND status = 'pending'`,
        [rows.map((r) => r.id)],
      );
      for (const row of rows) {
        if (!row.email) continue;
        await this.messages.enqueue(tx, row.account_id, null, {
          channel: 'email',
          to: row.email,
          subject: 'Webhook subscription paused',
          body: [
            `Deliveries to ${row.url} have failed for 24 hours, so the subscription ${row.id} is now paused.`,
            'Fix the endpoint, resume the subscription (PATCH status "active"), and recover the gap with GET /events?since=…',
          ].join('\n\n'),
          link: null,
        });
      }
      return rows;
    });
    for (const { id } of paused) this.log.warn({ subscriptionId: id }, 'webhook subscription paused after 24 hours of failures');
    return paused.length;
  }

  job(): Job {
    return {
      name: 'webhook-deliveries',
      everySeconds: 1,
      run: () => this.dispatch(),
      settled: async () => {
        await this.dispatching;
      },
    };
  }

  /** Payloads are kept 30 days. */
  retentionJob(): Job {
    return {
      name: 'webhook-payload-retention',
      everySeconds: 3600,
      run: async () => {
        const cutoff = new Date(this.clock.now().getTime() - PAYLOAD_RETENTION_MS);
        const rows = await this.db.query(
          `UPDATE webhook_deliveries SET payload = NULL
            WHERE id IN (SELECT id FROM webhook_deliveries WHERE payload IS NOT NULL AND created_at < $1 AND status <> 'pending' LIMIT 5000)
            RETURNING id`,
          [cutoff],
        );
        return rows.length;
      },
    };
  }

  /** Finishes the deliveries in flight, then closes the connections. */
  async close(): Promise<void> {
    this.closed = true;
    this.again = false;
    await this.dispatching;
    await this.agent.close();
  }
}

/** Reads at most `limit` bytes of a response body, then drops the rest. */
async function readAtMost(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<void> {
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (read >= limit) break;
  }
  body.destroy();
}
