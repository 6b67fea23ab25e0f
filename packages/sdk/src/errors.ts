// One error class for every answer outside 2xx, read from the spec's envelope
// `{ error: { code, message, details? } }` (docs/spec/public-api-v1.md, Errors).
import type { ErrorCode, ErrorDetail } from './types.js';

export class LatchkeyError extends Error {
  override readonly name = 'LatchkeyError';
  /** The HTTP status. */
  readonly status: number;
  /** `error.code` of the envelope; `unknown_error` when the answer was not the envelope (a proxy's page). */
  readonly code: ErrorCode | 'unknown_error';
  /** `error.details` (only `validation_failed` has them); empty otherwise. */
  readonly details: ErrorDetail[];
  /** `X-Request-Id` of the answer: the service logs the failure under it. */
  readonly requestId: string | null;
  /** `Retry-After` in seconds, when the answer had one (429, 503, 409 idempotency_in_progress). */
  readonly retryAfter: number | null;

  constructor(init: {
    status: number;
    code: LatchkeyError['code'];
    message: string;
    details?: ErrorDetail[];
    requestId?: string | null;
    retryAfter?: number | null;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.requestId = init.requestId ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }

  /** The error of an answer outside 2xx; `body` is its parsed JSON, or its text when it was not JSON. */
  static fromResponse(response: Response, body: unknown): LatchkeyError {
    const error = envelopeOf(body);
    return new LatchkeyError({
      status: response.status,
      code: error?.code ?? 'unknown_error',
      message: error?.message ?? `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
      details: error?.details ?? [],
      requestId: response.headers.get('x-request-id'),
      retryAfter: retryAfterSeconds(response.headers.get('retry-after')),
    });
  }
}

interface Envelope {
  code: ErrorCode;
  message: string;
  details?: ErrorDetail[];
}

function envelopeOf(body: unknown): Envelope | null {
  if (typeof body !== 'object' || body === null || !('error' in body)) return null;
  const error = (body as { error: unknown }).error;
  if (typeof error !== 'object' || error === null) return null;
  const { code, message, details } = error as Record<string, unknown>;
  if (typeof code !== 'string' || typeof message !== 'string') return null;
  return { code: code as ErrorCode, message, ...(Array.isArray(details) ? { details: details as ErrorDetail[] } : {}) };
}

/** `Retry-After` as seconds: delta-seconds or an HTTP date (RFC 9110, 10.2.3); null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}
