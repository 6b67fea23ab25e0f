// Bearer authentication of public API keys, with a per-instance cache that every instance drops on a
// NOTIFY whenever a key or an account changes (revocation must bite at once on every instance).
import { AUTH_CHANNEL } from './channels.ts';
import type { Clock } from './clock.ts';
import type { Database } from './db/index.ts';
import { InvalidatedCache } from './invalidated-cache.ts';
import { hashToken } from './secrets.ts';
import type { Scope } from './scopes.ts';

export const API_KEY_TOKEN_PREFIX = 'lk_';
const TOKEN_PATTERN = /^lk_[A-Za-z0-9_-]{43}$/;

/** Who is calling: an API key, its location scope and what it may do. Passed explicitly to services. */
export interface Caller {
  apiKeyId: number;
  apiKeyName: string;
  prefix: string;
  accountId: number;
  /** The key's own location; the caller sees it and its descendants. */
  locationId: number;
  scopes: ReadonlySet<Scope>;
  lockAllowlist: ReadonlySet<number>;
  reseller: boolean;
  expiresAt: Date;
  revoked: boolean;
}

// NOTIFY is the normal path; the TTL is the net for one missed (see InvalidatedCache).
const CACHE_TTL_MS = 30_000;
const CACHE_LIMIT = 10_000;

export class ApiKeyAuthenticator {
  private readonly cache = new InvalidatedCache<string, Caller>({ ttlMs: CACHE_TTL_MS, limit: CACHE_LIMIT });

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async start(): Promise<void> {
    await this.cache.follow(this.db, AUTH_CHANNEL);
  }

  invalidate(): void {
    this.cache.clear();
  }

  /** The caller for a bearer token, or null when it is malformed, unknown, revoked or expired. */
  async authenticate(token: string): Promise<Caller | null> {
    if (!TOKEN_PATTERN.test(token)) return null;
    // Keyed by the token itself so that a cache hit costs no hashing; the store only ever sees the hash.
    const caller = await this.cache.getOrLoad(token, () => this.load(hashToken(token)));
    if (!caller) return null;
    if (caller.revoked || caller.expiresAt.getTime() <= this.clock.now().getTime()) return null;
    return caller;
  }

  private async load(hash: string): Promise<Caller | null> {
    const rows = await this.db.query<{
      id: number;
      name: string;
      prefix: string;
      location_id: number;
      account_id: number;
      scopes: string[];
      lock_allowlist: number[];
      reseller: boolean;
      expires_at: Date;
      revoked_at: Date | null;
    }>(
      `SELECT k.id, k.name, k.prefix, k.location_id, l.account_id, k.scopes, k.lock_allowlist, a.reseller,
              k.expires_at, k.revoked_at
         FROM api_keys k
         JOIN locations l ON l.id = k.location_id
         JOIN accounts a ON a.id = l.account_id
        WHERE k.token_hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (!row) return null;
    return {
      apiKeyId: row.id,
      apiKeyName: row.name,
      prefix: row.prefix,
      accountId: row.account_id,
      locationId: row.location_id,
      scopes: new Set(row.scopes as Scope[]),
      lockAllowlist: new Set(row.lock_allowlist.map(Number)),
      reseller: row.reseller,
      expiresAt: row.expires_at,
      revoked: row.revoked_at !== null,
    };
  }
}
