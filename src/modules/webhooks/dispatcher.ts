// Sends webhook deliveries: pauses subscriptions whose failures are 24 hours old (auto-pause.ts), claims due
// deliveries through the work queue (platform/work-queue.ts: FOR UPDATE SKIP LOCKED, safe with several
// workers and instances), sends them (sender.ts) and records each outcome: delivered, the next rung of the
// ladder, or `exhausted`. A NOTIFY on commit wakes it at once; the job's one-second poll is the safety net.
// The window of attempts in flight, and what it guarantees: delivery-window.ts and window-machine.ts.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { WEBHOOK_DUE_CHANNEL } from '../../platform/channels.ts';
import { purgeWhileFull, type Job } from '../../platform/jobs.ts';
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
  renewDeliveryClaims,
} from './delivery-store.ts';
import { DeliveryWindow, type Sent } from './delivery-window.ts';
import { deleteDomainEventsBefore } from './fan-out-store.ts';
import { WebhookSender, type AttemptResult, type DeliveryToSend } from './sender.ts';
import { DELIVERY_WINDOW } from './window-machine.ts';

export type { AttemptResult, DeliveryToSend } from './sender.ts';

/** Retries after 1 m, 5 m, 30 m, 2 h, 6 h and 24 h, then `exhausted` (README: Webhooks; docs/work-queue.md). */
export const DELIVERY_WORK: WorkKind = {
  name: 'webhook-deliveries',
  ladderSeconds: STANDARD_LADDER_SECONDS,
  endState: 'exhausted',
  jitterRatio: 0,
  retryAfterCapSeconds: 86_400,
  // Short, so that a dead instance's deliveries go out again within seconds; renewed while an attempt (at most
  // RESPONSE_DEADLINE_MS, 10 s) and the recording of its outcome are under way.
  leaseSeconds: 20,
  batchSize: DELIVERY_WINDOW,
};
export const PAYLOAD_RETENTION_MS = 30 * 86_400_000;
/** How often the retention job runs (PURGE_BATCH rows a statement: platform/jobs.ts). */
const RETENTION_EVERY_SECONDS = 300;

/** While deliveries keep coming, the auto-pause check runs at most once a second of the service clock. */
const PAUSE_CHECK_EVERY_MS = 1000;

export class WebhookDispatcher {
  private readonly sender: WebhookSender;
  private readonly queue: WorkQueue<DeliveryToSend>;
  /** The attempts in flight, their claims and outcomes (delivery-window.ts; its rules: window-machine.ts). */
  private readonly window: DeliveryWindow;
  /** The service clock at the last auto-pause check (ms), null before the first. */
  private lastPauseCheck: number | null = null;

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
    this.window = new DeliveryWindow({
      claim: (room) => this.claim(room),
      attempt: (delivery, cache) => this.sender.attempt(delivery, cache),
      record: (batch) => this.record(batch),
      renew: (ids) => renewDeliveryClaims(db, ids, new Date(clock.now().getTime() + DELIVERY_WORK.leaseSeconds * 1000)),
      log,
    });
  }

  /** One HTTP attempt (also the synchronous ping); never throws. */
  attempt(delivery: DeliveryToSend, secrets?: Map<string, string>): Promise<AttemptResult> {
    return this.sender.attempt(delivery, secrets);
  }

  /** Listens for new deliveries, so that they go out at once instead of at the next poll. */
  async start(): Promise<void> {
    await this.db.listen(WEBHOOK_DUE_CHANNEL, () => this.kick());
  }

  /** Sends what is due, in the window of the drain under way or a new one. */
  kick(): void {
    this.window.kick()?.catch((error: unknown) => this.log.error({ err: error }, 'webhook dispatch failed'));
  }

  /**
   * The job's run: pauses what failed for 24 hours (checked every run), then sends what is due; resolves
   * once the window has drained and every outcome is recorded. Returns how much it handled. While a drain
   * is under way it only kicks that drain and returns at once (counting 1, work under way; the job's
   * settled() waits for it), so the check still runs every second when the window is held by slow receivers.
   */
  async dispatch(): Promise<number> {
    if (this.window.closed) return 0;
    const paused = await this.checkPauses(this.clock.now(), true);
    const joined = this.window.running !== null;
    const drain = this.window.kick();
    if (drain === null) return paused; // closed meanwhile
    return paused + (joined ? 1 : await drain);
  }

  /** Claims at most `room` due deliveries, after the auto-pause check (at most once a second). */
  private async claim(room: number): Promise<{ due: DeliveryToSend[]; handled: number }> {
    const now = this.clock.now();
    const paused = await this.checkPauses(now, false);
    const due = await this.queue.claim(now, room); // the same `now`, so the same streak limit as the pause's
    return { due, handled: paused + due.length };
  }

  /** Pauses what failed for 24 hours and fails the pending deliveries of paused subscriptions; at most once a second unless `always`. */
  private async checkPauses(now: Date, always: boolean): Promise<number> {
    const at = now.getTime();
    const last = this.lastPauseCheck;
    if (!always && last !== null && at >= last && at - last < PAUSE_CHECK_EVERY_MS) return 0;
    this.lastPauseCheck = at;
    const paused = await pauseLongFailures(this.db, this.messages, this.log, streakLimitAt(now));
    await failPendingOfPausedSubscriptions(this.db, now);
    return paused;
  }

  /** A batch of outcomes: successes together (one statement), failures one by one. */
  private async record(batch: Sent[]): Promise<void> {
    await this.recordSuccesses(batch.filter((sent) => sent.result.ok));
    for (const sent of batch) if (!sent.result.ok) await this.recordFailure(sent);
  }

  private async recordSuccesses(done: Sent[]): Promise<void> {
    if (done.length === 0) return;
    await recordDelivered(
      this.db,
      done.map(({ delivery, result }) => ({ id: delivery.id, attempt: delivery.attempt, status: result.status })),
      this.clock.now(),
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
          attempt: delivery.attempt,
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
        await this.window.running?.catch(() => undefined);
      },
    };
  }

  /**
   * Payloads are kept 30 days, and so are the domain events (the outbox: its rows hold the same data, and
   * nothing reads them once they are fanned out and streamed). A door event is a row of the outbox and a delivery
   * per subscription, so each purge goes on while its batches come full (purgeWhileFull).
   */
  retentionJob(): Job {
    return {
      name: 'webhook-payload-retention',
      everySeconds: RETENTION_EVERY_SECONDS,
      run: () => purgeExpired(this.db, this.clock.now()),
    };
  }

  /** Finishes the deliveries in flight, then closes the connections. */
  async close(): Promise<void> {
    await this.window.close();
    await this.sender.close();
  }
}

/** One run of the retention job at `now`: payloads and outbox rows past PAYLOAD_RETENTION_MS; returns the rows handled. */
export async function purgeExpired(db: Database, now: Date): Promise<number> {
  const cutoff = new Date(now.getTime() - PAYLOAD_RETENTION_MS);
  return (await purgeWhileFull(() => purgePayloadsBefore(db, cutoff))) + (await purgeWhileFull(() => deleteDomainEventsBefore(db, cutoff)));
}
