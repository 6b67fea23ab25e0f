// The per-instance caches (API keys, single locks): dropped on NOTIFY and on a LISTEN reconnection, aged out
// by the TTL net, bounded in size.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Database } from '../../src/platform/db/index.ts';
import { InvalidatedCache } from '../../src/platform/invalidated-cache.ts';

function fakeClock() {
  let ms = 0;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

test('an entry older than the TTL is gone; one at the TTL is still served', () => {
  const clock = fakeClock();
  const cache = new InvalidatedCache<string, number>({ ttlMs: 1000, limit: 10, now: clock.now });
  cache.set('a', 1);
  clock.advance(1000);
  assert.equal(cache.get('a'), 1);
  clock.advance(1);
  assert.equal(cache.get('a'), undefined);
  assert.equal(cache.size, 0, 'the stale entry is dropped, not kept');
});

test('past its limit the cache starts over instead of growing', () => {
  const cache = new InvalidatedCache<number, number>({ ttlMs: 1000, limit: 3 });
  for (let i = 0; i < 3; i++) cache.set(i, i);
  assert.equal(cache.size, 3);
  cache.set(3, 3);
  assert.equal(cache.size, 1);
  assert.equal(cache.get(0), undefined);
  assert.equal(cache.get(3), 3);
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
