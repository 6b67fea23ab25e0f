// The typed HTTP client of the resource groups: openapi-fetch over the generated `paths`, with the bearer
// token, the retrying fetch and the mapping of every answer outside 2xx to LatchkeyError.
import createClient, { type Client } from 'openapi-fetch';
import { LatchkeyError } from './errors.js';
import type { paths } from './openapi.js';
import { randomId, retryingFetch, type Fetch, type RetryPolicy } from './transport.js';

export type Api = Client<paths>;

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call, its retries and their waits. */
  signal?: AbortSignal;
}

/** Options of the calls that create (POST /people, /keys, /webhooks). */
export interface CreateOptions extends CallOptions {
  /** Sent as Idempotency-Key (1 to 64 of `A-Z a-z 0-9 _ -`); a random UUID by default, the same for every retry. */
  idempotencyKey?: string;
}

export function createApi(options: { apiKey: string; baseUrl: string; fetch: Fetch } & RetryPolicy): Api {
  return createClient<paths>({
    // The paths of the document carry /v1; a base URL written as the spec's {base_url} (ending in /v1) works too.
    baseUrl: options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''),
    headers: { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' },
    fetch: retryingFetch(options.fetch, options),
  });
}

/** The headers of a create: a fresh Idempotency-Key unless the caller chose one. */
export function idempotencyHeader(options: CreateOptions): { 'idempotency-key': string } {
  return { 'idempotency-key': options.idempotencyKey ?? randomId() };
}

/** The `signal` of a call, for openapi-fetch's request init. */
export function init(options: CallOptions): { signal?: AbortSignal } {
  return options.signal ? { signal: options.signal } : {};
}

type Outcome<T> = { data: T; error?: never; response: Response } | { data?: never; error: unknown; response: Response };

/**
 * The body of a 2xx answer; any other answer throws LatchkeyError. openapi-fetch types `data` as possibly
 * undefined (its answer to a 204); the operations that answer 204 discard it.
 */
export async function unwrap<T>(call: Promise<Outcome<T>>): Promise<Exclude<T, undefined>> {
  const { data, error, response } = await call;
  if (!response.ok) throw LatchkeyError.fromResponse(response, error);
  return data as Exclude<T, undefined>;
}
