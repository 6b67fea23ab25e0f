// The console's only way to data: its calls are handed to the service's own operator and public API
// routes (app.inject: the same validation, rules, hooks and answers as any client), never to the database.
// The operator API is called with the session's operator token; the public API with an API key the session
// holds in that account (root location, every scope), made through the operator API on first use.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SecretBox } from '../../platform/secret-box.ts';
import { SCOPES } from '../../platform/scopes.ts';
import type { Database } from '../../platform/db/index.ts';
import type { ConsoleSession } from './sessions.ts';
import { allowSessionKeyLock, findSessionKey, forgetSessionKey, insertSessionKey } from './store.ts';

export const CONSOLE_API_PREFIX = '/console/api';
/** The header naming the account a public API call acts in. */
export const ACCOUNT_HEADER = 'latchkey-account';
export const CONSOLE_KEY_NAME = 'Operator console';
/** A remote unlock through the public API: the session's key needs the lock on its allowlist first. */
const UNLOCK_PATH = /^\/v1\/locks\/([1-9][0-9]{0,15})\/unlock(?:\?|$)/;

const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'idempotency-key'];
const FORWARDED_ANSWER_HEADERS = ['content-type', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-request-id', 'allow'];

export interface ProxiedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

type Target = { kind: 'operator'; path: string } | { kind: 'public'; path: string; accountId: number } | { kind: 'refused'; reason: string };

/** Where a console call goes: the operator API, the public API for the account of the header, or nowhere. */
export function targetOf(url: string, accountHeader: string | string[] | undefined): Target {
  const path = url.slice(CONSOLE_API_PREFIX.length);
  // Dot segments would let a path leave the API it names on its way through the router.
  if (/(^|\/)(\.|%2e){1,2}(\/|\?|$)/i.test(path)) return { kind: 'refused', reason: 'The path has dot segments.' };
  // A backslash is read as a slash on the way (`..\..\healthz` left /admin/v1/): no API path has one.
  if (/\\|%5c/i.test(path.split('?', 1)[0] as string)) return { kind: 'refused', reason: 'The path has a backslash.' };
  if (path.startsWith('/admin/v1/')) return { kind: 'operator', path };
  if (path.startsWith('/v1/')) {
    const accountId = typeof accountHeader === 'string' && /^[1-9][0-9]{0,15}$/.test(accountHeader) ? Number(accountHeader) : null;
    if (accountId === null) return { kind: 'refused', reason: 'A public API call needs the Latchkey-Account header with an account id.' };
    return { kind: 'public', path, accountId };
  }
  return { kind: 'refused', reason: 'The console API forwards only /admin/v1/ and /v1/ paths.' };
}

export class ConsoleProxy {
  /**
   * The key being made per session and account: a page's first load asks several lists at once, and each
   * found no key stored yet, so each made one (two keys 80 ms apart, the loser revoked 6 ms later, both in the
   * account's key list). The requests after the first wait for its key instead.
   */
  private readonly making = new Map<string, Promise<{ id: number; token: string } | ProxiedAnswer>>();

  constructor(
    private readonly app: FastifyInstance,
    private readonly db: Database,
    private readonly box: SecretBox,
    /** Drops this instance's cached API keys at once (the NOTIFY reaches the others). */
    private readonly invalidateKeys: () => void = () => undefined,
  ) {}

  async operator(session: ConsoleSession, request: FastifyRequest, path: string): Promise<ProxiedAnswer> {
    return this.forward(request, path, session.operatorToken);
  }

  /** A public API call in the account; a key revoked behind the session's back is replaced once. */
  async public(session: ConsoleSession, request: FastifyRequest, path: string, accountId: number): Promise<ProxiedAnswer> {
    for (let attempt = 0; ; attempt++) {
      const key = await this.accountKey(session, accountId);
      if ('status' in key) return key;
      const unlock = request.method === 'POST' ? UNLOCK_PATH.exec(path) : null;
      if (unlock && (await this.db.transaction((tx) => allowSessionKeyLock(tx, key.id, accountId, Number(unlock[1]))))) this.invalidateKeys();
      const answer = await this.forward(request, path, key.token);
      if (answer.status !== 401 || attempt > 0) return answer;
      await forgetSessionKey(this.db, session.tokenHash, accountId, key.id);
    }
  }

  /** The operator API calls the console makes itself (its account keys). */
  async call(session: Pick<ConsoleSession, 'operatorToken'>, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<ProxiedAnswer> {
    const response = await this.app.inject({
      method,
      url: path,
      headers: { authorization: `Bearer ${session.operatorToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: response.statusCode, headers: pickHeaders(response.headers), body: response.body };
  }

  private async forward(request: FastifyRequest, path: string, token: string): Promise<ProxiedAnswer> {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const response = await this.app.inject({
      method: request.method as 'GET',
      url: path,
      headers,
      // The browser's address, so the APIs' per-IP rules see the browser, not this process.
      remoteAddress: request.ip,
      ...(request.body === undefined || request.body === null ? {} : { payload: JSON.stringify(request.body) }),
    });
    return { status: response.statusCode, headers: pickHeaders(response.headers), body: response.body };
  }

  /** The session's key in the account: stored, or made now, once (the account's answer when it does not exist). */
  private async accountKey(session: ConsoleSession, accountId: number): Promise<{ id: number; token: string } | ProxiedAnswer> {
    const stored = await findSessionKey(this.db, session.tokenHash, accountId);
    if (stored) return { id: stored.api_key_id, token: this.box.open(stored.token_sealed) };
    const slot = `${session.tokenHash}:${accountId}`;
    const running = this.making.get(slot);
    if (running) return running;
    const made = this.makeAccountKey(session, accountId).finally(() => this.making.delete(slot));
    this.making.set(slot, made);
    return made;
  }

  private async makeAccountKey(session: ConsoleSession, accountId: number): Promise<{ id: number; token: string } | ProxiedAnswer> {
    // Stored meanwhile by a request that made it between this one's read and its turn here.
    const stored = await findSessionKey(this.db, session.tokenHash, accountId);
    if (stored) return { id: stored.api_key_id, token: this.box.open(stored.token_sealed) };

    const account = await this.call(session, 'GET', `/admin/v1/accounts/${accountId}`);
    if (account.status !== 200) return account;
    const rootLocationId = (JSON.parse(account.body) as { root_location: { id: number } }).root_location.id;
    const made = await this.call(session, 'POST', '/admin/v1/api_keys', {
      location_id: rootLocationId,
      name: CONSOLE_KEY_NAME,
      scopes: SCOPES,
      expires_at: session.expiresAt.toISOString(),
    });
    if (made.status !== 201) return made;
    const key = JSON.parse(made.body) as { id: number; token: string };
    if (await insertSessionKey(this.db, session.tokenHash, accountId, { api_key_id: key.id, token_sealed: this.box.seal(key.token) })) {
      return { id: key.id, token: key.token };
    }
    // Another instance serving this session stored its key first: use that one, revoke this one.
    await this.call(session, 'DELETE', `/admin/v1/api_keys/${key.id}`);
    const winner = await findSessionKey(this.db, session.tokenHash, accountId);
    return winner ? { id: winner.api_key_id, token: this.box.open(winner.token_sealed) } : this.makeAccountKey(session, accountId);
  }
}

function pickHeaders(headers: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of FORWARDED_ANSWER_HEADERS) {
    const value = headers[name];
    if (value !== undefined) picked[name] = String(value);
  }
  return picked;
}
