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

/** Up to `limit` sessions past their end or idle too long, with the sealed operator token and their keys' ids. */
export async function endedSessions(
  db: Queryable,
  now: Date,
  idleSince: Date,
  limit: number,
): Promise<Array<{ token_hash: string; operator_token_sealed: string; key_ids: number[] }>> {
  const rows = await db.query<{ token_hash: string; operator_token_sealed: string; key_ids: Array<number | string> }>(
    `SELECT s.token_hash, s.operator_token_sealed,
            COALESCE(array_agg(k.api_key_id) FILTER (WHERE k.api_key_id IS NOT NULL), '{}') AS key_ids
       FROM console_sessions s LEFT JOIN console_session_keys k ON k.session_hash = s.token_hash
      WHERE s.expires_at <= $1 OR s.last_seen_at <= $2
      GROUP BY s.token_hash, s.operator_token_sealed
      LIMIT $3`,
    [now, idleSince, limit],
  );
  return rows.map((r) => ({ ...r, key_ids: r.key_ids.map(Number) }));
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
