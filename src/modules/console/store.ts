// The SQL of console sessions and the API keys they act with per account (migration 012).
import { AUTH_CHANNEL } from '../../platform/channels.ts';
import type { Queryable, Transaction } from '../../platform/db/index.ts';

export interface SessionRow {
  token_hash: string;
  operator_token_sealed: string;
  last_seen_at: Date;
  expires_at: Date;
}

export interface SessionKeyRow {
  api_key_id: number;
  token_sealed: string;
}

export async function insertSession(db: Queryable, row: SessionRow, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO console_sessions (token_hash, operator_token_sealed, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, $3, $4)`,
    [row.token_hash, row.operator_token_sealed, now, row.expires_at],
  );
}

export async function findSession(db: Queryable, tokenHash: string): Promise<SessionRow | null> {
  const [row] = await db.query<SessionRow>(
    'SELECT token_hash, operator_token_sealed, last_seen_at, expires_at FROM console_sessions WHERE token_hash = $1',
    [tokenHash],
  );
  return row ?? null;
}

export async function touchSession(db: Queryable, tokenHash: string, now: Date): Promise<void> {
  await db.query('UPDATE console_sessions SET last_seen_at = $2 WHERE token_hash = $1', [tokenHash, now]);
}

/**
 * Deletes the session and its key rows, and revokes those keys in the same transaction. Straight in the store,
 * not through the operator API: that needs the operator token, which a session of an older token no longer
 * has. Every instance drops its cached keys on the NOTIFY, as for an operator's revocation.
 */
export async function endSession(tx: Transaction, tokenHash: string, now: Date): Promise<void> {
  const keys = await tx.query<{ api_key_id: number }>('DELETE FROM console_session_keys WHERE session_hash = $1 RETURNING api_key_id', [tokenHash]);
  await tx.query('DELETE FROM console_sessions WHERE token_hash = $1', [tokenHash]);
  if (keys.length === 0) return;
  await tx.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = ANY($1::bigint[])', [keys.map((k) => String(k.api_key_id)), now]);
  await tx.notify(AUTH_CHANNEL);
}

/** A page of every session, in token-hash order after `afterHash`: the purge opens each sealed operator token. */
export async function sessionsAfter(db: Queryable, afterHash: string, limit: number): Promise<Array<{ token_hash: string; operator_token_sealed: string }>> {
  return db.query(
    'SELECT token_hash, operator_token_sealed FROM console_sessions WHERE token_hash > $1 ORDER BY token_hash LIMIT $2',
    [afterHash, limit],
  );
}

/** Up to `limit` sessions past their end or idle too long. */
export async function endedSessions(db: Queryable, now: Date, idleSince: Date, limit: number): Promise<string[]> {
  const rows = await db.query<{ token_hash: string }>(
    'SELECT token_hash FROM console_sessions WHERE expires_at <= $1 OR last_seen_at <= $2 LIMIT $3',
    [now, idleSince, limit],
  );
  return rows.map((r) => r.token_hash);
}

export async function findSessionKey(db: Queryable, tokenHash: string, accountId: number): Promise<SessionKeyRow | null> {
  const [row] = await db.query<SessionKeyRow>(
    'SELECT api_key_id, token_sealed FROM console_session_keys WHERE session_hash = $1 AND account_id = $2',
    [tokenHash, accountId],
  );
  return row ? { api_key_id: Number(row.api_key_id), token_sealed: row.token_sealed } : null;
}

/** False when another request of the session stored a key for the account first (that one is used). */
export async function insertSessionKey(db: Queryable, tokenHash: string, accountId: number, key: SessionKeyRow): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO console_session_keys (session_hash, account_id, api_key_id, token_sealed) VALUES ($1, $2, $3, $4)
     ON CONFLICT (session_hash, account_id) DO NOTHING RETURNING api_key_id`,
    [tokenHash, accountId, key.api_key_id, key.token_sealed],
  );
  return rows.length > 0;
}

/**
 * After the public API refused the stored key (revoked by an operator): the next call makes a new one. Only
 * that key's row: another request refused with it may already have stored the new one, which must stay.
 */
export async function forgetSessionKey(db: Queryable, tokenHash: string, accountId: number, apiKeyId: number): Promise<void> {
  await db.query('DELETE FROM console_session_keys WHERE session_hash = $1 AND account_id = $2 AND api_key_id = $3', [tokenHash, accountId, apiKeyId]);
}

/**
 * Puts a lock of the account on the allowlist of the session's key, so that the console can open it (POST
 * /v1/locks/{id}/unlock needs the lock on the calling key's allowlist). Only a lock of the key's account, on a
 * key that is not revoked; nothing when it is there already. True when the allowlist changed: every instance
 * drops its cached keys on the NOTIFY, as for any change of a key.
 */
export async function allowSessionKeyLock(tx: Transaction, apiKeyId: number, accountId: number, lockId: number): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE api_keys SET lock_allowlist = array_append(lock_allowlist, $3::bigint)
      WHERE id = $1 AND revoked_at IS NULL AND NOT ($3::bigint = ANY(lock_allowlist))
        AND EXISTS (SELECT 1 FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $3 AND l.account_id = $2)
      RETURNING id`,
    [apiKeyId, accountId, lockId],
  );
  if (rows.length === 0) return false;
  await tx.notify(AUTH_CHANNEL);
  return true;
}
