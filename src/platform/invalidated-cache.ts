// A per-instance cache of rows that other instances may change: dropped on every NOTIFY of its channel,
// and when the LISTEN connection was lost and is back (Database.listen then calls with an empty payload:
// what was notified meanwhile was missed). Entries also age out after a short TTL, a net for a NOTIFY
// missed any other way (README: Architecture). A value is stored only if no notification came while it was
// read (getOrLoad): a change committed meanwhile may be missing from it, and that change's NOTIFY, already
// handled, would not drop it, so the stale value would outlive the change until the TTL (a revoked API key
// still accepted for 30 s).
//
// The storage, the TTL and the bound are lru-cache's (already a dependency, as the page and credential
// caches use it): past `limit` entries the least recently used goes. What is this project's own is only
// the following of a channel.
import { LRUCache } from 'lru-cache';
import type { Channel } from './channels.ts';
import type { Database } from './db/index.ts';

export interface InvalidatedCacheOptions {
  ttlMs: number;
  /** At most this many entries (the least recently used goes first): bounded memory whatever the callers ask for. */
  limit: number;
}

/** Keys and values are never null or undefined (lru-cache's bound). */
export class InvalidatedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V> {
  /** Counts invalidations: a read that saw this number change while it ran stores nothing. */
  private invalidations = 0;

  constructor(options: InvalidatedCacheOptions) {
    // Wall time (performance.now), not the service clock: the TTL is about staleness. A stale entry read is dropped.
    super({ max: options.limit, ttl: options.ttlMs });
  }

  /** Drops every entry, and what the reads in flight will bring. */
  invalidate(): void {
    this.invalidations++;
    this.clear();
  }

  /** The cached value, else what `load` reads (null: there is none, and nothing is stored). */
  async getOrLoad(key: K, load: () => Promise<V | null>): Promise<V | null> {
    const cached = this.get(key);
    if (cached !== undefined) return cached;
    const before = this.invalidations;
    const value = await load();
    if (value !== null && before === this.invalidations) this.set(key, value);
    return value;
  }

  /** Invalidates on every notification of `channel` and on every LISTEN reconnection. */
  async follow(db: Database, channel: Channel): Promise<void> {
    await db.listen(channel, () => this.invalidate());
  }
}
