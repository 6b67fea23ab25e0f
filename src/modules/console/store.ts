// The SQL of console sessions and the API keys they act with per account (migration 012).
import type { Queryable } from '../../platform/db/index.ts';

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

/** Deletes the session and its key rows; the keys' ids, to revoke them. */
export async function deleteSession(db: Queryable, tokenHash: string): Promise<number[]> {
  const keys = await db.query<{ api_key_id: number }>('DELETE FROM console_session_keys WHERE session_hash = $1 RETURNING api_key_id', [tokenHash]);
  await db.query('DELETE FROM console_sessions WHERE token_hash = $1', [tokenHash]);
  return keys.map((k) => Number(k.api_key_id));
}

/** Sessions past their end or idle too long (their keys expire with them); how many went. */
export async function purgeSessions(db: Queryable, now: Date, idleSince: Date): Promise<number> {
  const rows = await db.query(
    `DELETE FROM console_sessions WHERE token_hash IN (
       SELECT token_hash FROM console_sessions WHERE expires_at <= $1 OR last_seen_at <= $2 LIMIT 1000)
     RETURNING token_hash`,
    [now, idleSince],
  );
  return rows.length;
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

/** After the public API refused the stored key (revoked by an operator): the next call makes a new one. */
export async function forgetSessionKey(db: Queryable, tokenHash: string, accountId: number): Promise<void> {
  await db.query('DELETE FROM console_session_keys WHERE session_hash = $1 AND account_id = $2', [tokenHash, accountId]);
}
