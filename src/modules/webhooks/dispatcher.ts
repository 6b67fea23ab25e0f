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
  renewDeliveryClaims,
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
  // Short, so that a dead instance's deliveries go out again within seconds; renewed while an attempt (at most
  // RESPONSE_DEADLINE_MS, 10 s) and the recording of its outcome are under way.
  leaseSeconds: 20,
  batchSize: 64,
};
/** How often the claims held are renewed: several times within a lease. */
const RENEW_EVERY_MS = 5000;
export const PAYLOAD_RETENTION_MS = 30 * 86_400_000;

interface Sent {
  delivery: DeliveryToSend;
  result: AttemptResult;
  seconds: number;
}

/** At most this many attempts are in flight per instance (README: Webhooks: sending). */
const DELIVERY_WINDOW = DELIVERY_WORK.batchSize;
/**
 * While a backlog drains, free slots are claimed once at least this many are free: a claim per half window
 * instead of one per freed slot keeps the statements per delivery low (bench: 16 cost more CPU per delivery
 * and was no faster). A kick (new work) or an empty window claims whatever is free at once.
 */
const REFILL_AT = 32;
/** Claims that may run together (each for the slots free when it starts), so the window refills while one is on its way. */
const CLAIMS_AT_ONCE = 2;
/** Outcomes are recorded once this many have come, or after RECORD_WAIT_MS, or when nothing else is in flight. */
const RECORD_BATCH = 32;
const RECORD_WAIT_MS = 3;
/** While deliveries keep coming, the auto-pause check runs at most once a second of the service clock. */
const PAUSE_CHECK_EVERY_MS = 1000;

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

  /** The run that keeps the window full until nothing is due; null when idle. */
  private draining: Promise<number> | null = null;
  /** A kick or job run during a drain: what was not due at the drain's last claim may be due now. */
  private again = false;
  /** Kicks and job runs so far: a claim that came back short ends the claiming only if none came meanwhile. */
  private asked = 0;
  private closed = false;
  private inFlight = 0;
  /** Attempts answered and not yet recorded. */
  private unrecorded: Sent[] = [];
  private recording: Promise<void> | null = null;
  /** Deliveries claimed and not yet recorded, whose claims are renewed every RENEW_EVERY_MS. */
  private readonly held = new Set<string>();
  private renewing: NodeJS.Timeout | null = null;
  private waiters: Array<() => void> = [];
  /** The service clock at the last auto-pause check (ms), null before the first. */
  private lastPauseCheck: number | null = null;

  /** Listens for new deliveries, so that they go out at once instead of at the next poll. */
  async start(): Promise<void> {
    await this.db.listen(WEBHOOK_DUE_CHANNEL, () => this.kick());
  }

  /** Sends what is due, in the window of the drain under way or a new one. */
  kick(): void {
    if (this.closed) return;
    this.drain().catch((error: unknown) => this.log.error({ err: error }, 'webhook dispatch failed'));
  }

  /**
   * The job's run: pauses what failed for 24 hours (checked every run), then sends what is due; resolves
   * once the window has drained and every outcome is recorded. Returns how much it handled. While a drain
   * is under way it only asks that drain for one more claim and returns at once (counting 1, work under
   * way; the job's settled() waits for it), so the check still runs every second when the window is held
   * by slow receivers.
   */
  async dispatch(): Promise<number> {
    if (this.closed) return 0;
    const paused = await this.checkPauses(this.clock.now(), true);
    if (this.draining) {
      this.again = true;
      this.asked++;
      this.wake();
      return paused + 1;
    }
    return paused + (await this.drain());
  }

  private drain(): Promise<number> {
    if (this.draining) {
      this.again = true;
      this.asked++;
      this.wake();
      return this.draining;
    }
    this.again = false;
    const run = this.fill();
    this.draining = run;
    return run;
  }

  /**
   * Keeps up to DELIVERY_WINDOW attempts in flight: claims as slots free up instead of waiting for a whole
   * batch, so one slow receiver holds one slot, not the next 63 deliveries. Up to CLAIMS_AT_ONCE claims run
   * together, each for the slots free when it starts, so the window does not empty while a claim is on its
   * way. Outcomes are recorded as they come, in small batches. A claim that fails stops the claiming; what
   * is in flight still finishes.
   */
  private async fill(): Promise<number> {
    await Promise.resolve(); // `draining` is set before this run can end
    // more: the last claim filled the room it had, so more may be due; kicked: new work was announced since
    // the last claim started, so a free slot is claimed at once (a new event waits for no refill
    // threshold); claiming: claims under way; reserved: the slots they claim for. (An object: the claims'
    // callbacks change it.)
    const run = { handled: 0, more: true, kicked: true, failure: null as { error: unknown } | null, claiming: 0, reserved: 0 };
    for (;;) {
      if (this.again) {
        this.again = false;
        run.more = true;
        run.kicked = true;
      }
      const room = DELIVERY_WINDOW - this.inFlight - run.reserved;
      const claimable = run.more && !this.closed && run.failure === null && this.unrecorded.length < DELIVERY_WINDOW;
      if (claimable && run.claiming < CLAIMS_AT_ONCE && room > 0 && (room >= REFILL_AT || run.kicked || this.inFlight + run.reserved === 0)) {
        run.kicked = false;
        run.claiming++;
        run.reserved += room;
        const asked = this.asked;
        void this.claimAndSend(room)
          .then(
            (count) => {
              run.handled += count;
              // Short: nothing else was due when it ran (SKIP LOCKED only skips rows claimed elsewhere),
              // unless a kick came after it started: what that kick announced may have missed it.
              if (count < room && this.asked === asked) run.more = false;
            },
            (error: unknown) => {
              run.failure ??= { error };
            },
          )
          .finally(() => {
            run.claiming--;
            run.reserved -= room;
            this.wake();
          });
        continue;
      }
      const settled = run.claiming === 0 && this.inFlight === 0 && this.unrecorded.length === 0 && this.recording === null;
      if (settled && !claimable) break;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    this.draining = null; // in the same turn as the last look at `again`, so no kick is lost
    if (run.failure) throw run.failure.error;
    return run.handled;
  }

  /** Claims at most `room` due deliveries and starts sending them; returns how much it handled. */
  private async claimAndSend(room: number): Promise<number> {
    const now = this.clock.now();
    const paused = await this.checkPauses(now, false);
    const due = await this.queue.claim(now, room); // the same `now`, so the same streak limit as the pause's
    this.send(due);
    return paused + due.length;
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Pauses what failed for 24 hours and fails the pending deliveries of paused subscriptions; at most once a second unless `always`. */
  private async checkPauses(now: Date, always: boolean): Promise<number> {
    const at = now.getTime();
    const last = this.lastPauseCheck;
    if (!always && last !== null && at >= last && at - last < PAUSE_CHECK_EVERY_MS) return 0;
    this.lastPauseCheck = at;
    const paused = await pauseLongFailures(this.db, this.messages, this.log, streakLimitAt(now));
    await failPendingOfPausedSubscriptions(this.db);
    return paused;
  }

  private send(due: DeliveryToSend[]): void {
    const secrets = new Map<string, string>(); // one decryption per subscription and claim
    for (const delivery of due) this.held.add(delivery.id);
    if (due.length > 0) this.renewing ??= setInterval(() => void this.renewClaims(), RENEW_EVERY_MS).unref();
    for (const delivery of due) {
      this.inFlight++;
      const started = performance.now();
      void this.sender.attempt(delivery, secrets).then((result) => {
        this.inFlight--;
        this.unrecorded.push({ delivery, result, seconds: (performance.now() - started) / 1000 });
        this.record();
        this.wake();
      });
    }
  }

  /**
   * Records what has been answered, one batch at a time: successes together (one statement), failures one
   * by one. A batch that cannot be recorded stays claimed; its lease brings it back (at least once).
   */
  private record(): void {
    if (this.recording) return;
    this.recording = (async () => {
      while (this.unrecorded.length > 0) {
        // A few milliseconds' wait makes one statement of many outcomes; the slots are already free.
        if (this.unrecorded.length < RECORD_BATCH && this.inFlight > 0 && !this.closed) await new Promise((resolve) => setTimeout(resolve, RECORD_WAIT_MS));
        const batch = this.unrecorded.splice(0);
        try {
          await this.recordSuccesses(batch.filter((sent) => sent.result.ok));
          for (const sent of batch) if (!sent.result.ok) await this.recordFailure(sent);
        } catch (error) {
          this.log.error({ err: error }, 'webhook outcomes not recorded; their claims run out and they are sent again');
        }
        for (const sent of batch) this.held.delete(sent.delivery.id);
      }
    })().finally(() => {
      this.recording = null;
      this.wake();
    });
  }

  private async recordSuccesses(done: Sent[]): Promise<void> {
    if (done.length === 0) return;
    await recordDelivered(
      this.db,
      done.map(({ delivery, result }) => ({ id: delivery.id, status: result.status })),
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

  private async renewClaims(): Promise<void> {
    if (this.held.size === 0) {
      if (this.renewing) clearInterval(this.renewing);
      this.renewing = null;
      return;
    }
    try {
      await renewDeliveryClaims(this.db, [...this.held], new Date(this.clock.now().getTime() + DELIVERY_WORK.leaseSeconds * 1000));
    } catch (error) {
      this.log.warn({ err: error }, 'webhook delivery claims not renewed; they may be sent again by another instance');
    }
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
        await this.draining?.catch(() => undefined);
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
    this.wake();
    await this.draining?.catch(() => undefined);
    if (this.renewing) clearInterval(this.renewing);
    this.renewing = null;
    await this.sender.close();
  }
}
