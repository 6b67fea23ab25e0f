// The SQL of the key holder's surface: WebAuthn challenges (single use, 60 s), passkeys bound to keys, and a
// key as the holder's page reads it.
import type { Queryable } from '../../platform/db/index.ts';

export type ChallengePurpose = 'register' | 'assert';

export async function insertChallenge(db: Queryable, challenge: string, purpose: ChallengePurpose, subject: string | null, expiresAt: Date, now: Date): Promise<void> {
  // Expired challenges go as new ones come: the table holds only the last minute's.
  await db.query({ name: 'holder.purgeChallenges', text: 'DELETE FROM passkey_challenges WHERE expires_at <= $1' }, [now]);
  await db.query(
    { name: 'holder.insertChallenge', text: 'INSERT INTO passkey_challenges (challenge, purpose, subject, expires_at) VALUES ($1, $2, $3, $4)' },
    [challenge, purpose, subject, expiresAt],
  );
}

/** Spends a challenge: true once, when it exists for that purpose and subject and has not expired. */
export async function spendChallenge(db: Queryable, challenge: string, purpose: ChallengePurpose, subject: string | null, now: Date): Promise<boolean> {
  const rows = await db.query<{ challenge: string }>(
    {
      name: 'holder.spendChallenge',
      text: `DELETE FROM passkey_challenges WHERE challenge = $1 AND purpose = $2 AND subject IS NOT DISTINCT FROM $3 AND expires_at > $4 RETURNING challenge`,
    },
    [challenge, purpose, subject, now],
  );
  return rows.length === 1;
}

export interface PasskeyRow {
  id: number;
  key_id: number;
  credential_id: string;
  public_key: string;
  sign_count: number;
  created_at: Date;
  last_used_at: Date | null;
}

export async function insertPasskey(db: Queryable, keyId: number, credentialId: string, publicKey: string, signCount: number, now: Date): Promise<void> {
  await db.query(
    { name: 'holder.insertPasskey', text: 'INSERT INTO passkeys (key_id, credential_id, public_key, sign_count, created_at) VALUES ($1, $2, $3, $4, $5)' },
    [keyId, credentialId, publicKey, signCount, now],
  );
}

/** The unique index on credential ids refused an insert: the credential is bound to a key already. */
export function isDuplicatePasskey(error: unknown): boolean {
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === '23505' && String(constraint ?? '').startsWith('passkeys_credential_id');
}

export async function findPasskey(db: Queryable, credentialId: string): Promise<PasskeyRow | null> {
  const [row] = await db.query<PasskeyRow>({ name: 'holder.findPasskey', text: 'SELECT * FROM passkeys WHERE credential_id = $1' }, [credentialId]);
  return row ? { ...row, id: Number(row.id), key_id: Number(row.key_id), sign_count: Number(row.sign_count) } : null;
}

/**
 * Records a use: the new counter only when it is above the stored one (or both are 0: the authenticator keeps
 * none). False when a use with the same or a higher counter was recorded first (a replay or a cloned key).
 */
export async function recordPasskeyUse(db: Queryable, id: number, newCount: number, now: Date): Promise<boolean> {
  const rows = await db.query<{ id: number }>(
    {
      name: 'holder.usePasskey',
      text: `UPDATE passkeys SET sign_count = $2, last_used_at = $3
              WHERE id = $1 AND ($2 > sign_count OR ($2 = 0 AND sign_count = 0)) RETURNING id`,
    },
    [id, newCount, now],
  );
  return rows.length === 1;
}

export async function passkeysOfKey(db: Queryable, keyId: number): Promise<PasskeyRow[]> {
  return db.query<PasskeyRow>({ name: 'holder.passkeysOfKey', text: 'SELECT * FROM passkeys WHERE key_id = $1 ORDER BY id' }, [keyId]);
}

export async function deletePasskey(db: Queryable, keyId: number, id: number): Promise<boolean> {
  const rows = await db.query<{ id: number }>({ name: 'holder.deletePasskey', text: 'DELETE FROM passkeys WHERE key_id = $1 AND id = $2 RETURNING id' }, [keyId, id]);
  return rows.length === 1;
}

/** A key as the holder's page reads it, with its person and the person's location path. */
export interface HolderKeyRow {
  id: number;
  account_id: number;
  name: string;
  state: string;
  starts_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  /** A key without a credential opens no door, from this page either (README "Access decisions"). */
  has_credential: boolean;
  security_groups: string[];
  person_id: string;
  person_name: string;
  person_email: string | null;
  person_path: number[];
  /** The key's and the person's rows as read (their xmin): a command is created only while both are unchanged. */
  row_version: string;
}

export async function findHolderKey(db: Queryable, keyId: number): Promise<HolderKeyRow | null> {
  const [row] = await db.query<HolderKeyRow>(
    {
      name: 'holder.findKey',
      text: `SELECT k.id, k.account_id, k.name, k.state, k.starts_at, k.expires_at, k.revoked_at, k.credential_box IS NOT NULL AS has_credential, k.security_groups,
                    p.id AS person_id, p.name AS person_name, p.email AS person_email, l.path AS person_path,
                    k.xmin::text || ':' || p.xmin::text AS row_version
               FROM keys k JOIN people p ON p.id = k.person_id AND p.deleted_at IS NULL JOIN locations l ON l.id = p.location_id
              WHERE k.id = $1`,
    },
    [keyId],
  );
  return row ? { ...row, id: Number(row.id), account_id: Number(row.account_id), person_path: row.person_path.map(Number) } : null;
}

/** Whether a key exists (of any account: the operator's device endpoints). */
export async function keyExists(db: Queryable, keyId: number): Promise<boolean> {
  const rows = await db.query({ name: 'holder.keyExists', text: 'SELECT 1 FROM keys WHERE id = $1' }, [keyId]);
  return rows.length === 1;
}

export async function lockNames(db: Queryable, lockIds: number[]): Promise<Map<number, { name: string; place: string }>> {
  const rows = await db.query<{ id: number; name: string; place: string }>({ name: 'holder.lockNames', text: 'SELECT id, name, place FROM locks WHERE id = ANY($1::bigint[])' }, [lockIds]);
  return new Map(rows.map((r) => [Number(r.id), { name: r.name, place: r.place }]));
}
