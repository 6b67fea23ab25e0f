// Rate limits of the public API. Counting is done by rate-limiter-flexible (in process, or in Redis so that
// several instances share one budget); the one-minute windows are cut from the service clock, so the
// sandbox clock rolls them like every other time rule.
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from './clock.ts';
import { errors, type ApiError } from './errors.ts';
import { loggableError, shownUrl } from './logging.ts';
import { NO_METRICS, type RateLimitMetrics } from './metrics.ts';

/**
 * A Redis that has not answered for this long is dropped and dialled again; meanwhile the limits count in
 * memory. Not shorter: a busy event loop can hold back Redis's answer past a second, and each false alarm
 * splits the shared budget for a moment.
 */
const REDIS_SOCKET_TIMEOUT_MS = 3000;

/**
 * The Redis client of the shared limits (REDIS_URL). While Redis is away the limits fail open per instance
 * (README: Faults): every limiter has an in-memory insurance limiter (rate-limiter-flexible's
 * `insuranceLimiter`) that counts whenever Redis cannot, so a request never waits for Redis and the API
 * stays up, each instance keeping its own budget (several instances together allow more). One warning
 * when Redis goes away, one line when it is back; ioredis dials again by itself. ioredis is loaded only here,
 * so that a start without REDIS_URL does not spend its time loading it.
 */
export async function connectRedis(url: string, log: FastifyBaseLogger): Promise<{ client: Redis; close(): Promise<void> }> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    // A command fails at once while Redis is disconnected, instead of waiting in a queue for it: the
    // insurance limiter answers. Nothing is sent again after a reconnection (it would count twice).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // A Redis that stops answering without closing the connection (stopped, its host gone silent).
    socketTimeout: REDIS_SOCKET_TIMEOUT_MS,
    connectTimeout: 2000,
  });
  let away = false;
  let closing = false;
  client.on('ready', () => {
    if (away) log.info('redis is back: rate limits are shared again');
    away = false;
  });
  const lost = (error?: Error) => {
    if (away || closing) return;
    away = true;
    log.warn(
      { ...(error ? { err: loggableError(error) } : {}) },
      `redis unavailable (REDIS_URL=${shownUrl(url)}): rate limits are counted by each instance in memory until it is back`,
    );
  };
  client.on('error', lost); // every failed attempt to dial again lands here too: one warning per outage
  client.on('close', () => lost());
  return {
    client,
    async close() {
      closing = true;
      await client.quit().catch(() => client.disconnect());
    },
  };
}

/**
 * Waits, at most `ms`, for the connection to be ready: the first requests should count in the shared budget,
 * not in this instance's memory, but a Redis that is down must not keep the service from starting.
 */
export async function readyWithin(redis: { client: Redis }, ms: number): Promise<void> {
  if (redis.client.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    redis.client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const WINDOW_MS = 60_000;

export interface LimitState {
  /** The bucket counted (`api-key`, `anonymous`, `auth-failed`, a route's bucket). */
  bucket: string;
  limit: number;
  remaining: number;
  /** Seconds until the current window rolls. */
  retryAfterSeconds: number;
  exceeded: boolean;
}

export interface RouteLimit {
  bucket: string;
  perMinute: number;
  /** A path parameter that gets a budget of its own per value (the lock of an unlock). */
  perParam?: string;
}

/** Per-route limits, in one table. Keyed by `METHOD route-pattern`; routes with one bucket share a budget. */
export const routeLimits: Record<string, RouteLimit> = {
  'POST /v1/keys': { bucket: 'keys-issue', perMinute: 30 },
  'POST /v1/invitations/:id/resend': { bucket: 'keys-issue', perMinute: 30 },
  'POST /v1/locks/:id/unlock': { bucket: 'unlock', perMinute: 10, perParam: 'id' },
  'POST /v1/webhooks/:id/ping': { bucket: 'ping', perMinute: 10 },
  'POST /v1/webhooks/:id/deliveries/:delivery_id/redeliver': { bucket: 'redeliver', perMinute: 30 },
};

export const FAILED_AUTH_PER_MINUTE = 30;

/** The per-IP budget of an open route (no credentials to count by): the setup links, the key holder's polls. */
export interface OpenLimit {
  bucket: string;
  perMinute: number;
}

/**
 * The counter of a route limit for one API key: per key, or per key and the parameter's validated value
 * (the number 7, whether the path said `7` or `007`), so that no spelling of an id buys a second budget.
 * `validatedParams` is null when the path parameters fail their schema: such a request answers 400 and
 * names no lock, so it has no per-parameter counter (it still counts against the key's own budget).
 */
export function routeLimitKey(limit: RouteLimit, apiKeyId: number, validatedParams: Record<string, unknown> | null): string | null {
  if (!limit.perParam) return String(apiKeyId);
  if (validatedParams === null) return null;
  return `${apiKeyId}:${String(validatedParams[limit.perParam])}`;
}

export class RateLimits {
  private readonly limiters = new Map<string, RateLimiterAbstract>();

  constructor(
    private readonly clock: Clock,
    private readonly redis: Redis | null,
    private readonly keyPrefix = 'latchkey',
    private readonly metrics: RateLimitMetrics = NO_METRICS,
  ) {}

  /** The 429 that refuses a request over `state`'s limit, counted by bucket (latchkey_rate_limit_refusals_total). */
  refusal(state: LimitState): ApiError {
    this.metrics.refused(state.bucket);
    return errors.rateLimited(state.retryAfterSeconds);
  }

  private limiter(bucket: string, points: number): RateLimiterAbstract {
    const name = `${bucket}:${points}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      // Stored counters outlive their window by a minute of real time; the window itself is in the key.
      const options = { keyPrefix: `${this.keyPrefix}:rl:${bucket}`, points, duration: 120 };
      limiter = this.redis
        ? new RateLimiterRedis({
            ...options,
            storeClient: this.redis,
            // Not even tried while the connection is not ready: the insurance limiter counts (see connectRedis).
            rejectIfRedisNotReady: true,
            insuranceLimiter: new RateLimiterMemory(options),
          })
        : new RateLimiterMemory(options);
      this.limiters.set(name, limiter);
    }
    return limiter;
  }

  private window(): { key: string; retryAfterSeconds: number } {
    const now = this.clock.now().getTime();
    const index = Math.floor(now / WINDOW_MS);
    return { key: String(index), retryAfterSeconds: Math.max(1, Math.ceil(((index + 1) * WINDOW_MS - now) / 1000)) };
  }

  /** Counts one request against `bucket`/`key`. */
  async consume(bucket: string, key: string, perMinute: number): Promise<LimitState> {
    const window = this.window();
    try {
      const res = await this.limiter(bucket, perMinute).consume(`${key}:${window.key}`);
      return { bucket, limit: perMinute, remaining: res.remainingPoints, retryAfterSeconds: window.retryAfterSeconds, exceeded: false };
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        return { bucket, limit: perMinute, remaining: 0, retryAfterSeconds: window.retryAfterSeconds, exceeded: true };
      }
      throw error;
    }
  }

  /** Reads a bucket without counting: true when it is used up for this window. */
  async isExhausted(bucket: string, key: string, perMinute: number): Promise<LimitState> {
    const window = this.window();
    const res = await this.limiter(bucket, perMinute).get(`${key}:${window.key}`);
    const consumed = res?.consumedPoints ?? 0;
    return {
      bucket,
      limit: perMinute,
      remaining: Math.max(0, perMinute - consumed),
      retryAfterSeconds: window.retryAfterSeconds,
      exceeded: consumed >= perMinute,
    };
  }
}
