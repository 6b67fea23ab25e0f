// Console sessions (docs/console.md): the browser holds a random token in an HttpOnly cookie; the database
// holds its hash and the operator token sealed, so any instance can serve the session. The CSRF token is
// derived from the session token (HMAC), so nothing more is stored and it dies with the session.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { hashToken, newToken, sameHash } from '../../platform/secrets.ts';
import { deleteSession, endedSessions, findSession, insertSession, touchSession, type SessionRow } from './store.ts';

export const SESSION_COOKIE = 'latchkey_console';
/** A session ends this long after sign-in whatever happens, */
export const SESSION_LIFETIME_SECONDS = 12 * 3600;
/** or after this long without a request. */
export const SESSION_IDLE_SECONDS = 3600;
/** last_seen_at is written at most this often (one write a minute per session, not one per request). */
const TOUCH_EVERY_MS = 60_000;
const SESSION_TOKEN = /^lkc_[A-Za-z0-9_-]{43}$/;

export interface ConsoleSession {
  tokenHash: string;
  csrfToken: string;
  /** The operator token it signed in with: the console's calls to the operator API carry it. */
  operatorToken: string;
  expiresAt: Date;
}

export class ConsoleSessions {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    /** The operator token's current hash: a session signed in with an older token is over. */
    private readonly adminTokenHash: () => string,
  ) {}

  /** A new session for the right operator token; null for any other. */
  async signIn(operatorToken: string): Promise<{ cookieToken: string; session: ConsoleSession } | null> {
    if (!sameHash(hashToken(operatorToken), this.adminTokenHash())) return null;
    const cookieToken = newToken('lkc_');
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + SESSION_LIFETIME_SECONDS * 1000);
    const tokenHash = hashToken(cookieToken);
    await insertSession(this.db, { token_hash: tokenHash, operator_token_sealed: this.box.seal(operatorToken), last_seen_at: now, expires_at: expiresAt }, now);
    return { cookieToken, session: { tokenHash, csrfToken: csrfTokenOf(cookieToken), operatorToken, expiresAt } };
  }

  /** The live session of a cookie token, or null (unknown, ended, idle too long, or the operator token changed). */
  async resume(cookieToken: string | undefined, options: { touch: boolean } = { touch: true }): Promise<ConsoleSession | null> {
    if (cookieToken === undefined || !SESSION_TOKEN.test(cookieToken)) return null;
    const tokenHash = hashToken(cookieToken);
    const live = await this.live(tokenHash);
    if (!live) return null;
    const now = this.clock.now();
    if (options.touch && now.getTime() - live.row.last_seen_at.getTime() >= TOUCH_EVERY_MS) await touchSession(this.db, tokenHash, now);
    return { tokenHash, csrfToken: csrfTokenOf(cookieToken), operatorToken: live.operatorToken, expiresAt: live.row.expires_at };
  }

  /** Whether the session of this hash is still live (the live-update streams ask at each heartbeat). */
  async isLive(tokenHash: string): Promise<boolean> {
    return (await this.live(tokenHash)) !== null;
  }

  private async live(tokenHash: string): Promise<{ row: SessionRow; operatorToken: string } | null> {
    const row = await findSession(this.db, tokenHash);
    if (!row) return null;
    const now = this.clock.now().getTime();
    if (row.expires_at.getTime() <= now || row.last_seen_at.getTime() + SESSION_IDLE_SECONDS * 1000 <= now) return null;
    const operatorToken = this.box.open(row.operator_token_sealed);
    if (!sameHash(hashToken(operatorToken), this.adminTokenHash())) return null;
    return { row, operatorToken };
  }

  /** Ends the session; the ids of the API keys it acted with, for the caller to revoke. */
  async signOut(session: ConsoleSession): Promise<number[]> {
    return this.db.transaction((tx) => deleteSession(tx, session.tokenHash));
  }

  /**
   * Sessions past their end or idle: gone from the table, and the API keys they acted with revoked by
   * `revokeKeys` (through the operator API, with the token the session signed in with), so an abandoned
   * session leaves no usable key behind for the rest of its 12 hours.
   */
  purgeJob(revokeKeys: (operatorToken: string, keyIds: number[]) => Promise<void>): Job {
    return {
      name: 'console-session-purge',
      everySeconds: 600,
      run: async () => {
        const now = this.clock.now();
        const ended = await endedSessions(this.db, now, new Date(now.getTime() - SESSION_IDLE_SECONDS * 1000), 500);
        for (const session of ended) {
          if (session.key_ids.length > 0) await revokeKeys(this.box.open(session.operator_token_sealed), session.key_ids);
          await this.db.transaction((tx) => deleteSession(tx, session.token_hash));
        }
        return ended.length;
      },
    };
  }
}

export function csrfTokenOf(cookieToken: string): string {
  return createHmac('sha256', cookieToken).update('latchkey console csrf').digest('base64url');
}

/** Whether a request's X-CSRF-Token is the session's, compared in constant time. */
export function csrfMatches(session: ConsoleSession, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const given = Buffer.from(header);
  const expected = Buffer.from(session.csrfToken);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
