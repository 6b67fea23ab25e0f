// Outgoing SMS and e-mail: queued in the database in the transaction that caused them (so a crash never
// loses one), sent after commit by a job that claims due messages with FOR UPDATE SKIP LOCKED (safe with
// several instances), retried with backoff so that a failing provider never fails the API call.
//
// A setup link works like a password until it is used, so it stays in the database only while sending
// needs it (README: Security): the message as it will be sent (body and link) waits sealed under the
// server key (secret-box), next to a readable body with the link cut out. Once the message is sent,
// finally fails or is withdrawn (a resend made a new link, the invitation was cancelled), the sealed copy
// is dropped and only the readable body remains.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import type { Channel, Notifier, OutgoingMessage } from './notifier.ts';

/** Seconds before retry n (1-based); after the last one the message is `failed`. */
export const MESSAGE_RETRY_SECONDS = [60, 300, 1800, 7200, 21_600, 86_400];
const CLAIM_SECONDS = 120;
const BATCH = 20;
/** What stands in the stored body where the link was. */
export const LINK_REMOVED = '[setup link removed]';
/**
 * Drops what only sending needed. Rows queued before migration 009 kept `link` (and the body with it) in
 * clear: the link is cut out of their body here too.
 */
const FORGET_CONTENT = `sealed_content = NULL, link = NULL,
  body = CASE WHEN link IS NULL OR link = '' THEN body ELSE replace(body, link, '${LINK_REMOVED}') END`;

interface MessageRow {
  id: number;
  invitation_id: number | null;
  channel: Channel;
  to_address: string;
  subject: string;
  body: string;
  link: string | null;
  sealed_content: string | null;
  attempts: number;
}

/**
 * A provider's refusal may quote the recipient ("550 <ann@example.com>: Recipient address rejected"):
 * the log never holds it (README: Security). A phone number is matched with or without its `+`.
 */
function withoutRecipient(text: string, to: string): string {
  const pattern = to.replace(/^\+/, '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (pattern === '') return text;
  return text.replace(new RegExp(pattern, 'gi'), '[recipient]');
}

interface SealedContent {
  body: string;
  link: string | null;
}

export class MessageQueue {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly notifiers: Record<Channel, Notifier>,
    private readonly box: SecretBox,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Queues a message inside the caller's transaction. */
  async enqueue(tx: Queryable, accountId: number, invitationId: number | null, message: OutgoingMessage): Promise<void> {
    const readable = message.link ? message.body.split(message.link).join(LINK_REMOVED) : message.body;
    const sealed = this.box.seal(JSON.stringify({ body: message.body, link: message.link } satisfies SealedContent));
    await tx.query(
      `INSERT INTO outbound_messages (account_id, invitation_id, channel, to_address, subject, body, sealed_content, status, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8)`,
      [accountId, invitationId, message.channel, message.to, message.subject, readable, sealed, this.clock.now()],
    );
  }

  /**
   * The messages of these invitations still waiting are not sent: the link they carry no longer works
   * (a resend replaced it, the invitation was cancelled). Their sealed content is dropped at once.
   */
  async withdraw(tx: Queryable, invitationIds: number[]): Promise<void> {
    if (invitationIds.length === 0) return;
    await tx.query(
      `UPDATE outbound_messages SET status = 'withdrawn', claimed_until = NULL, ${FORGET_CONTENT}
        WHERE invitation_id = ANY($1::bigint[]) AND status = 'pending'`,
      [invitationIds],
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
        RETURNING id, invitation_id, channel, to_address, subject, body, link, sealed_content, attempts`,
      [now, new Date(now.getTime() + CLAIM_SECONDS * 1000)],
    );
    for (const row of claimed) await this.sendOne(row);
    return claimed.length;
  }

  /** The message as it is to be sent; rows queued before migration 009 hold it in clear. */
  private content(row: MessageRow): SealedContent {
    if (row.sealed_content === null) return { body: row.body, link: row.link };
    return JSON.parse(this.box.open(row.sealed_content)) as SealedContent;
  }

  private async sendOne(row: MessageRow): Promise<void> {
    try {
      const { body, link } = this.content(row);
      await this.notifiers[row.channel].send({ channel: row.channel, to: row.to_address, subject: row.subject, body, link });
    } catch (error) {
      const message = withoutRecipient(error instanceof Error ? error.message : String(error), row.to_address);
      const delay = MESSAGE_RETRY_SECONDS[row.attempts - 1];
      this.log.warn({ messageId: row.id, channel: row.channel, attempt: row.attempts, err: message }, 'message not sent');
      // `status = 'pending'`: a message withdrawn while this attempt ran stays withdrawn.
      if (delay === undefined) {
        await this.db.query(
          `UPDATE outbound_messages SET status = 'failed', claimed_until = NULL, last_error = $2, ${FORGET_CONTENT}
            WHERE id = $1 AND status = 'pending'`,
          [row.id, message.slice(0, 500)],
        );
      } else {
        await this.db.query(
          `UPDATE outbound_messages SET next_attempt_at = $3, claimed_until = NULL, last_error = $2 WHERE id = $1 AND status = 'pending'`,
          [row.id, message.slice(0, 500), new Date(this.clock.now().getTime() + delay * 1000)],
        );
      }
      return;
    }
    const sentAt = this.clock.now();
    // The invitation first, then its message: the order of a resend or cancel, so the two never deadlock.
    await this.db.transaction(async (tx) => {
      if (row.invitation_id !== null) {
        const column = row.channel === 'sms' ? 'sent_sms_at' : 'sent_email_at';
        await tx.query(`UPDATE invitations SET ${column} = $2 WHERE id = $1`, [row.invitation_id, sentAt]);
      }
      await tx.query(
        `UPDATE outbound_messages SET status = 'sent', sent_at = $2, claimed_until = NULL, last_error = NULL, ${FORGET_CONTENT} WHERE id = $1`,
        [row.id, sentAt],
      );
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
