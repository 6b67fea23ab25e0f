// The operator token: ADMIN_TOKEN from the environment, or one generated on the first start that succeeds,
// kept (hashed) in the data store and printed once. A generated token is kept only once the service listens
// (keepGenerated), so a start that fails later (a busy port) loses nothing: the next start makes another.
import type { Database } from './db/index.ts';
import { hashToken, newToken } from './secrets.ts';

export const ADMIN_TOKEN_SETTING = 'admin_token_hash';

export interface AdminToken {
  /** The hash the operator API and the console check now. */
  hash(): string;
  /**
   * After a successful start: keeps the token this start generated (when the store holds none yet) and returns
   * it, to be shown once; null when ADMIN_TOKEN is set, a token was kept before, or another instance kept its
   * own first (this one then takes that one's hash).
   */
  keepGenerated(): Promise<string | null>;
}

export async function loadAdminToken(db: Database, configured: string | null): Promise<AdminToken> {
  if (configured) {
    const hash = hashToken(configured);
    return { hash: () => hash, keepGenerated: async () => null };
  }
  const [existing] = await db.query<{ value: string }>(`SELECT value FROM settings WHERE key = $1`, [ADMIN_TOKEN_SETTING]);
  if (existing) return { hash: () => existing.value, keepGenerated: async () => null };
  // Not kept yet: nobody knows this token until it is printed, so accepting it meanwhile opens nothing.
  let pending: string | null = newToken('lk_admin_');
  let hash = hashToken(pending);
  return {
    hash: () => hash,
    async keepGenerated() {
      const generated = pending;
      if (!generated) return null;
      pending = null;
      // Two instances starting together on one database agree on the first token written.
      const inserted = await db.query<{ value: string }>(
        `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value`,
        [ADMIN_TOKEN_SETTING, hash],
      );
      if (inserted[0]) return generated;
      const [kept] = await db.query<{ value: string }>(`SELECT value FROM settings WHERE key = $1`, [ADMIN_TOKEN_SETTING]);
      hash = (kept as { value: string }).value;
      return null;
    },
  };
}

/**
 * `npm run operator-token -- --reset`: a new generated operator token replaces the kept one (the old one stops
 * working once the instances restart: they read the hash at start). Returns the new token, to be shown once.
 */
export async function resetAdminToken(db: Database): Promise<string> {
  const token = newToken('lk_admin_');
  await db.query(
    `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
    [ADMIN_TOKEN_SETTING, hashToken(token)],
  );
  return token;
}
