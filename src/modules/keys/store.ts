// The SQL of keys and invitations. Scope follows the person: a key or invitation is in a caller's scope
// when its person's location is.
import type { Queryable } from '../../platform/db/index.ts';
import type { EmbeddedKey, Invitation, Key } from './schemas.ts';

export interface KeyRow {
  id: number;
  account_id: number;
  person_id: string;
  person_name: string;
  person_email: string | null;
  person_location_id: number;
  invitation_id: number | null;
  type: string;
  name: string;
  state: Key['state'];
  security_groups: string[];
  starts_at: Date;
  expires_at: Date | null;
  managed_in_locking_system: boolean;
}

const KEY_SELECT = `
  SELECT k.id, k.account_id, k.person_id, p.name AS person_name, p.email AS person_email, p.location_id AS person_location_id,
         k.invitation_id, k.type, k.name, k.state, k.security_groups, k.starts_at, k.expires_at, k.managed_in_locking_system
    FROM keys k
    JOIN people p ON p.id = k.person_id
    JOIN locations l ON l.id = p.location_id`;

export function toEmbeddedKey(row: KeyRow): EmbeddedKey {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    state: row.state,
    person_id: row.person_id,
    security_groups: row.security_groups,
    starts_at: row.starts_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
  };
}

export function toKey(row: KeyRow): Key {
  return { ...toEmbeddedKey(row), invitation_id: row.invitation_id };
}

/** A live (not revoked) key under the scope; scope null: any. */
export async function findKey(db: Queryable, scopeLocationId: number | null, id: number): Promise<KeyRow | null> {
  const rows = await db.query<KeyRow>(
    `${KEY_SELECT} WHERE k.id = $1 AND k.revoked_at IS NULL AND ($2::bigint IS NULL OR l.path @> ARRAY[$2]::bigint[])`,
    [id, scopeLocationId],
  );
  return rows[0] ?? null;
}

export async function listKeys(
  db: Queryable,
  scopeLocationId: number,
  filter: { personId: string | null; state: string | null; securityGroup: string | null },
  afterId: number | null,
  limit: number,
): Promise<KeyRow[]> {
  return db.query<KeyRow>(
    `${KEY_SELECT}
      WHERE k.revoked_at IS NULL AND l.path @> ARRAY[$1]::bigint[] AND k.id > $2
        AND ($3::uuid IS NULL OR k.person_id = $3::uuid)
        AND ($4::text IS NULL OR k.state = $4)
        AND ($5::text IS NULL OR $5 = ANY(k.security_groups))
      ORDER BY k.id LIMIT $6`,
    [scopeLocationId, afterId ?? 0, filter.personId, filter.state, filter.securityGroup, limit],
  );
}

/** Every live key of a person, whatever the scope. */
export async function liveKeysOfPerson(db: Queryable, personId: string): Promise<KeyRow[]> {
  return db.query<KeyRow>(`${KEY_SELECT} WHERE k.person_id = $1 AND k.revoked_at IS NULL ORDER BY k.id`, [personId]);
}

export async function keysOfPerson(db: Queryable, scopeLocationId: number, personId: string): Promise<EmbeddedKey[]> {
  const rows = await db.query<KeyRow>(
    `${KEY_SELECT} WHERE k.person_id = $1 AND k.revoked_at IS NULL AND l.path @> ARRAY[$2]::bigint[] ORDER BY k.id`,
    [personId, scopeLocationId],
  );
  return rows.map(toEmbeddedKey);
}

export interface InvitationRow {
  id: number;
  account_id: number;
  person_id: string;
  person_name: string;
  person_email: string | null;
  person_phone: string | null;
  person_language: string | null;
  person_location_id: number;
  key_id: number | null;
  name: string;
  security_groups: string[];
  starts_at: Date;
  key_expires_at: Date | null;
  expires_at: Date;
  channel: 'sms' | 'email' | 'both';
  state: Invitation['state'];
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

/** Names of what a set of security groups opens in an account: lock names, else the groups' titles. */
export async function whatItOpens(db: Queryable, accountId: number, codes: string[]): Promise<string[]> {
  const locks = await db.query<{ name: string }>(
    `SELECT k.name FROM locks k JOIN locations l ON l.id = k.location_id
      WHERE l.account_id = $1 AND k.security_group_codes && $2::text[] ORDER BY k.id LIMIT 5`,
    [accountId, codes],
  );
  if (locks.length > 0) return locks.map((l) => l.name);
  const groups = await db.query<{ title: string }>(
    `SELECT DISTINCT sg.title FROM security_groups sg JOIN locations l ON l.id = sg.location_id
      WHERE l.account_id = $1 AND sg.code = ANY($2::text[]) ORDER BY sg.title LIMIT 5`,
    [accountId, codes],
  );
  return groups.length > 0 ? groups.map((g) => g.title) : codes;
}
