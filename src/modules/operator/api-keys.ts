// API keys as the operator issues them: the token shown once and stored hashed, expiry rules, the lock
// allowlist inside the key's scope (README "API notes": Expired keys).
import { API_KEY_TOKEN_PREFIX } from '../../platform/auth.ts';
import { AUTH_CHANNEL } from '../../platform/channels.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import { hashToken, newToken } from '../../platform/secrets.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { requireLocation } from './accounts.ts';
import type { ApiKey, ApiKeyCreate } from './schemas.ts';
import type { OperatorDeps } from './service.ts';
import { insertApiKey, listApiKeys, type OwnerFilter, locksUnder, revokeApiKey, userInAccount, type ApiKeyRow } from './store.ts';

/**
 * The same instant `years` calendar years later (29 February to 1 March): a key lives one by default
 * ("now + 1 year"), two at most. 365 days fell a day short across a 29 February.
 */
function yearsAfter(date: Date, years: number): Date {
  const later = new Date(date);
  later.setUTCFullYear(later.getUTCFullYear() + years);
  return later;
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    location_id: row.location_id,
    scopes: row.scopes,
    lock_allowlist: row.lock_allowlist.map(Number),
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    created_by_user_id: row.created_by_user_id,
  };
}

/** `expires_at` as sent (strictly in the future, at most two years ahead), or one year from now. */
function expiryOf(sent: string | undefined, now: Date, details: ErrorDetail[]): Date {
  const fallback = yearsAfter(now, 1);
  if (sent === undefined) return fallback;
  const parsed = parseClientTimestamp(sent);
  if (!parsed) details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at is not a valid date-time.' });
  else if (parsed.getTime() <= now.getTime()) details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be in the future.' });
  else if (parsed.getTime() > yearsAfter(now, 2).getTime()) {
    details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at may be at most 2 years ahead.' });
  } else return parsed;
  return fallback;
}

export class ApiKeysService {
  constructor(private readonly deps: Pick<OperatorDeps, 'db' | 'clock'>) {}

  async create(body: ApiKeyCreate): Promise<ApiKey & { token: string }> {
    const { db } = this.deps;
    const now = this.deps.clock.now();
    const location = await requireLocation(db, body.location_id, 'location_id');
    const details: ErrorDetail[] = [];
    const expiresAt = expiryOf(body.expires_at, now, details);

    const allowlist = body.lock_allowlist ?? [];
    if (allowlist.length > 0) {
      // Every allowed lock must be one the key can see: its location or a descendant.
      const seen = await locksUnder(db, allowlist, location.id);
      allowlist.forEach((id, index) => {
        if (!seen.has(id)) {
          details.push({ field: `lock_allowlist[${index}]`, code: 'invalid', message: `Lock ${id} is not in this key's location.` });
        }
      });
    }

    const userId = body.created_by_user_id ?? null;
    if (userId !== null && !(await userInAccount(db, userId, location.account_id))) {
      details.push({ field: 'created_by_user_id', code: 'invalid', message: `No user ${userId} in this account.` });
    }
    if (details.length > 0) throw errors.validation(details);

    const token = newToken(API_KEY_TOKEN_PREFIX);
    const row = await insertApiKey(
      db,
      {
        location_id: location.id,
        name: body.name,
        tokenHash: hashToken(token),
        prefix: token.slice(0, API_KEY_TOKEN_PREFIX.length + 8),
        scopes: body.scopes,
        lock_allowlist: allowlist,
        expires_at: expiresAt,
        created_by_user_id: userId,
      },
      now,
    );
    return { ...toApiKey(row), token };
  }

  async list(page: PageRequest, owner: OwnerFilter): Promise<PageOf<ApiKey>> {
    const rows = await listApiKeys(this.deps.db, owner, page.afterId, page.limit + 1);
    return toPage(rows.map(toApiKey), page.limit, (k) => k.id, 'op.api_keys');
  }

  /** Revocation bites at once on every instance: cached keys are dropped everywhere. Revoking twice is harmless. */
  async revoke(id: number): Promise<void> {
    const { db } = this.deps;
    await db.transaction(async (tx) => {
      if (!(await revokeApiKey(tx, id, this.deps.clock.now()))) throw errors.notFound('API key');
      await tx.notify(AUTH_CHANNEL);
    });
  }
}
