// The error answers of the OpenAPI documents: every status an operation can answer with, each the Error
// envelope and a description naming its codes in words (spec: Errors; README: API notes). A route names its
// own with failures(); the route table adds those every route of its kind can give (withCommonFailures).
import type { TSchema } from '@sinclair/typebox';
import { ErrorEnvelope, type ErrorCode } from './errors.ts';
import { ref } from './openapi-schemas.ts';

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 415 | 422 | 429 | 500 | 502 | 503;
/** The codes of one status, each with what it means there. */
type Meanings = Partial<Record<ErrorCode, string>>;

const TITLES: Record<ErrorStatus, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Body too large',
  415: 'Unsupported media type',
  422: 'Unprocessable',
  429: 'Too many requests',
  500: 'Server error',
  502: 'Bad gateway',
  503: 'Unavailable',
};

/** What a code means at a status when the route says nothing more (spec: Errors, Status and code). */
const MEANINGS: Record<ErrorStatus, Meanings> = {
  400: { invalid_request: 'a query parameter, path parameter or header is malformed (a NUL character too), or the body is not JSON' },
  401: { unauthenticated: 'the API key is missing, invalid, expired or revoked' },
  403: {
    insufficient_scope: 'the API key lacks the scope of this operation',
    not_available: 'the API key belongs to a reseller (platform-mode) account',
    forbidden: 'the person is managed by the service and cannot be modified',
    lock_not_allowed: "the lock is not on the API key's allowlist",
  },
  404: { not_found: "no such row in the API key's scope" },
  409: {
    lockingsystem_rejected: 'the locking system refused the change; nothing was saved',
    invitation_not_pending: 'the invitation was already activated, has expired or was cancelled',
    idempotency_conflict: 'the Idempotency-Key was already used for another request (a different body, or another endpoint)',
    idempotency_in_progress: 'the first request with this Idempotency-Key is still running; retry after Retry-After',
    subscription_paused: 'the subscription is paused',
    lock_not_remote: 'the lock cannot be opened over the network',
    lock_offline: "the lock's device has not been heard from recently",
    gateway_in_use: 'locks, the access log or lock commands refer to the gateway',
  },
  410: { link_unusable: 'the setup link was cancelled, has expired or was already used' },
  413: { invalid_request: 'the body is larger than 1 MiB' },
  415: { invalid_request: 'the body is not application/json' },
  422: {
    validation_failed: 'the body failed validation; `details` names each field with its detail code',
    entitlement_exceeded: "the account's phone-key allowance is used up",
  },
  429: { rate_limited: 'a rate limit is exhausted; retry after Retry-After' },
  500: { server_error: 'an unexpected failure; the message quotes the request id' },
  502: { publish_failed: 'the command could not be handed to the device' },
  503: {
    not_available: 'the database cannot be reached or the service is shutting down; retry after Retry-After',
    broker_unavailable: 'the MQTT broker could not be updated; nothing was changed',
  },
};

/** The codes behind each answer made here, so that a status named twice merges its codes. */
const codesOf = new WeakMap<object, Meanings>();

function answer(status: ErrorStatus, meanings: Meanings): TSchema {
  const words = Object.entries(meanings).map(([code, text]) => `\`${code}\`: ${text}`);
  const schema = ref(ErrorEnvelope, { description: `${TITLES[status]}. ${words.join('. ')}.` });
  codesOf.set(schema, meanings);
  return schema;
}

function meaningsOf(status: ErrorStatus, codes: readonly ErrorCode[] | Meanings): Meanings {
  if (!Array.isArray(codes)) return codes as Meanings;
  const meanings: Meanings = {};
  for (const code of codes as readonly ErrorCode[]) {
    const text = MEANINGS[status][code];
    if (!text) throw new Error(`no meaning for ${status} ${code}: pass it as { ${code}: '…' }`);
    meanings[code] = text;
  }
  return meanings;
}

export type FailureSpec = Partial<Record<ErrorStatus, readonly ErrorCode[] | Meanings>>;

/** A route's own error answers: at each status its codes (their usual meaning) or code → meaning. */
export function failures(spec: FailureSpec): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const [status, codes] of Object.entries(spec)) {
    const s = Number(status) as ErrorStatus;
    out[s] = answer(s, meaningsOf(s, codes));
  }
  return out;
}

/** The answers every route of a kind can give: the public API's (spec: Errors) or the operator API's. */
function commonFailures(kind: 'public' | 'admin', takesBody: boolean): FailureSpec {
  const spec: FailureSpec =
    kind === 'public'
      ? {
          400: ['invalid_request'],
          401: ['unauthenticated'],
          403: ['insufficient_scope', 'not_available'],
          429: ['rate_limited'],
          500: ['server_error'],
          503: ['not_available'],
        }
      : {
          400: ['invalid_request'],
          401: { unauthenticated: 'the operator token (ADMIN_TOKEN) is missing or wrong' },
          500: ['server_error'],
          503: ['not_available'],
        };
  return takesBody ? { ...spec, 413: ['invalid_request'], 415: ['invalid_request'] } : spec;
}

/**
 * `response` with the answers every route of `kind` gives added; where the route names one of those statuses
 * too, the codes of both are listed (a code both name has both meanings).
 */
export function withCommonFailures(
  response: Record<string, unknown> | undefined,
  kind: 'public' | 'admin',
  takesBody: boolean,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...response };
  for (const [status, codes] of Object.entries(commonFailures(kind, takesBody))) {
    const s = Number(status) as ErrorStatus;
    const own = merged[status];
    const ownMeanings = own && typeof own === 'object' ? codesOf.get(own) : undefined;
    if (own && !ownMeanings) continue; // answered by the route in a shape of its own
    const meanings = meaningsOf(s, codes);
    for (const [code, text] of Object.entries(ownMeanings ?? {}) as Array<[ErrorCode, string]>) {
      const common = meanings[code];
      meanings[code] = common && common !== text ? `${text}; or ${common}` : text;
    }
    merged[status] = answer(s, meanings);
  }
  return merged;
}
