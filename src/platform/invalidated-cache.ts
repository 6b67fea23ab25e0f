// A per-instance cache of rows that other instances may change: dropped on every NOTIFY of its channel,
// and when the LISTEN connection was lost and is back (Database.listen then calls with an empty payload:
// what was notified meanwhile was missed). Entries also age out after a short TTL, a net for a NOTIFY
// missed any other way (README: Architecture).
import type { Database } from './db/index.ts';

export interface InvalidatedCacheOptions {
  ttlMs: number;
  /** Past this many entries the cache starts over: bounded memory whatever the callers ask for. */
  limit: number;
  /** Monotonic milliseconds; a test passes its own. Wall time, not the service clock: the TTL is about staleness. */
  now?: () => number;
}

export class InvalidatedCache<K, V> {
  private readonly entries = new Map<K, { value: V; storedAt: number }>();
  private readonly now: () => number;

  constructor(private readonly options: InvalidatedCacheOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Drops the cache on every notification of `channel` and on every LISTEN reconnection. */
  async follow(db: Database, channel: string): Promise<void> {
    await db.listen(channel, () => this.clear());
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.now() - entry.storedAt > this.options.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.entries.size >= this.options.limit) this.entries.clear();
    this.entries.set(key, { value, storedAt: this.now() });
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
