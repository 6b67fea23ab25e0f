// The client: `new Latchkey({ apiKey, baseUrl })` and its resource groups, one per area of the public API.
import { createApi } from './api.js';
import { Events } from './resources/events.js';
import { Invitations, Keys } from './resources/keys.js';
import { Locks, SecurityGroups } from './resources/locks.js';
import { People } from './resources/people.js';
import { Webhooks } from './resources/webhooks.js';
import type { Fetch } from './transport.js';

export interface LatchkeyOptions {
  /** The API key's token (`lk_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The service's root URL, e.g. `https://latchkey.example.com`; a trailing `/v1` is accepted too. */
  baseUrl: string;
  /** The fetch to send requests with; default `globalThis.fetch`. */
  fetch?: Fetch;
  /**
   * Retries of a request after the first attempt (default 3; 0 disables): on a lost connection (not for a
   * POST without Idempotency-Key), and on 429, on 503 with Retry-After and on 409 idempotency_in_progress,
   * each after the time Retry-After asks. Never on other statuses.
   */
  retries?: number;
  /** The longest single wait before a retry, in ms (default 60000); an answer asking for more is thrown at once. */
  maxRetryWaitMs?: number;
}

export class Latchkey {
  readonly locks: Locks;
  readonly securityGroups: SecurityGroups;
  readonly people: People;
  readonly keys: Keys;
  readonly invitations: Invitations;
  readonly events: Events;
  readonly webhooks: Webhooks;

  constructor(options: LatchkeyOptions) {
    if (!options.apiKey) throw new TypeError('Latchkey: apiKey is required.');
    if (!options.baseUrl) throw new TypeError('Latchkey: baseUrl is required.');
    const send = options.fetch;
    const api = createApi({
      apiKey: options.apiKey,
      baseUrl: options.baseUrl,
      // Called as a plain function: a browser's fetch refuses to run as a method of another object.
      fetch: send ? (request) => send(request) : (request) => globalThis.fetch(request),
      retries: Math.max(0, Math.floor(finite(options.retries, 3))),
      maxRetryWaitMs: Math.max(0, finite(options.maxRetryWaitMs, 60_000)),
    });
    this.locks = new Locks(api);
    this.securityGroups = new SecurityGroups(api);
    this.people = new People(api);
    this.keys = new Keys(api);
    this.invitations = new Invitations(api);
    this.events = new Events(api);
    this.webhooks = new Webhooks(api);
  }
}

/** A number option, or its default when missing or not a finite number (NaN would retry without end). */
function finite(value: number | undefined, fallback: number): number {
  return value !== undefined && Number.isFinite(value) ? value : fallback;
}
