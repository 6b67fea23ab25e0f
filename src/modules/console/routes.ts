// The console's server surface (docs/console.md): sign-in and sign-out, the forwarder to the operator and
// public APIs, and the live-update stream. The app shell and its assets are in assets.ts.
// These routes are `open` to the service's access hook: they check the console session themselves, with
// the public API's per-IP failed-authentication limit in front.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { FAILED_AUTH_PER_MINUTE, type RateLimits } from '../../platform/rate-limit.ts';
import type { LiveUpdates } from './live.ts';
import { ACCOUNT_HEADER, CONSOLE_API_PREFIX, type ConsoleProxy, targetOf } from './proxy.ts';
import { csrfMatches, SESSION_COOKIE, SESSION_LIFETIME_SECONDS, type ConsoleSession, type ConsoleSessions } from './sessions.ts';

export interface ConsoleRouteDeps {
  sessions: ConsoleSessions;
  proxy: ConsoleProxy;
  live: LiveUpdates;
  limits: RateLimits;
  /** PUBLIC_URL: an https one makes the cookie Secure even behind a proxy that does not say so. */
  publicUrl: string;
}

const open = { access: { kind: 'open' as const } };
/** A sign-in body is a token of at most 512 characters: no more is read from anyone. */
const SIGN_IN_BODY_LIMIT = 4 * 1024;
const SignIn = Type.Object({ token: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });
const READ_METHODS = new Set(['GET', 'HEAD']);

export function consoleRoutes(app: ApiInstance, deps: ConsoleRouteDeps): void {
  const { sessions, proxy, live, limits } = deps;

  /** The failed-authentication lock-out first, then the cookie's session; a wrong cookie counts as a failure. */
  async function sessionOf(request: FastifyRequest): Promise<ConsoleSession> {
    const lockout = await limits.isExhausted('auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
    if (lockout.exceeded) throw limits.refusal(lockout);
    const session = await sessions.resume(cookieOf(request, SESSION_COOKIE));
    if (!session) {
      if (cookieOf(request, SESSION_COOKIE) !== undefined) await limits.consume('auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
      throw errors.consoleSignInRequired();
    }
    return session;
  }

  async function changeSessionOf(request: FastifyRequest): Promise<ConsoleSession> {
    const session = await sessionOf(request);
    if (READ_METHODS.has(request.method)) return session;
    if (!csrfMatches(session, request.headers['x-csrf-token'])) throw errors.csrfRejected();
    // Defence in depth beside the token: a browser names the page's origin on a change; another host's is refused.
    if (!sameOrigin(request)) throw errors.csrfRejected();
    return session;
  }

  const secure = (request: FastifyRequest): boolean => request.protocol === 'https' || deps.publicUrl.startsWith('https:');

  app.post('/console/session', { config: open, bodyLimit: SIGN_IN_BODY_LIMIT, schema: { hide: true, body: SignIn } }, async (request, reply) => {
    const lockout = await limits.isExhausted('auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
    if (lockout.exceeded) throw limits.refusal(lockout);
    const signedIn = await sessions.signIn(request.body.token);
    if (!signedIn) {
      await limits.consume('auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
      throw errors.consoleSignInFailed();
    }
    setCookie(reply, signedIn.cookieToken, SESSION_LIFETIME_SECONDS, secure(request));
    return { csrf_token: signedIn.session.csrfToken, expires_at: signedIn.session.expiresAt.toISOString() };
  });

  app.get('/console/session', { config: open, schema: { hide: true } }, async (request) => {
    const session = await sessionOf(request);
    return { csrf_token: session.csrfToken, expires_at: session.expiresAt.toISOString() };
  });

  app.delete('/console/session', { config: open, schema: { hide: true } }, async (request, reply) => {
    const session = await changeSessionOf(request);
    await sessions.signOut(session); // its keys are revoked with it
    live.end(session.tokenHash);
    setCookie(reply, '', 0, secure(request));
    return reply.code(204).send(null);
  });

  // The session is checked before the body is read: without one, nothing is parsed.
  const forwarding = new WeakMap<FastifyRequest, ConsoleSession>();
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: `${CONSOLE_API_PREFIX}/*`,
    config: open,
    schema: { hide: true },
    onRequest: async (request) => {
      forwarding.set(request, await changeSessionOf(request));
    },
    handler: async (request, reply) => {
      const session = forwarding.get(request);
      if (!session) throw new Error('the forwarder ran without its onRequest hook');
      const target = targetOf(request.url, request.headers[ACCOUNT_HEADER]);
      if (target.kind === 'refused') throw errors.invalidRequest(target.reason);
      const answer = target.kind === 'operator' ? await proxy.operator(session, request, target.path) : await proxy.public(session, request, target.path, target.accountId);
      return reply.code(answer.status).headers(answer.headers).send(answer.body === '' ? null : answer.body);
    },
  });

  app.get('/console/live', { config: open, schema: { hide: true } }, async (request, reply) => {
    const session = await sessionOf(request);
    if (!live.canOpen(session.tokenHash)) throw errors.rateLimited(30);
    live.open(session.tokenHash, reply);
  });
}

/**
 * True without an Origin header (not a browser) or when it names this host. Host names are compared, not
 * ports: a TLS proxy in front changes the port the service sees, and another port of the same host is the
 * same site to the cookie anyway.
 */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).hostname === new URL(`http://${request.host}`).hostname;
  } catch {
    return false;
  }
}

function cookieOf(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/** The session cookie: HttpOnly, SameSite=Strict, only for /console; an empty value with Max-Age=0 removes it. */
function setCookie(reply: FastifyReply, value: string, maxAgeSeconds: number, secure: boolean): void {
  const attributes = [`${SESSION_COOKIE}=${value}`, 'Path=/console', `Max-Age=${maxAgeSeconds}`, 'HttpOnly', 'SameSite=Strict'];
  if (secure) attributes.push('Secure');
  reply.header('set-cookie', attributes.join('; '));
}
