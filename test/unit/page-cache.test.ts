// The page cache's own rules: what a change drops, and that a page read across a change is not kept.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PageCache, parseChanged } from '../../src/platform/page-cache.ts';

const cache = () => new PageCache({ maxBytes: 1_000_000, ttlMs: 60_000 });

describe('PageCache', () => {
  test('answers a query from memory until its account changes; other accounts keep their pages', async () => {
    const pages = cache();
    let reads = 0;
    const produce = async () => `page ${++reads}`;
    assert.equal(await pages.page(1, 'q', produce), 'page 1');
    assert.equal(await pages.page(1, 'q', produce), 'page 1', 'from memory');
    assert.equal(await pages.page(2, 'q', produce), 'page 2', 'the same query of another account is its own');
    pages.changed({ accounts: [1] });
    assert.equal(await pages.page(1, 'q', produce), 'page 3', 'read again after its account changed');
    assert.equal(await pages.page(2, 'q', produce), 'page 2', 'account 2 untouched');
    pages.changed('all');
    assert.equal(await pages.page(2, 'q', produce), 'page 4');
  });

  test('a page read while its account changed is sent but not kept (it may predate the change)', async () => {
    const pages = cache();
    let release = (): void => undefined;
    const slow = pages.page(1, 'q', () => new Promise<string>((resolve) => (release = () => resolve('before the change'))));
    pages.changed({ accounts: [1] });
    release();
    assert.equal(await slow, 'before the change');
    assert.equal(await pages.page(1, 'q', async () => 'after the change'), 'after the change');
  });

  test('holds no more bytes than allowed', async () => {
    const pages = new PageCache({ maxBytes: 10_000, ttlMs: 60_000 });
    for (let i = 0; i < 100; i++) await pages.page(1, `q${i}`, async () => 'x'.repeat(1_000));
    assert.ok(pages.size <= 10, `${pages.size} pages of 1,000 bytes kept`);
  });

  test('a payload that is not a list of account ids means every account', () => {
    assert.deepEqual(parseChanged('12'), { accounts: [12] });
    assert.deepEqual(parseChanged('3,4'), { accounts: [3, 4] });
    assert.equal(parseChanged(''), 'all', 'the LISTEN connection came back: anything may have changed');
    assert.equal(parseChanged('3,x'), 'all');
  });
});
