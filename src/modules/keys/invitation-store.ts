// The SQL of invitations and their setup links. Scope follows the person: an invitation is in a caller's
// scope when its person's location is. A link is stored only as the hash of its token.
import type { Queryable } from '../../platform/db/index.ts';
import { whatGroupsOpen } from '../access/index.ts';
import type { Channel, Invitation } from './schemas.ts';

/** An invitation as read: the fields an Invitation shows as they are (schemas.ts), its times as Dates, and its person. */
export interface InvitationRow extends Pick<Invitation, 'id' | 'state' | 'person_id' | 'key_id' | 'name' | 'security_groups'> {
  account_id: number;
  person_name: string;
  person_email: string | null;
  person_phone: string | null;
  person_language: string | null;
  person_location_id: number;
  starts_at: Date;
  key_expires_at: Date | null;
  expires_at: Date;
  channel: Channel;
  sent_email_at: Date | null;
  sent_sms_at: Date | null;
  created_at: Date;
}

/** The derived state ($1 is the service clock's now): cancelled, activated, expired or pending. */
const STATE = `CASE WHEN i.cancelled_at IS NOT NULL THEN 'cancelled'
                    WHEN i.key_id IS NOT NULL THEN 'activated'
                    WHEN i.consumed_at IS NOT NULL OR i.expires_at <= $1 THEN 'expired'
                    ELSE 'pending' END`;

const INVITATION_SELECT = `
  SELECT i.id, i.account_id, i.person_id, p.name AS person_name, p.email AS person_email, p.phone AS person_phone,
         p.language AS person_language, p.location_id AS person_location_id, i.key_id, i.name, i.security_groups,
         i.starts_at, i.key_expires_at, i.expires_at, i.channel, ${STATE} AS state, i.sent_email_at, i.sent_sms_at, i.created_at
    FROM invitations i
    JOIN people p ON p.id = i.person_id
    JOIN locations l ON l.id = p.location_id`;

export function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    state: row.state,
    person_id: row.person_id,
    key_id: row.key_id,
    name: row.name,
    security_groups: row.security_groups,
    starts_at: row.starts_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    sent: { email_at: row.sent_email_at?.toISOString() ?? null, sms_at: row.sent_sms_at?.toISOString() ?? null },
    created_at: row.created_at.toISOString(),
  };
}

export async function findInvitation(db: Queryable, now: Date, scopeLocationId: number | null, id: number): Promise<InvitationRow | null> {
  const rows = await db.query<InvitationRow>(
    `${INVITATION_SELECT} WHERE i.id = $2 AND ($3::bigint IS NULL OR l.path @> ARRAY[$3]::bigint[])`,
    [now, id, scopeLocationId],
  );
  return rows[0] ?? null;
}

export async function findInvitationByToken(db: Queryable, now: Date, tokenHash: string): Promise<InvitationRow | null> {
  const rows = await db.query<InvitationRow>(`${INVITATION_SELECT} WHERE i.token_hash = $2`, [now, tokenHash]);
  return rows[0] ?? null;
}

export async function listInvitations(
  db: Queryable,
  now: Date,
  scopeLocationId: number,
  filter: { personId: string | null; state: string | null },
  afterId: number | null,
  limit: number,
): Promise<InvitationRow[]> {
  return db.query<InvitationRow>(
    `${INVITATION_SELECT}
      WHERE l.path @> ARRAY[$2]::bigint[] AND i.id > $3
        AND ($4::uuid IS NULL OR i.person_id = $4::uuid)
        AND ($5::text IS NULL OR ${STATE} = $5)
      ORDER BY i.id LIMIT $6`,
    [now, scopeLocationId, afterId ?? 0, filter.personId, filter.state, limit],
  );
}

/**
 * Names of what a key with these security groups opens, for its setup-link message and page: the locks it opens
 * at some time, as the access decision resolves its groups (access/doors.ts), else the titles of the groups its
 * codes name at its person's location, else the codes themselves. A sibling department's group of the same code
 * is another group: its locks and its title are never named.
 */
export async function whatItOpens(db: Queryable, accountId: number, personLocationId: number, codes: string[]): Promise<string[]> {
  const [person] = await db.query<{ path: Array<number | string> }>('SELECT path FROM locations WHERE id = $1 AND account_id = $2', [personLocationId, accountId]);
  if (!person) return codes;
  const { lockIds, groupIds } = await whatGroupsOpen(db, accountId, codes, person.path.map(Number));
  if (lockIds.length > 0) {
    const locks = await db.query<{ name: string }>('SELECT name FROM locks WHERE id = ANY($1::bigint[]) ORDER BY id', [lockIds.slice(0, 5)]);
    return locks.map((lock) => lock.name);
  }
  if (groupIds.length === 0) return codes;
  const groups = await db.query<{ title: string }>('SELECT DISTINCT title FROM security_groups WHERE id = ANY($1::bigint[]) ORDER BY title LIMIT 5', [groupIds]);
  return groups.map((group) => group.title);
}

export interface NewInvitation {
  accountId: number;
  personId: string;
  name: string;
  groups: string[];
  startsAt: Date;
  keyExpiresAt: Date | null;
  expiresAt: Date;
  channel: Channel;
  tokenHash: string;
}

/** Returns the new invitation's id. */
export async function insertInvitation(db: Queryable, invitation: NewInvitation, now: Date): Promise<number> {
  const [row] = await db.query<{ id: number }>(
    `INSERT INTO invitations (account_id, person_id, name, security_groups, starts_at, key_expires_at, expires_at, channel, token_hash, created_at)
     VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, $9, $10) RETURNING id`,
    [
      invitation.accountId,
      invitation.personId,
      invitation.name,
      invitation.groups,
      invitation.startsAt,
      invitation.keyExpiresAt,
      invitation.expiresAt,
      invitation.channel,
      invitation.tokenHash,
      now,
    ],
  );
  return (row as { id: number }).id;
}

/** Cancels an invitation not cancelled nor activated yet; false otherwise. */
export async function cancelInvitation(db: Queryable, id: number, now: Date): Promise<boolean> {
  const rows = await db.query(`UPDATE invitations SET cancelled_at = $2 WHERE id = $1 AND cancelled_at IS NULL AND key_id IS NULL RETURNING id`, [id, now]);
  return rows.length > 0;
}

/** Cancels every invitation of a person not cancelled nor activated yet; their ids. */
export async function cancelInvitationsOfPerson(db: Queryable, personId: string, now: Date): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    'UPDATE invitations SET cancelled_at = $2 WHERE person_id = $1 AND cancelled_at IS NULL AND key_id IS NULL RETURNING id',
    [personId, now],
  );
  return rows.map((row) => row.id);
}

/** Gives a pending invitation a new link (the previous token stops matching); false when it is not pending. */
export async function replaceLink(db: Queryable, id: number, tokenHash: string, channel: Channel, now: Date): Promise<boolean> {
  const rows = await db.query(
    `UPDATE invitations SET token_hash = $2, channel = $3
      WHERE id = $1 AND cancelled_at IS NULL AND key_id IS NULL AND consumed_at IS NULL AND expires_at > $4 RETURNING id`,
    [id, tokenHash, channel, now],
  );
  return rows.length > 0;
}

/**
 * Claims a usable link for one activation; a claim made before `staleBefore` (its instance died) may be
 * taken over. Null when the link is unusable or claimed by a running activation.
 */
export async function claimLink(db: Queryable, tokenHash: string, now: Date, staleBefore: Date): Promise<{ id: number; account_id: number } | null> {
  const [claimed] = await db.query<{ id: number; account_id: number }>(
    `UPDATE invitations SET activating_at = $2
      WHERE token_hash = $1 AND cancelled_at IS NULL AND key_id IS NULL AND consumed_at IS NULL AND expires_at > $2
        AND (activating_at IS NULL OR activating_at < $3)
      RETURNING id, account_id`,
    [tokenHash, now, staleBefore],
  );
  return claimed ?? null;
}

/** An activation that failed before its key was made gives the link back (it may be tried again at once). */
export async function releaseClaim(db: Queryable, id: number): Promise<void> {
  await db.query('UPDATE invitations SET activating_at = NULL WHERE id = $1 AND key_id IS NULL', [id]);
}

/** The link's single use is spent without a key: the invitation reads `expired`. */
export async function spendLink(db: Queryable, id: number, now: Date): Promise<void> {
  await db.query('UPDATE invitations SET consumed_at = $2, activating_at = NULL WHERE id = $1', [id, now]);
}

export async function markActivated(db: Queryable, id: number, keyId: number, now: Date): Promise<void> {
  await db.query('UPDATE invitations SET key_id = $2, activated_at = $3, activating_at = NULL WHERE id = $1', [id, keyId, now]);
}

/** The provider accepted a message of the invitation on this channel: it is `sent.sms_at` or `sent.email_at`. */
export async function markMessageSent(db: Queryable, invitationId: number, channel: 'sms' | 'email', sentAt: Date): Promise<void> {
  const column = channel === 'sms' ? 'sent_sms_at' : 'sent_email_at';
  await db.query(`UPDATE invitations SET ${column} = $2 WHERE id = $1`, [invitationId, sentAt]);
}

/** Takes one unit of the account's phone-key allowance; false when it is used up. */
export async function useAllowance(db: Queryable, accountId: number): Promise<boolean> {
  const rows = await db.query(
    `UPDATE accounts SET phone_keys_used = phone_keys_used + 1
      WHERE id = $1 AND (phone_key_allowance IS NULL OR phone_keys_used < phone_key_allowance) RETURNING id`,
    [accountId],
  );
  return rows.length > 0;
}
