// Outgoing SMS and e-mail: queued in the database in the transaction that caused them (so a crash never
// loses one), sent after commit by a job that claims due messages through the work queue (platform/work-queue.ts:
// safe with several instances), retried on its ladder so that a failing provider never fails the API call.
//
// A setup link works like a password until it is used, so it stays in the database only while sending
// needs it (README: Security): the message as it will be sent (body and link) waits sealed under the
// server key (secret-box), next to a readable body with the link cut out. Once the message is sent,
// finally fails or is withdrawn (a resend made a new link, the invitation was cancelled), the sealed copy
// is dropped and only the readable body remains.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { purgeWhileFull, type Job } from '../../platform/jobs.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { STANDARD_LADDER_SECONDS, WorkQueue, type WorkKind } from '../../platform/work-queue.ts';
import { SEND_TIMEOUT_MS, type Channel, type Notifier, type OutgoingMessage } from './notifier.ts';
import { LINK_REMOVED } from './templates.ts';
import {
  claimDueMessages,
  endMessage,
  insertMessage,
  markMessageSent,
  messageStatus,
  releaseMessages,
  scheduleMessageRetry,
  withdrawMessages,
  withdrawWaitingBefore,
  forgetRecipient,
  deleteEndedMessagesBefore,
  type MessageRow,
} from './store.ts';

/** Retries after 1 m, 5 m, 30 m, 2 h, 6 h and 24 h, then `failed` (README: Messages; docs/work-queue.md). */
export const MESSAGE_WORK: WorkKind = {
  name: 'messages',
  ladderSeconds: STANDARD_LADDER_SECONDS,
  endState: 'failed',
  jitterRatio: 0,
  retryAfterCapSeconds: 86_400,
  leaseSeconds: 120,
  batchSize: 20,
};

/** Room a lease keeps after a send's bound (SEND_TIMEOUT_MS) for recording what the provider answered. */
export const RECORD_MARGIN_MS = 10_000;
/** Ended messages (their address, subject and readable body) are kept 30 days, as webhook payloads are. */
export const MESSAGE_RETENTION_MS = 30 * 86_400_000;

/**
 * A claimed message is sent only while its lease outlasts the longest the send may take plus the write after
 * it: otherwise it could still be at the provider when the lease runs out and another instance claims it.
 */
export function mayStartSend(channel: Channel, leaseEnds: Date, now: Date): boolean {
  return leaseEnds.getTime() - now.getTime() >= SEND_TIMEOUT_MS[channel] + RECORD_MARGIN_MS;
}

if (MESSAGE_WORK.leaseSeconds * 1000 < Math.max(...Object.values(SEND_TIMEOUT_MS)) + RECORD_MARGIN_MS) {
  throw new RangeError('the message lease is shorter than a send may take');
}

/**
 * The port through which the invitation's owner learns that the provider accepted one of its messages
 * (it keeps `sent.sms_at` / `sent.email_at`). Called inside the transaction that marks the message sent,
 * before the message's own row: the order of a resend or cancel, so the two never deadlock.
 */
export type InvitationMessageSent = (tx: Queryable, sent: { invitationId: number; channel: Channel; sentAt: Date }) => Promise<void>;

/**
 * A provider's refusal may quote the recipient ("550 <ann@example.com>: Recipient address rejected"):
 * the log never holds it (README: Security). A phone number is matched with or without its `+`.
 */
function withoutRecipient(text: string, to: string): string {
  const pattern = to.replace(/^\+/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (pattern === '') return text;
  return text.replace(new RegExp(pattern, 'gi'), '[recipient]');
}

/** Rolls back the sent time of a message that was no longer pending when its provider accepted it. */
class NoLongerPending extends Error {}

interface SealedContent {
  body: string;
  link: string | null;
}

export class MessageQueue {
  private readonly queue: WorkQueue<MessageRow>;
  /** The dispatch under way (see dispatch); the next one starts after it. */
  private running: Promise<number> = Promise.resolve(0);

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    /** A channel without a notifier is not configured here: its messages are left queued (notifierFor). */
    private readonly notifiers: Partial<Record<Channel, Notifier>>,
    private readonly box: SecretBox,
    private readonly log: FastifyBaseLogger,
    private readonly invitationMessageSent: InvitationMessageSent,
  ) {
    const channels = (Object.keys(notifiers) as Channel[]).filter((channel) => notifiers[channel]);
    this.queue = new WorkQueue(MESSAGE_WORK, { claimDue: (lease) => claimDueMessages(db, lease, channels) }, clock);
  }

  /** Queues a message inside the caller's transaction. */
  async enqueue(tx: Queryable, accountId: number, invitationId: number | null, message: OutgoingMessage): Promise<void> {
    const readable = message.link ? message.body.split(message.link).join(LINK_REMOVED) : message.body;
    const sealed = this.box.seal(JSON.stringify({ body: message.body, link: message.link } satisfies SealedContent));
    await insertMessage(tx, {
      accountId,
      invitationId,
      channel: message.channel,
      to: message.to,
      subject: message.subject,
      readableBody: readable,
      sealedContent: sealed,
      queuedAt: this.clock.now(),
    });
  }

  /**
   * The messages of these invitations still waiting are not sent: the link they carry no longer works
   * (a resend replaced it, the invitation was cancelled). Their sealed content is dropped at once.
   */
  async withdraw(tx: Queryable, invitationIds: number[]): Promise<void> {
    if (invitationIds.length === 0) return;
    await withdrawMessages(tx, invitationIds);
  }

  /** In a person's deletion: the messages to them keep no address or words, and none still waiting is sent. */
  forgetRecipient(tx: Queryable, personId: string): Promise<void> {
    return forgetRecipient(tx, personId);
  }

  /**
   * Ended messages are deleted MESSAGE_RETENTION_MS after they were made: nothing reads them. One still waiting then
   * (its channel has no provider here) is withdrawn first: a setup link lasts as long (keys: LINK_LIFETIME_MS).
   */
  retentionJob(): Job {
    return {
      name: 'messages-retention',
      everySeconds: 300,
      run: async () => {
        const now = this.clock.now();
        const cutoff = new Date(now.getTime() - MESSAGE_RETENTION_MS);
        // Still waiting after as long as a setup link lasts (a channel without its provider): its link has expired.
        const withdrawn = await purgeWhileFull(() => withdrawWaitingBefore(this.db, cutoff, now));
        return withdrawn + (await purgeWhileFull(() => deleteEndedMessagesBefore(this.db, cutoff)));
      },
    };
  }

  /**
   * Sends what is due now; called after a commit that queued messages (kick), and by the job loop. One
   * dispatch at a time per instance: a job run waits for a kick's sending to end, so that a sandbox clock
   * advance, which runs jobs until idle, returns with the messages sent, not merely claimed.
   */
  dispatch(): Promise<number> {
    const run = this.running.catch(() => 0).then(() => this.dispatchDue());
    this.running = run;
    return run;
  }

  /**
   * Claims due messages and sends them one after another, each only while the claim's lease has room for
   * the send's bound and the write after it (mayStartSend): a batch whose lease runs low gives its other
   * messages back (their attempt not counted) and claims them again under a lease of their own. So no
   * message is still being sent when its lease runs out and another instance may claim it and send it again.
   */
  private async dispatchDue(): Promise<number> {
    let handled = 0;
    for (;;) {
      const claimedAt = this.clock.now();
      const claimed = await this.queue.claim(claimedAt);
      const leaseEnds = new Date(claimedAt.getTime() + MESSAGE_WORK.leaseSeconds * 1000);
      let done = 0;
      for (const row of claimed) {
        if (!mayStartSend(row.channel, leaseEnds, this.clock.now())) break;
        await this.sendOne(row);
        done++;
      }
      handled += done;
      const rest = claimed.slice(done);
      if (rest.length === 0) return handled;
      await releaseMessages(
        this.db,
        rest.map((row) => row.id),
        leaseEnds,
      );
      this.log.info({ sent: done, released: rest.length }, 'message lease running low: the rest of the batch is claimed again');
      // A fresh lease has room for any send (checked at load): one that had none saw the clock jump ahead,
      // and the job's next run takes the rest.
      if (done === 0) return handled;
    }
  }

  /** The message as it is to be sent; rows queued before migration 009 hold it in clear. */
  private content(row: MessageRow): SealedContent {
    if (row.sealed_content === null) return { body: row.body, link: row.link };
    return JSON.parse(this.box.open(row.sealed_content)) as SealedContent;
  }

  private async sendOne(row: MessageRow): Promise<void> {
    try {
      const { body, link } = this.content(row);
      const notifier = this.notifiers[row.channel];
      if (!notifier) throw new Error(`the ${row.channel} channel is not configured`); // never claimed (claimDueMessages)
      await notifier.send({ channel: row.channel, to: row.to_address, subject: row.subject, body, link });
    } catch (error) {
      const message = withoutRecipient(error instanceof Error ? error.message : String(error), row.to_address);
      this.log.warn({ messageId: row.id, channel: row.channel, attempt: row.attempts, err: message }, 'message not sent');
      const next = this.queue.next(row.attempts);
      if (next.retry) await scheduleMessageRetry(this.db, row.id, message.slice(0, 500), next.at);
      else await endMessage(this.db, row.id, next.endState, message.slice(0, 500));
      return;
    }
    const sentAt = this.clock.now();
    // The invitation first, then its message (see InvitationMessageSent). A message no longer pending (a
    // resend or cancel withdrew it while it was at the provider) stays as it is, and the invitation's sent
    // time written just before is rolled back with it: `sent.sms_at` never comes from a withdrawn message.
    const marked = await this.db
      .transaction(async (tx) => {
        if (row.invitation_id !== null) await this.invitationMessageSent(tx, { invitationId: row.invitation_id, channel: row.channel, sentAt });
        if (!(await markMessageSent(tx, row.id, sentAt))) throw new NoLongerPending();
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof NoLongerPending) return false;
        throw error;
      });
    if (!marked) {
      // Handed to the provider already, which cannot be undone: recorded as it stands, its link no longer works.
      const status = await messageStatus(this.db, row.id);
      this.log.info({ messageId: row.id, channel: row.channel, status }, 'message accepted by the provider after it stopped waiting; it stays as it is');
    }
  }

  /** Sends soon after a commit without making the API call wait for the provider. */
  kick(): void {
    void this.dispatch().catch((error: unknown) => this.log.error({ err: error }, 'message dispatch failed'));
  }

  job(): Job {
    return { name: 'messages-dispatch', everySeconds: 5, run: () => this.dispatch() };
  }
}
