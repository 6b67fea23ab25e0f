// How fast a gateway may ask about credentials (access/request): a token bucket per gateway, in this instance's
// memory. A door presents a few credentials a second at most, and a gateway with its copy of the list asks only
// about those the copy does not hold; a gateway asking much faster is trying numbers. With
// an external broker every instance receives every request (link.ts), so each instance's bucket sees what the
// others see, and memory is enough.
import { LRUCache } from 'lru-cache';

/** How many requests a gateway may send at once after a quiet while, in seconds of its rate. */
const BURST_SECONDS = 4;
/** A gateway over the limit is logged at most this often, with the number refused since its last line. */
const LOG_EVERY_MS = 60_000;

interface Bucket {
  tokens: number;
  at: number;
}

export class RequestLimit {
  // Bounded: a gateway forgotten starts again with a full bucket, which costs one burst.
  private readonly buckets = new LRUCache<number, Bucket>({ max: 100_000 });
  private readonly refusals = new LRUCache<number, { loggedAt: number; refused: number }>({ max: 100_000 });

  /** How many requests a gateway may send at once after a quiet while. */
  readonly burst: number;

  /** `perSecond`: GATEWAY_ACCESS_REQUESTS_PER_SECOND, what a gateway may keep up. */
  constructor(readonly perSecond: number) {
    this.burst = perSecond * BURST_SECONDS;
  }

  /** Whether the gateway may ask now (`now` in ms, monotonic); takes a token when it may. */
  take(gatewayId: number, now: number): boolean {
    const bucket = this.buckets.get(gatewayId) ?? { tokens: this.burst, at: now };
    const tokens = Math.min(this.burst, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * this.perSecond);
    const allowed = tokens >= 1;
    this.buckets.set(gatewayId, { tokens: allowed ? tokens - 1 : tokens, at: Math.max(now, bucket.at) });
    return allowed;
  }

  /**
   * Counts a refusal; returns how many were refused since the gateway's last log line when one is due now (at most
   * once a minute per gateway, so a flood is not a flood of log lines), else null.
   */
  refused(gatewayId: number, now: number): number | null {
    const seen = this.refusals.get(gatewayId);
    if (seen && now - seen.loggedAt < LOG_EVERY_MS) {
      seen.refused++;
      return null;
    }
    this.refusals.set(gatewayId, { loggedAt: now, refused: 0 });
    return (seen?.refused ?? 0) + 1;
  }
}
