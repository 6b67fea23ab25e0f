// The per-instance caches (API keys, single locks): dropped on NOTIFY and on a LISTEN reconnection, aged out
// by the TTL net, bounded in size.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Database } from '../../src/platform/db/index.ts';
import { InvalidatedCache } from '../../src/platform/invalidated-cache.ts';

test('an entry older than the TTL is gone, and dropped, not kept', async () => {
  // lru-cache keeps the time (performance.now); only a lower bound is waited for, so a slow machine cannot fail it.
  const cache = new InvalidatedCache<string, number>({ ttlMs: 20, limit: 10 });
  cache.set('a', 1);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(cache.get('a'), undefined);
  assert.equal(cache.size, 0, 'the stale entry is dropped, not kept');
  const lasting = new InvalidatedCache<string, number>({ ttlMs: 60_000, limit: 10 });
  lasting.set('a', 1);
  assert.equal(lasting.get('a'), 1, 'well within its TTL');
});

test('past its limit the least recently used entry goes instead of the cache growing', () => {
  const cache = new InvalidatedCache<number, number>({ ttlMs: 60_000, limit: 3 });
  for (let i = 0; i < 3; i++) cache.set(i, i);
  assert.equal(cache.get(0), 0, 'read: 1 is now the least recently used');
  cache.set(3, 3);
  assert.equal(cache.size, 3);
  assert.equal(cache.get(1), undefined);
  assert.deepEqual([cache.get(0), cache.get(2), cache.get(3)], [0, 2, 3]);
});

test('follow(): every notification of the channel, and the empty one after a reconnection, drops everything', async () => {
  const handlers = new Map<string, (payload: string) => void>();
  const db = { listen: async (channel: string, on: (payload: string) => void) => void handlers.set(channel, on) } as unknown as Database;
  const cache = new InvalidatedCache<string, number>({ ttlMs: 60_000, limit: 10 });
  await cache.follow(db, 'catalog_changed');
  cache.set('a', 1);
  handlers.get('catalog_changed')?.('42');
  assert.equal(cache.get('a'), undefined);
  cache.set('a', 1);
  handlers.get('catalog_changed')?.(''); // the LISTEN connection came back: something may have been missed
  assert.equal(cache.get('a'), undefined);
});

test('getOrLoad(): stores what it read unless an invalidation came meanwhile; a miss is never stored', async () => {
  const cache = new InvalidatedCache<string, number>({ ttlMs: 60_000, limit: 10 });
  let reads = 0;
  assert.equal(await cache.getOrLoad('a', async () => (reads++, 1)), 1);
  assert.equal(await cache.getOrLoad('a', async () => (reads++, 2)), 1, 'from the cache');
  assert.equal(reads, 1);

  let finish: (value: number) => void = () => undefined;
  const inFlight = cache.getOrLoad('b', () => new Promise<number>((resolve) => (finish = resolve)));
  cache.clear(); // as a NOTIFY does
  finish(1);
  assert.equal(await inFlight, 1, 'the caller still gets what it read');
  assert.equal(cache.get('b'), undefined, 'read before the invalidation: not stored');

  assert.equal(await cache.getOrLoad('c', async () => null), null);
  assert.equal(cache.has('c'), false);
});
