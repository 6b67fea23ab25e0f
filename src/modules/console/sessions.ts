// Console sessions (docs/console.md): the browser holds a random token in an HttpOnly cookie; the database
// holds its hash and the operator token sealed, so any instance can serve the session. The CSRF token is
// derived from the session token (HMAC), so nothing more is stored and it dies with the session.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { hashToken, newToken, sameHash } from '../../platform/secrets.ts';
import { endSession, endedSessions, findSession, insertSession, sessionsAfter, touchSession, type SessionRow } from './store.ts';

export const SESSION_COOKIE = 'latchkey_console';
/** A session ends this long after sign-in whatever happens, */
export const SESSION_LIFETIME_SECONDS = 12 * 3600;
/** or after this long without a request. */
export const SESSION_IDLE_SECONDS = 3600;
/** Sessions read per page by the purge. */
const PURGE_PAGE = 500;
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

  /** Ends the session and revokes the API keys it acted with. */
  async signOut(session: ConsoleSession): Promise<void> {
    await this.db.transaction((tx) => endSession(tx, session.tokenHash, this.clock.now()));
  }

  /**
   * Ends every session that is over and revokes the API keys it acted with, so none lives out the rest of
   * its 12 hours: past its end, idle, or signed in with another operator token than the current one (after
   * ADMIN_TOKEN changed, also so that going back to the old token revives nothing). Run at start and by the
   * job; the sessions are few (operators), so each sealed token is opened.
   */
  async purge(): Promise<number> {
    const now = this.clock.now();
    const over = new Set(await endedSessions(this.db, now, new Date(now.getTime() - SESSION_IDLE_SECONDS * 1000), PURGE_PAGE));
    for (let after = ''; ; ) {
      const page = await sessionsAfter(this.db, after, PURGE_PAGE);
      for (const row of page) if (!this.signedInWithCurrentToken(row.operator_token_sealed)) over.add(row.token_hash);
      if (page.length < PURGE_PAGE) break;
      after = (page.at(-1) as { token_hash: string }).token_hash;
    }
    for (const tokenHash of over) await this.db.transaction((tx) => endSession(tx, tokenHash, now));
    return over.size;
  }

  purgeJob(): Job {
    return { name: 'console-session-purge', everySeconds: 600, run: () => this.purge() };
  }

  /** False too when the server key cannot open it: such a session can never be resumed. */
  private signedInWithCurrentToken(sealed: string): boolean {
    try {
      return sameHash(hashToken(this.box.open(sealed)), this.adminTokenHash());
    } catch {
      return false;
    }
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
