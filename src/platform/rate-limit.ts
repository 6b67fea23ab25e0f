// Rate limits of the public API. Counting is done by rate-limiter-flexible (in process, or in Redis so that
// several instances share one budget); the one-minute windows are cut from the service clock, so the
// sandbox clock rolls them like every other time rule.
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from './clock.ts';

const WINDOW_MS = 60_000;

export interface LimitState {
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
  ) {}

  private limiter(bucket: string, points: number): RateLimiterAbstract {
    const name = `${bucket}:${points}`;
    let limiter = this.limiters.get(name);
    if (!limiter) {
      // Stored counters outlive their window by a minute of real time; the window itself is in the key.
      const options = { keyPrefix: `${this.keyPrefix}:rl:${bucket}`, points, duration: 120 };
      limiter = this.redis
        ? new RateLimiterRedis({ ...options, storeClient: this.redis, insuranceLimiter: new RateLimiterMemory(options) })
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
      return { limit: perMinute, remaining: res.remainingPoints, retryAfterSeconds: window.retryAfterSeconds, exceeded: false };
    } catch (error) {
      if (error instanceof RateLimiterRes) {
        return { limit: perMinute, remaining: 0, retryAfterSeconds: window.retryAfterSeconds, exceeded: true };
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
      limit: perMinute,
      remaining: Math.max(0, perMinute - consumed),
      retryAfterSeconds: window.retryAfterSeconds,
      exceeded: consumed >= perMinute,
    };
  }
}
