// A per-instance cache of rows that other instances may change: dropped on every NOTIFY of its channel,
// and when the LISTEN connection was lost and is back (Database.listen then calls with an empty payload:
// what was notified meanwhile was missed). Entries also age out after a short TTL, a net for a NOTIFY
// missed any other way (README: Architecture). A value is stored only if no notification came while it was
// read (getOrLoad): a change committed meanwhile may be missing from it, and that change's NOTIFY, already
// handled, would not drop it, so the stale value would outlive the change until the TTL (a revoked API key
// still accepted for 30 s).
//
// The storage, the TTL, the bound and that rule are lru-cache's (already a dependency, as the page and
// credential caches use it): past `limit` entries the least recently used goes, and a fetch() that the cache
// was cleared under keeps its value out of the cache. What is this project's own is only the following of a
// channel.
import { LRUCache } from 'lru-cache';
import type { Channel } from './channels.ts';
import type { Database } from './db/index.ts';

export interface InvalidatedCacheOptions {
  ttlMs: number;
  /** At most this many entries (the least recently used goes first): bounded memory whatever the callers ask for. */
  limit: number;
}

/** How a missing value is read: null when there is none (nothing is stored then). */
type Load<V> = () => Promise<V | null>;

/** Keys and values are never null or undefined (lru-cache's bound). */
export class InvalidatedCache<K extends NonNullable<unknown>, V extends NonNullable<unknown>> extends LRUCache<K, V, Load<V>> {
  constructor(options: InvalidatedCacheOptions) {
    super({
      max: options.limit,
      // Wall time (performance.now), not the service clock: the TTL is about staleness. A stale entry read is dropped.
      ttl: options.ttlMs,
      fetchMethod: async (_key, _stale, { context: load }) => (await load()) ?? undefined,
      // clear() aborts the fetches in flight; their callers still get what they read (it was true when read),
      // and lru-cache stores it only if the entry is still the one the fetch began.
      ignoreFetchAbort: true,
    });
  }

  /** The cached value, else what `load` reads; concurrent reads of one key share one load. */
  async getOrLoad(key: K, load: Load<V>): Promise<V | null> {
    // A hit is read as it is: fetch()'s bookkeeping cost a cached read about 2 µs (the API key's and the row's).
    return this.get(key) ?? (await this.fetch(key, { context: load })) ?? null;
  }

  /** Drops the cache (and what the reads in flight will bring) on every notification of `channel` and on every LISTEN reconnection. */
  async follow(db: Database, channel: Channel): Promise<void> {
    await db.listen(channel, () => this.clear());
  }
}
