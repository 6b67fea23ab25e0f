// The one error class and its closed catalogue. Every error the service answers with is built by a
// named factory below; call sites never spell a code. Mapped to the spec's envelope in one place
// (platform/http.ts); the OpenAPI document lists ERROR_CODES and DETAIL_CODES as enums.
import { type Static, Type } from '@sinclair/typebox';
import { named, ref } from './openapi-schemas.ts';

/** `error.code` of the envelope: the spec's table (README: API notes adds gateway_in_use, broker_unavailable, link_unusable). */
export const ERROR_CODES = [
  'invalid_request',
  'unauthenticated',
  'insufficient_scope',
  'not_available',
  'forbidden',
  'lock_not_allowed',
  'not_found',
  'lockingsystem_rejected',
  'invitation_not_pending',
  'idempotency_conflict',
  'idempotency_in_progress',
  'subscription_paused',
  'lock_not_remote',
  'lock_offline',
  'gateway_in_use',
  'link_unusable',
  'validation_failed',
  'entitlement_exceeded',
  'rate_limited',
  'server_error',
  'publish_failed',
  'broker_unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** `details[].code` of a 422 validation_failed. */
export const DETAIL_CODES = [
  'invalid',
  'unknown_field',
  'reserved_name',
  'unknown_security_group',
  'sms_disabled',
  'limit_reached',
  'not_editable',
] as const;
export type DetailCode = (typeof DETAIL_CODES)[number];

const ErrorDetailSchema = named(
  'ErrorDetail',
  Type.Object({
    field: Type.String({ description: 'the offending field, e.g. `phone` or `security_groups[0]`' }),
    code: Type.Unsafe<DetailCode>({ type: 'string', enum: [...DETAIL_CODES] }),
    message: Type.String(),
  }),
);

/** The spec's envelope of every non-2xx answer; the OpenAPI document shows both codes as enums. */
export const ErrorEnvelope = named(
  'Error',
  Type.Object(
    {
      error: Type.Object({
        code: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...ERROR_CODES] }),
        message: Type.String(),
        details: Type.Optional(Type.Array(ref(ErrorDetailSchema), { description: 'only with `validation_failed`' })),
      }),
    },
    { description: 'The envelope of every answer that is not a success (spec: Errors).' },
  ),
);

export type ErrorDetail = Static<typeof ErrorDetailSchema>;
export type ErrorBody = Static<typeof ErrorEnvelope>;

export class ApiError extends Error {
  /** Only the factories in `errors` construct one (an ESLint rule enforces it), so the catalogue stays closed. */
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): ErrorBody {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.details ? { details: this.details } : {}),
      },
    };
  }
}

/** Retry-After of a 503 during a database outage: about the longest wait before a lost connection is made again. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
/** Retry-After of 409 idempotency_in_progress (the spec fixes 2). */
export const IDEMPOTENCY_RETRY_AFTER_SECONDS = 2;

const build = (status: number, code: ErrorCode, message: string, details?: ErrorDetail[], headers?: Record<string, string>): ApiError =>
  new ApiError(status, code, message, details, headers);

/** One detail of a 422, for services that gather several before throwing `errors.validation`. */
export const detail = (field: string, code: DetailCode, message: string): ErrorDetail => ({ field, code, message });

export const errors = {
  // 400
  invalidRequest: (message: string) => build(400, 'invalid_request', message),
  /** A client error Fastify or Node's parser found (malformed JSON, 413, 415, 431 …): invalid_request with its status. */
  badRequest: (status: number, message: string) => build(status, 'invalid_request', message),
  // 401, 403
  unauthenticated: () => build(401, 'unauthenticated', 'A valid API key is required.'),
  operatorUnauthenticated: () => build(401, 'unauthenticated', 'A valid operator token (ADMIN_TOKEN) is required.'),
  consoleSignInRequired: () => build(401, 'unauthenticated', 'Sign in to the console first.'),
  /** The key holder's page: the passkey's answer did not check out (no detail: nothing for a prober). */
  passkeyRefused: () => build(401, 'unauthenticated', 'The passkey could not be verified; try again.'),
  consoleSignInFailed: () => build(401, 'unauthenticated', 'That is not the operator token.'),
  insufficientScope: (needed: string) => build(403, 'insufficient_scope', `This API key lacks the scope ${needed}.`),
  notAvailable: (message = 'Reseller accounts are not supported in API v1.') => build(403, 'not_available', message),
  personManaged: () => build(403, 'forbidden', 'This person is managed by the service and cannot be modified.'),
  csrfRejected: () => build(403, 'forbidden', 'A change needs the X-CSRF-Token header of this session.'),
  lockNotAllowed: () => build(403, 'lock_not_allowed', "This lock is not on the API key's allowlist."),
  // 404, 405
  notFound: (what = 'resource') => build(404, 'not_found', `No such ${what}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    build(405, 'invalid_request', `Method ${method} is not supported on this path.`, undefined, { allow: allowed.join(', ') }),
  // 409
  lockingSystemRejected: () => build(409, 'lockingsystem_rejected', 'The locking system refused the change; nothing was saved.'),
  invitationNotPending: () => build(409, 'invitation_not_pending', 'The invitation is not pending.'),
  idempotencyConflict: () =>
    build(409, 'idempotency_conflict', 'This Idempotency-Key was already used for another request: a different body, or another endpoint.'),
  idempotencyInProgress: () =>
    build(409, 'idempotency_in_progress', 'The first request with this Idempotency-Key is still running.', undefined, {
      'retry-after': String(IDEMPOTENCY_RETRY_AFTER_SECONDS),
    }),
  subscriptionPaused: () => build(409, 'subscription_paused', 'The subscription is paused; resume it first.'),
  lockNotRemote: () => build(409, 'lock_not_remote', 'This lock cannot be opened over the network.'),
  lockOffline: () => build(409, 'lock_offline', "The lock's device has not been heard from recently."),
  gatewayHasLocks: () => build(409, 'gateway_in_use', 'Locks are on this gateway; it cannot be deleted while they are.'),
  controllerHoldsCards: (cards: number) =>
    build(
      409,
      'gateway_in_use',
      `${cards} card${cards === 1 ? '' : 's'} Latchkey wrote ${cards === 1 ? 'is' : 'are'} still on this controller, not yet taken off its board. They are taken off as soon as the board takes the change (or reconcile it); delete it with force=true only if the board is gone for good.`,
    ),
  gatewayHasHistory: () =>
    build(409, 'gateway_in_use', 'The access log refers to this gateway, so it is kept; rotate its password to cut it off.'),
  // 410
  linkUnusable: () => build(410, 'link_unusable', 'This setup link was cancelled, has expired or was already used.'),
  // 422
  validation: (details: ErrorDetail[]) => build(422, 'validation_failed', 'The request body failed validation.', details),
  /** A query parameter the spec answers with 422 rather than 400 (`GET /invitations?state=`). */
  queryValidation: (details: ErrorDetail[]) => build(422, 'validation_failed', 'The query failed validation.', details),
  invalidField: (field: string, message: string) => errors.validation([detail(field, 'invalid', message)]),
  entitlementExceeded: () => build(422, 'entitlement_exceeded', "The account's phone-key allowance is used up."),
  // 429
  rateLimited: (retryAfterSeconds: number) =>
    build(429, 'rate_limited', 'Rate limit exceeded; retry after the time in Retry-After.', undefined, {
      'retry-after': String(retryAfterSeconds),
    }),
  // 500
  /** The one body of a 500: no internals, the request id to find the details in the log. */
  serverError: (requestId: string) => build(500, 'server_error', `An unexpected error occurred (request ${requestId}).`),
  // 502, 503
  publishFailed: () => build(502, 'publish_failed', 'The command could not be handed to the device.'),
  revocationDisabled: () => build(503, 'not_available', 'Key revocation is not enabled on this server.'),
  controllerUnreachable: () => build(503, 'not_available', 'The controller did not answer; check its address and network, then try again.'),
  shuttingDown: () => build(503, 'not_available', 'The service is shutting down; retry the request.'),
  /** Server PostgreSQL is away or did not answer in time (README: Faults); the spec's one 503 code. */
  databaseUnavailable: () =>
    build(503, 'not_available', 'The service cannot reach its database; retry after the time in Retry-After.', undefined, {
      'retry-after': String(DATABASE_RETRY_AFTER_SECONDS),
    }),
  brokerUnavailable: (reason: string, late: string) =>
    build(503, 'broker_unavailable', `The MQTT broker could not be updated (${reason}); nothing was changed. Retry later.${late}`),
};
