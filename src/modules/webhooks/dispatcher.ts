// Sends webhook deliveries: pauses subscriptions whose failures are 24 hours old (auto-pause.ts), claims due
// deliveries through the work queue (platform/work-queue.ts: FOR UPDATE SKIP LOCKED, safe with several
// workers and instances), sends them (sender.ts) and records each outcome: delivered, the next rung of the
// ladder, or `exhausted`. A NOTIFY on commit wakes it at once; the job's one-second poll is the safety net.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { WEBHOOK_DUE_CHANNEL } from '../../platform/domain-events.ts';
import type { Job } from '../../platform/jobs.ts';
import { NO_METRICS, type WebhookMetrics } from '../../platform/metrics.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { STANDARD_LADDER_SECONDS, WorkQueue, type WorkKind } from '../../platform/work-queue.ts';
import type { MessageQueue } from '../notifications/index.ts';
import { pauseLongFailures, streakLimitAt } from './auto-pause.ts';
import {
  claimDueDeliveries,
  failPendingOfPausedSubscriptions,
  pendingSummary,
  purgePayloadsBefore,
  recordDeliveryFailure,
  recordDelivered,
} from './delivery-store.ts';
import { WebhookSender, type AttemptResult, type DeliveryToSend } from './sender.ts';

export type { AttemptResult, DeliveryToSend } from './sender.ts';

/** Retries after 1 m, 5 m, 30 m, 2 h, 6 h and 24 h, then `exhausted` (README: Webhooks; docs/work-queue.md). */
export const DELIVERY_WORK: WorkKind = {
  name: 'webhook-deliveries',
  ladderSeconds: STANDARD_LADDER_SECONDS,
  endState: 'exhausted',
  jitterRatio: 0,
  retryAfterCapSeconds: 86_400,
  leaseSeconds: 60,
  batchSize: 64,
};
export const PAYLOAD_RETENTION_MS = 30 * 86_400_000;

interface Sent {
  delivery: DeliveryToSend;
  result: AttemptResult;
  seconds: number;
}

export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private readonly queue: WorkQueue<DeliveryToSend>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    secrets: SecretBox,
    private readonly messages: MessageQueue,
    allowHosts: readonly string[],
    private readonly log: FastifyBaseLogger,
    private readonly metrics: WebhookMetrics = NO_METRICS,
  ) {
    this.sender = new WebhookSender(clock, secrets, allowHosts);
    // Only active subscriptions whose streak is under 24 hours at the claim's `now` are sent to.
    this.queue = new WorkQueue(DELIVERY_WORK, { claimDue: (lease) => claimDueDeliveries(db, lease, streakLimitAt(lease.now)) }, clock);
  }

  /** One HTTP attempt (also the synchronous ping); never throws. */
  attempt(delivery: DeliveryToSend, secrets?: Map<string, string>): Promise<AttemptResult> {
    return this.sender.attempt(delivery, secrets);
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
    const paused = await pauseLongFailures(this.db, this.messages, this.log, streakLimitAt(now));
    await failPendingOfPausedSubscriptions(this.db);
    const due = await this.queue.claim(now); // the same `now`, so the same streak limit as the pause's
    const secrets = new Map<string, string>(); // one decryption per subscription and batch
    const results = await Promise.all(
      due.map(async (delivery): Promise<Sent> => {
        const started = performance.now();
        const result = await this.sender.attempt(delivery, secrets);
        return { delivery, result, seconds: (performance.now() - started) / 1000 };
      }),
    );
    // Successes are recorded together (the common case, one statement for the batch); failures one by one.
    await this.recordSuccesses(results.filter((r) => r.result.ok));
    for (const sent of results) if (!sent.result.ok) await this.recordFailure(sent);
    return paused + due.length;
  }

  private async recordSuccesses(done: Sent[]): Promise<void> {
    if (done.length === 0) return;
    const now = this.clock.now();
    await this.db.transaction((tx) =>
      recordDelivered(
        tx,
        done.map(({ delivery, result }) => ({ id: delivery.id, subscriptionId: delivery.subscription_id, status: result.status })),
        now,
      ),
    );
    for (const { seconds } of done) this.metrics.attempted('delivered', seconds);
  }

  private async recordFailure({ delivery, result, seconds }: Sent): Promise<void> {
    const now = this.clock.now();
    const next = this.queue.next(delivery.attempt);
    await this.db.transaction((tx) =>
      recordDeliveryFailure(
        tx,
        {
          id: delivery.id,
          subscriptionId: delivery.subscription_id,
          status: next.retry ? 'pending' : next.endState,
          nextAttemptAt: next.retry ? next.at : null,
          responseStatus: result.status,
          error: result.error,
        },
        now,
      ),
    );
    this.metrics.attempted(next.retry ? 'retry_scheduled' : 'exhausted', seconds);
  }

  /** Deliveries pending, and the age of the oldest on the service clock (null: none pending). */
  async pending(): Promise<{ count: number; oldestAgeSeconds: number | null }> {
    const { count, oldest } = await pendingSummary(this.db);
    return { count, oldestAgeSeconds: oldest ? Math.max(0, (this.clock.now().getTime() - new Date(oldest).getTime()) / 1000) : null };
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
      run: () => purgePayloadsBefore(this.db, new Date(this.clock.now().getTime() - PAYLOAD_RETENTION_MS)),
    };
  }

  /** Finishes the deliveries in flight, then closes the connections. */
  async close(): Promise<void> {
    this.closed = true;
    this.again = false;
    await this.dispatching;
    await this.sender.close();
  }
}
