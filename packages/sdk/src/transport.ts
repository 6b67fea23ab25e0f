// The fetch every call goes through: bounded retries where the spec says a retry is safe
// (docs/spec/public-api-v1.md, Errors: "Retry guidance"), waiting what `Retry-After` asks, and stopping at
// once when the caller's AbortSignal fires.
import { retryAfterSeconds } from './errors.js';

export type Fetch = (request: Request) => Promise<Response>;

export interface RetryPolicy {
  /** Retries after the first attempt (0 disables them). */
  retries: number;
  /** The longest single wait; an answer asking for more is handed to the caller instead. */
  maxRetryWaitMs: number;
}

/** Backoff for a lost connection or an answer without Retry-After: 0.5 s, 1 s, 2 s, … with jitter. */
function backoffMs(attempt: number): number {
  return 500 * 2 ** attempt * (0.75 + Math.random() * 0.5);
}

/**
 * A lost connection is retried only when repeating the request cannot do the work twice: every method but
 * POST, and a POST that carries an Idempotency-Key (the creates). A plain POST (unlock, resend, redeliver,
 * ping) may have reached the service, so its network error goes to the caller.
 */
function mayRepeatAfterNetworkError(request: Request): boolean {
  return request.method !== 'POST' || request.headers.has('idempotency-key');
}

/**
 * How long to wait before retrying this answer, or null to hand it to the caller. Retried: 429 and 503 that
 * say when (Retry-After: the service's 503 during a database outage has one; a 503 without it, such as
 * revocation being disabled, will not change), and 409 idempotency_in_progress (the only 409 with
 * Retry-After) of a request that carries its Idempotency-Key. Never any other status.
 */
function retryWaitMs(response: Response, request: Request, attempt: number): number | null {
  const retryAfter = retryAfterSeconds(response.headers.get('retry-after'));
  if (response.status === 429) return retryAfter === null ? backoffMs(attempt) : retryAfter * 1000;
  if (response.status === 503 && retryAfter !== null) return retryAfter * 1000;
  if (response.status === 409 && retryAfter !== null && request.headers.has('idempotency-key')) return retryAfter * 1000;
  return null;
}

export function retryingFetch(send: Fetch, policy: RetryPolicy): Fetch {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= policy.retries;
      request.signal.throwIfAborted();
      let response: Response;
      try {
        // Each attempt sends a copy: the original keeps its body (and its Idempotency-Key) for the next.
        response = await send(last ? request : request.clone());
      } catch (error) {
        if (last || request.signal.aborted || !mayRepeatAfterNetworkError(request)) throw error;
        await sleep(Math.min(backoffMs(attempt), policy.maxRetryWaitMs), request.signal);
        continue;
      }
      const wait = last ? null : retryWaitMs(response, request, attempt);
      if (wait === null || wait > policy.maxRetryWaitMs) return response;
      await response.body?.cancel().catch(() => undefined); // frees the connection
      await sleep(wait, request.signal);
    }
  };
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it is aborted. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A random UUID for Idempotency-Key; getRandomValues where randomUUID is missing (pages served over http). */
export function randomId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
