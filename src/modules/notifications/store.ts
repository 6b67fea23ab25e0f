// The SQL of outgoing messages (table outbound_messages). Only this module writes it.
import type { Queryable } from '../../platform/db/index.ts';
import { PURGE_BATCH } from '../../platform/jobs.ts';
import { dueAndUnleased, type Lease } from '../../platform/work-queue.ts';
import type { Channel, OutgoingMessage } from './notifier.ts';
import { LINK_REMOVED } from './templates.ts';

/** What stands in the stored body where the link was. */
/**
 * Drops what only sending needed. Rows queued before migration 009 kept `link` (and the body with it) in
 * clear: the link is cut out of their body here too.
 */
const FORGET_CONTENT = `sealed_content = NULL, link = NULL,
  body = CASE WHEN link IS NULL OR link = '' THEN body ELSE replace(body, link, '${LINK_REMOVED}') END`;

export interface MessageRow {
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

export interface NewMessage {
  accountId: number;
  invitationId: number | null;
  channel: Channel;
  to: string;
  subject: string;
  /** The body with the link cut out. */
  readableBody: string;
  /** The body and link as they will be sent, sealed under the server key. */
  sealedContent: string;
  queuedAt: Date;
}

export async function insertMessage(tx: Queryable, message: NewMessage): Promise<void> {
  await tx.query(
    `INSERT INTO outbound_messages (account_id, invitation_id, channel, to_address, subject, body, sealed_content, status, next_attempt_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $8)`,
    [message.accountId, message.invitationId, message.channel, message.to, message.subject, message.readableBody, message.sealedContent, message.queuedAt],
  );
}

/** The waiting messages of these invitations will not be sent; their sealed content goes at once. */
export async function withdrawMessages(tx: Queryable, invitationIds: number[]): Promise<void> {
  await tx.query(
    `UPDATE outbound_messages SET status = 'withdrawn', claimed_until = NULL, ${FORGET_CONTENT}
      WHERE invitation_id = ANY($1::bigint[]) AND status = 'pending'`,
    [invitationIds],
  );
}

/**
 * The work queue's claim (platform/work-queue.ts): due messages of the channels this instance can send, oldest due
 * first, the attempt counted.
 */
export async function claimDueMessages(db: Queryable, lease: Lease, channels: readonly Channel[]): Promise<MessageRow[]> {
  if (channels.length === 0) return [];
  return db.query<MessageRow>(
    `UPDATE outbound_messages SET claimed_until = $2, attempts = attempts + 1
      WHERE id IN (SELECT id FROM outbound_messages WHERE ${dueAndUnleased()} AND channel = ANY($4::text[])
                    ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING id, invitation_id, channel, to_address, subject, body, link, sealed_content, attempts`,
    [lease.now, lease.until, lease.batchSize, channels],
  );
}

/**
 * Gives back claimed messages whose attempt was not started (their lease ran low): claimable at once, the
 * attempt the claim counted taken back. Only rows still held by that lease (`until`) and still pending.
 */
export async function releaseMessages(db: Queryable, ids: number[], until: Date): Promise<void> {
  await db.query(
    `UPDATE outbound_messages SET claimed_until = NULL, attempts = attempts - 1
      WHERE id = ANY($1::bigint[]) AND claimed_until = $2 AND status = 'pending'`,
    [ids, until],
  );
}

// `status = 'pending'` in the two below and in markMessageSent: a message withdrawn while its attempt ran stays withdrawn.

export async function scheduleMessageRetry(db: Queryable, id: number, error: string, at: Date): Promise<void> {
  await db.query(`UPDATE outbound_messages SET next_attempt_at = $3, claimed_until = NULL, last_error = $2 WHERE id = $1 AND status = 'pending'`, [
    id,
    error,
    at,
  ]);
}

/** The message finally failed: it takes its end state and keeps only the readable body. */
export async function endMessage(db: Queryable, id: number, endState: string, error: string): Promise<void> {
  await db.query(
    `UPDATE outbound_messages SET status = $3, claimed_until = NULL, last_error = $2, ${FORGET_CONTENT}
      WHERE id = $1 AND status = 'pending'`,
    [id, error, endState],
  );
}

/**
 * The provider accepted the message: it is `sent`, if it was still waiting. False when it was not: withdrawn
 * (a resend or cancel) while its attempt ran, or ended by another worker after its lease; it keeps that state.
 */
export async function markMessageSent(tx: Queryable, id: number, sentAt: Date): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE outbound_messages SET status = 'sent', sent_at = $2, claimed_until = NULL, last_error = NULL, ${FORGET_CONTENT}
      WHERE id = $1 AND status = 'pending' RETURNING id`,
    [id, sentAt],
  );
  return rows.length > 0;
}

/** A message's status now (null: no such message). */
export async function messageStatus(db: Queryable, id: number): Promise<string | null> {
  const [row] = await db.query<{ status: string }>('SELECT status FROM outbound_messages WHERE id = $1', [id]);
  return row?.status ?? null;
}

// ---- personal data: a deleted person's messages, and retention ------------------------------------

/**
 * The messages to a deleted person (those of their invitations) lose their address and words: nothing reads an
 * ended message, and the deletion removes their personal data. One still waiting is withdrawn (the deletion
 * cancels its invitation); one at a provider right now keeps that state, as a withdrawal does (markMessageSent).
 */
export async function forgetRecipient(tx: Queryable, personId: string): Promise<void> {
  await tx.query(
    `UPDATE outbound_messages m SET to_address = '', subject = '', body = '', sealed_content = NULL, link = NULL, claimed_until = NULL,
            status = CASE WHEN m.status = 'pending' THEN 'withdrawn' ELSE m.status END
       FROM invitations i
      WHERE m.invitation_id = i.id AND i.person_id = $1 AND m.to_address <> ''`,
    [personId],
  );
}

/**
 * Withdraws messages still waiting that were queued before `cutoff` (a channel not configured holds them): the setup
 * link they carry has expired. Not one under a live claim (being sent); its content is dropped. Returns how many.
 */
export async function withdrawWaitingBefore(db: Queryable, cutoff: Date, now: Date): Promise<number> {
  const rows = await db.query(
    `UPDATE outbound_messages SET status = 'withdrawn', claimed_until = NULL, ${FORGET_CONTENT}
      WHERE id IN (SELECT id FROM outbound_messages
                    WHERE status = 'pending' AND created_at < $1 AND (claimed_until IS NULL OR claimed_until < $2)
                    ORDER BY id LIMIT ${PURGE_BATCH})
      RETURNING id`,
    [cutoff, now],
  );
  return rows.length;
}

/** Deletes ended messages (sent, failed, withdrawn) made before `cutoff`, at most PURGE_BATCH a call; returns how many. */
export async function deleteEndedMessagesBefore(db: Queryable, cutoff: Date): Promise<number> {
  const rows = await db.query(
    `DELETE FROM outbound_messages
      WHERE id IN (SELECT id FROM outbound_messages WHERE created_at < $1 AND status <> 'pending' ORDER BY id LIMIT ${PURGE_BATCH})
      RETURNING id`,
    [cutoff],
  );
  return rows.length;
}

// ---- the sandbox outbox: what the sandbox notifier "sent" -------------------------------------------

export async function insertOutboxEntry(db: Queryable, message: OutgoingMessage, sentAt: Date): Promise<void> {
  await db.query('INSERT INTO sandbox_outbox (channel, to_address, subject, body, link, sent_at) VALUES ($1, $2, $3, $4, $5, $6)', [
    message.channel,
    message.to,
    message.subject,
    message.body,
    message.link,
    sentAt,
  ]);
}

export interface OutboxRow {
  id: number;
  channel: string;
  to_address: string;
  subject: string;
  body: string;
  link: string | null;
  sent_at: Date;
}

/** The newest 500 entries, to one address and of one channel when given. */
export function listOutbox(db: Queryable, filter: { to: string | null; channel: string | null }): Promise<OutboxRow[]> {
  return db.query<OutboxRow>(
    `SELECT id, channel, to_address, subject, body, link, sent_at FROM sandbox_outbox
      WHERE ($1::text IS NULL OR to_address = $1) AND ($2::text IS NULL OR channel = $2)
      ORDER BY id DESC LIMIT 500`,
    [filter.to, filter.channel],
  );
}
