// The one error class. Thrown anywhere, mapped to the spec's envelope in one place (platform/http.ts).

export interface ErrorDetail {
  field: string;
  code: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  toBody(): { error: { code: string; message: string; details?: ErrorDetail[] } } {
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

export const errors = {
  invalidRequest: (message: string) => new ApiError(400, 'invalid_request', message),
  unauthenticated: () => new ApiError(401, 'unauthenticated', 'A valid API key is required.'),
  insufficientScope: (needed: string) =>
    new ApiError(403, 'insufficient_scope', `This API key lacks the scope ${needed}.`),
  notAvailable: (message = 'Reseller accounts are not supported in API v1.') =>
    new ApiError(403, 'not_available', message),
  notFound: (what = 'resource') => new ApiError(404, 'not_found', `No such ${what}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new ApiError(405, 'invalid_request', `Method ${method} is not supported on this path.`, undefined, {
      allow: allowed.join(', '),
    }),
  validation: (details: ErrorDetail[]) =>
    new ApiError(422, 'validation_failed', 'The request body failed validation.', details),
  invalidField: (field: string, message: string) =>
    new ApiError(422, 'validation_failed', 'The request body failed validation.', [{ field, code: 'invalid', message }]),
  /** Server PostgreSQL is away or did not answer in time (README: Faults); the spec's one 503 code. */
  databaseUnavailable: () =>
    new ApiError(503, 'not_available', 'The service cannot reach its database; retry after the time in Retry-After.', undefined, {
      'retry-after': String(DATABASE_RETRY_AFTER_SECONDS),
    }),
  rateLimited: (retryAfterSeconds: number) =>
    new ApiError(429, 'rate_limited', 'Rate limit exceeded; retry after the time in Retry-After.', undefined, {
      'retry-after': String(retryAfterSeconds),
    }),
};
