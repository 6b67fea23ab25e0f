// Outgoing SMS and e-mail: queued in the database in the transaction that caused them (so a crash never
// loses one), sent after commit by a job that claims due messages with FOR UPDATE SKIP LOCKED (safe with
// several instances), retried with backoff so that a failing provider never fails the API call.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import type { Channel, Notifier, OutgoingMessage } from './notifier.ts';

/** Seconds before retry n (1-based); after the last one the message is `failed`. */
export const MESSAGE_RETRY_SECONDS = [60, 300, 1800, 7200, 21_600, 86_400];
const CLAIM_SECONDS = 120;
const BATCH = 20;

interface MessageRow {
  id: number;
  invitation_id: number | null;
  channel: Channel;
  to_address: string;
  subject: string;
  body: string;
  link: string | null;
  attempts: number;
}

export class MessageQueue {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly notifiers: Record<Channel, Notifier>,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Queues a message inside the caller's transaction. */
  async enqueue(tx: Queryable, accountId: number, invitationId: number | null, message: OutgoingMessage): Promise<void> {
    await tx.query(
      `INSERT INTO outbound_messages (account_id, invitation_id, channel, to_address, subject, body, link, status, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8)`,
      [accountId, invitationId, message.channel, message.to, message.subject, message.body, message.link, this.clock.now()],
    );
  }

  /** Sends what is due now; called after a commit that queued messages, and by the job loop. */
  async dispatch(): Promise<number> {
    const now = this.clock.now();
    const claimed = await this.db.query<MessageRow>(
      `UPDATE outbound_messages SET claimed_until = $2, attempts = attempts + 1
        WHERE id IN (SELECT id FROM outbound_messages
                      WHERE status = 'pending' AND next_attempt_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
                      ORDER BY next_attempt_at LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
        RETURNING id, invitation_id, channel, to_address, subject, body, link, attempts`,
      [now, new Date(now.getTime() + CLAIM_SECONDS * 1000)],
    );
    for (const row of claimed) await this.sendOne(row);
    return claimed.length;
  }

  private async sendOne(row: MessageRow): Promise<void> {
    try {
      await this.notifiers[row.channel].send({ channel: row.channel, to: row.to_address, subject: row.subject, body: row.body, link: row.link });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const delay = MESSAGE_RETRY_SECONDS[row.attempts - 1];
      this.log.warn({ messageId: row.id, channel: row.channel, attempt: row.attempts, err: message }, 'message not sent');
      await this.db.query(
        `UPDATE outbound_messages SET status = $2, next_attempt_at = $3, claimed_until = NULL, last_error = $4 WHERE id = $1`,
        [row.id, delay === undefined ? 'failed' : 'pending', new Date(this.clock.now().getTime() + (delay ?? 0) * 1000), message.slice(0, 500)],
      );
      return;
    }
    const sentAt = this.clock.now();
    await this.db.transaction(async (tx) => {
      await tx.query(`UPDATE outbound_messages SET status = 'sent', sent_at = $2, claimed_until = NULL, last_error = NULL WHERE id = $1`, [row.id, sentAt]);
      if (row.invitation_id !== null) {
        const column = row.channel === 'sms' ? 'sent_sms_at' : 'sent_email_at';
        await tx.query(`UPDATE invitations SET ${column} = $2 WHERE id = $1`, [row.invitation_id, sentAt]);
      }
    });
  }

  /** Sends soon after a commit without making the API call wait for the provider. */
  kick(): void {
    void this.dispatch().catch((error: unknown) => this.log.error({ err: error }, 'message dispatch failed'));
  }

  job(): Job {
    return { name: 'messages-dispatch', everySeconds: 5, run: () => this.dispatch() };
  }
}
