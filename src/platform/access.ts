// The gate in front of every route: who may call it and how often.
// Order for the public API: failed-authentication lock-out, bearer authentication, rate limits
// (per key, then the route's own table entry, counted before validation and scope checks),
// reseller refusal, scope. Every answer of a public route carries X-RateLimit-* of the budget that
// counted it (README: API notes, rate limits). The operator API checks ADMIN_TOKEN and has no rate limits.
// Open routes may name a per-IP limit of their own, counted before anything else runs.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKeyAuthenticator, Caller } from './auth.ts';
import { errors } from './errors.ts';
import { FAILED_AUTH_PER_MINUTE, routeLimitKey, routeLimits, type LimitState, type OpenLimit, type RateLimits } from './rate-limit.ts';
import { sameHash, hashToken } from './secrets.ts';
import type { Scope } from './scopes.ts';

export type RouteAccess =
  /** Public API: a valid API key holding any one of `scopes`; none listed: any valid key (the 405 answers). */
  | { kind: 'public'; scopes: Scope[] }
  /** Operator API: ADMIN_TOKEN. */
  | { kind: 'admin' }
  /** No authentication (OpenAPI document, setup-link and key-holder pages); `perIp`: a budget per client address. */
  | { kind: 'open'; perIp?: OpenLimit };

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: RouteAccess;
  }
  interface FastifyRequest {
    caller?: Caller;
  }
}

export interface AccessDeps {
  authenticator: ApiKeyAuthenticator;
  limits: RateLimits;
  perMinute: number;
  adminTokenHash: () => string;
}

function bearer(request: FastifyRequest): string | null | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined; // no credentials at all
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null; // null: credentials present but malformed
}

function setLimitHeaders(reply: FastifyReply, states: LimitState[]): LimitState {
  // The limiter closest to exhaustion speaks for the response.
  const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  reply.header('x-ratelimit-limit', String(tightest.limit));
  reply.header('x-ratelimit-remaining', String(tightest.remaining));
  return tightest;
}

/**
 * The path parameters as the route's schema reads them (coerced, e.g. `007` -> 7), or null when they fail
 * it. Rate limits are counted before validation (onRequest), so they validate a copy themselves.
 */
function validatedParams(request: FastifyRequest): Record<string, unknown> | null {
  const params = { ...(request.params as Record<string, unknown>) };
  const validate = request.getValidationFunction('params');
  if (!validate) return params;
  return validate(params) === true ? params : null;
}

/** The caller of a public route; routes behind `kind: 'public'` always have one. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error('callerOf() used on a route without public access');
  return request.caller;
}

export function installAccessControl(app: FastifyInstance, deps: AccessDeps): void {
  const { authenticator, limits, perMinute } = deps;

  app.addHook('onRequest', async (request, reply) => {
    const access = request.routeOptions.config.access;
    if (!access) {
      // Unknown routes (404) take no credentials.
      return;
    }
    if (access.kind === 'open') {
      if (!access.perIp) return;
      // Before the handler, so that a guessed setup link or command id costs no database query past the limit.
      const state = await limits.consume(access.perIp.bucket, request.clientKey, access.perIp.perMinute);
      if (state.exceeded) throw limits.refusal(state);
      return;
    }
    if (access.kind === 'admin') {
      // Wrong operator tokens are counted per address in a budget of the operator API's own (the contract exempts it
      // from the public API's lock-out): past 30 a minute every operator call from there answers 429 until the minute
      // rolls. Uncounted, a token was guessed at thousands a second, and ADMIN_TOKEN may be one a person chose.
      const lockout = await limits.isExhausted('operator-auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
      if (lockout.exceeded) throw limits.refusal(lockout);
      const token = bearer(request);
      if (token === undefined) throw errors.operatorUnauthenticated();
      if (!token || !sameHash(hashToken(token), deps.adminTokenHash())) {
        await limits.consume('operator-auth-failed', request.clientKey, FAILED_AUTH_PER_MINUTE);
        throw errors.operatorUnauthenticated();
      }
      return;
    }

    const ip = request.clientKey;
    const lockout = await limits.isExhausted('auth-failed', ip, FAILED_AUTH_PER_MINUTE);
    if (lockout.exceeded) {
      // The lock-out is what refuses, whatever the key: its budget (30, none left) is the one described.
      setLimitHeaders(reply, [lockout]);
      throw limits.refusal(lockout);
    }

    const token = bearer(request);
    if (token === undefined) {
      // No credentials: counted in the shared per-IP bucket, then refused.
      const state = await limits.consume('anonymous', ip, perMinute);
      setLimitHeaders(reply, [state]);
      if (state.exceeded) throw limits.refusal(state);
      throw errors.unauthenticated();
    }
    const caller = token === null ? null : await authenticator.authenticate(token);
    if (!caller) {
      // Counted against the failed-authentication budget, which then says how many are left before the lock-out.
      setLimitHeaders(reply, [await limits.consume('auth-failed', ip, FAILED_AUTH_PER_MINUTE)]);
      throw errors.unauthenticated();
    }
    request.caller = caller;

    const states = [await limits.consume('api-key', String(caller.apiKeyId), perMinute)];
    const routeLimit = routeLimits[`${request.method} ${request.routeOptions.url}`];
    const routeKey = routeLimit ? routeLimitKey(routeLimit, caller.apiKeyId, validatedParams(request)) : null;
    if (routeLimit && routeKey !== null) states.push(await limits.consume(routeLimit.bucket, routeKey, routeLimit.perMinute));
    setLimitHeaders(reply, states);
    const exceeded = states.find((s) => s.exceeded);
    if (exceeded) throw limits.refusal(exceeded);

    if (caller.reseller) throw errors.notAvailable();
    if (access.scopes.length > 0 && !access.scopes.some((scope) => caller.scopes.has(scope))) throw errors.insufficientScope(access.scopes.join(' or '));
  });
}
