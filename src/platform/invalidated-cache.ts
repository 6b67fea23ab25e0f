// A per-instance cache of rows that other instances may change: dropped on every NOTIFY of its channel,
// and when the LISTEN connection was lost and is back (Database.listen then calls with an empty payload:
// what was notified meanwhile was missed). Entries also age out after a short TTL, a net for a NOTIFY
// missed any other way (README: Architecture).
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
  constructor(options: InvalidatedCacheOptions) {
    // Wall time (performance.now), not the service clock: the TTL is about staleness. A stale entry read is dropped.
    super({ max: options.limit, ttl: options.ttlMs });
  }

  /** Drops the cache on every notification of `channel` and on every LISTEN reconnection. */
  async follow(db: Database, channel: Channel): Promise<void> {
    await db.listen(channel, () => this.clear());
  }
}
