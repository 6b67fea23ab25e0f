// The operator token: ADMIN_TOKEN from the environment, or one generated on first start, kept (hashed)
// in the data store and printed once.
import type { Database } from './db/index.ts';
import { hashToken, newToken } from './secrets.ts';

export async function ensureAdminToken(
  db: Database,
  configured: string | null,
): Promise<{ hash: string; generated: string | null }> {
  if (configured) return { hash: hashToken(configured), generated: null };
  const generated = newToken('lk_admin_');
  // Two instances starting together on one database agree on the first token written.
  const inserted = await db.query<{ value: string }>(
    `INSERT INTO settings (key, value) VALUES ('admin_token_hash', $1) ON CONFLICT (key) DO NOTHING RETURNING value`,
    [hashToken(generated)],
  );
  if (inserted[0]) return { hash: inserted[0].value, generated };
  const [existing] = await db.query<{ value: string }>(`SELECT value FROM settings WHERE key = 'admin_token_hash'`);
  return { hash: (existing as { value: string }).value, generated: null };
}
