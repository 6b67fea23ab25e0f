// The page cache's own rules: what a change drops, and that a page read across a change is not kept.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import Fastify from 'fastify';
import type { Caller } from '../../src/platform/auth.ts';
import { PageCache, PageCaches, parseChanged, type PageScope } from '../../src/platform/page-cache.ts';
import { PageQuery } from '../../src/platform/pagination.ts';

const Query = Type.Object({ ...PageQuery });
const cache = () => new PageCache({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
/** The root location of account n. */
const of = (account: number): PageScope => ({ accountId: account, locationId: account * 100 });
const q = {};

describe('PageCache', () => {
  test('answers a query from memory until its account changes; other accounts keep their pages', async () => {
    const pages = cache();
    let reads = 0;
    const produce = async () => `page ${++reads}`;
    assert.equal(String(await pages.page(of(1), q, produce)), 'page 1');
    assert.equal(String(await pages.page(of(1), q, produce)), 'page 1', 'from memory');
    assert.equal(String(await pages.page(of(2), q, produce)), 'page 2', 'the same query of another account is its own');
    pages.changed({ accounts: [1] });
    assert.equal(String(await pages.page(of(1), q, produce)), 'page 3', 'read again after its account changed');
    assert.equal(String(await pages.page(of(2), q, produce)), 'page 2', 'account 2 untouched');
    pages.changed('all');
    assert.equal(String(await pages.page(of(2), q, produce)), 'page 4');
  });

  test('a page read while its account changed is sent but not kept (it may predate the change)', async () => {
    const pages = cache();
    let release = (): void => undefined;
    const slow = pages.page(of(1), q, () => new Promise<string>((resolve) => (release = () => resolve('before the change'))));
    pages.changed({ accounts: [1] });
    release();
    assert.equal(String(await slow), 'before the change');
    assert.equal(String(await pages.page(of(1), q, async () => 'after the change')), 'after the change');
  });

  test('switched off (PAGE_CACHE_ENABLED=false), every page is read afresh', async () => {
    const pages = new PageCaches(false).create({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
    let reads = 0;
    await pages.page(of(1), q, async () => `page ${++reads}`);
    assert.equal(String(await pages.page(of(1), q, async () => `page ${++reads}`)), 'page 2');
  });

  test('switched off, a request never gets a read begun before it; the requests made while a read runs share the next one', async () => {
    const pages = new PageCaches(false).create({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
    const releases: Array<() => void> = [];
    const produce = () => new Promise<string>((resolve) => {
      const n = releases.length + 1;
      releases.push(() => resolve(`read ${n}`));
    });
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    const first = pages.page(of(1), q, produce);
    const meanwhile = [pages.page(of(1), q, produce), pages.page(of(1), q, produce)];
    const otherAccount = pages.page(of(2), q, produce);
    const otherPage = pages.page(of(1), { cursor: 'c2' }, produce);
    assert.equal(releases.length, 3, 'the requests made while read 1 runs do not join it; another account\'s page and another page are read at once');
    await settled();
    assert.equal(releases.length, 3, 'the next read waits for the running one');
    releases[0]?.();
    assert.equal(String(await first), 'read 1');
    await settled();
    assert.equal(releases.length, 4, 'two requests, one read, begun once read 1 ended');
    const later = pages.page(of(1), q, produce);
    releases[3]?.();
    assert.deepEqual((await Promise.all(meanwhile)).map(String), ['read 4', 'read 4']);
    await settled();
    assert.equal(releases.length, 5, 'a request made while read 4 ran got a read of its own after it');
    releases[4]?.();
    assert.equal(String(await later), 'read 5');
    releases[1]?.();
    releases[2]?.();
    assert.equal(String(await otherAccount), 'read 2');
    assert.equal(String(await otherPage), 'read 3');
    assert.equal(String(await pages.page(of(1), q, async () => 'read 6')), 'read 6', 'nothing running: read at once, nothing kept');
  });

  test('switched off, a read that fails fails only the requests that shared it; the next read is made', async () => {
    const pages = new PageCaches(false).create({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
    let fail!: (error: Error) => void;
    const failing = pages.page(of(1), q, () => new Promise<string>((_, reject) => (fail = reject)));
    const next = pages.page(of(1), q, async () => 'read 2');
    fail(new Error('database away'));
    await assert.rejects(failing, /database away/);
    assert.equal(String(await next), 'read 2');
  });

  test('switched off, a read whose produce throws at once fails its requests only; the page is read again after', async () => {
    const pages = new PageCaches(false).create({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
    let release = (): void => undefined;
    const running = pages.page(of(1), q, () => new Promise<string>((resolve) => (release = () => resolve('read 1'))));
    const next = pages.page(of(1), q, () => {
      throw new Error('no connection');
    });
    release();
    assert.equal(String(await running), 'read 1');
    await assert.rejects(next, /no connection/);
    assert.equal(String(await pages.page(of(1), q, async () => 'read 3')), 'read 3');
  });

  test('holds no more bytes than allowed', async () => {
    const pages = new PageCache({ query: Query, maxBytes: 10_000, ttlMs: 60_000 });
    for (let i = 0; i < 100; i++) await pages.page(of(1), { cursor: `q${i}` }, async () => 'x'.repeat(1_000));
    assert.ok(pages.size <= 10, `${pages.size} pages of 1,000 bytes kept`);
  });

  test('concurrent requests for one page make one read; a request after a change never joins a read that began before it', async () => {
    const pages = cache();
    let reads = 0;
    const releases: Array<() => void> = [];
    const produce = () => new Promise<string>((resolve) => releases.push(() => resolve(`page ${++reads}`)));
    const first = [pages.page(of(1), q, produce), pages.page(of(1), q, produce), pages.page(of(1), q, produce)];
    assert.equal(releases.length, 1, 'three requests, one read');
    pages.changed({ accounts: [1] });
    const afterChange = pages.page(of(1), q, produce);
    assert.equal(releases.length, 2, 'the request after the change reads again');
    pages.changed({ appended: [{ accountId: 1, fromId: 7 }] });
    const afterAppend = pages.page(of(1), q, produce);
    assert.equal(releases.length, 3, 'and so does one after an append');
    for (const release of releases) release();
    assert.deepEqual((await Promise.all(first)).map(String), ['page 1', 'page 1', 'page 1']);
    assert.equal(String(await afterChange), 'page 2');
    assert.equal(String(await afterAppend), 'page 3');
    assert.equal(String(await pages.page(of(1), q, produce)), 'page 3', 'only the read begun after both is kept');
  });

  test('a read that fails fails every request that joined it, and is not kept', async () => {
    const pages = cache();
    let fail!: (error: Error) => void;
    const failing = () => new Promise<string>((_, reject) => (fail = reject));
    const both = [pages.page(of(1), q, failing), pages.page(of(1), q, failing)];
    fail(new Error('database away'));
    for (const result of await Promise.allSettled(both)) assert.equal(result.status, 'rejected');
    assert.equal(String(await pages.page(of(1), q, async () => 'read again')), 'read again');
  });

  describe('an append-only list (the access log): appends drop only the pages they can join', () => {
    /** Pages of account 1 by cursor: `full` ends at `lastId` with a next page; `tail` is the end of the list. */
    function log() {
      const pages = cache();
      const reads: Record<string, number> = {};
      const read = (cursor: string, lastId?: number) =>
        pages.page(of(1), { cursor }, async () => {
          reads[cursor] = (reads[cursor] ?? 0) + 1;
          return { json: `${cursor} read ${reads[cursor]}`, lastId };
        });
      return { pages, reads, read };
    }

    test('a full page stays while rows arrive after its last id; the end of the list takes every append', async () => {
      const { pages, reads, read } = log();
      await read('full', 100);
      await read('tail');
      pages.changed({ appended: [{ accountId: 1, fromId: 101 }] });
      await read('full', 100);
      await read('tail');
      assert.deepEqual(reads, { full: 1, tail: 2 });
    });

    test('a row committed late, with an id at or below a full page\'s last id, drops that page (commits come out of id order)', async () => {
      const { pages, reads, read } = log();
      await read('full', 100);
      pages.changed({ appended: [{ accountId: 1, fromId: 100 }] });
      await read('full', 100);
      pages.changed({ appended: [{ accountId: 1, fromId: 42 }] });
      await read('full', 100);
      assert.deepEqual(reads, { full: 3 });
    });

    test("another account's appends drop nothing of this one; a change of the account (a deletion) drops its full pages too", async () => {
      const { pages, reads, read } = log();
      await read('full', 100);
      await read('tail');
      pages.changed({ appended: [{ accountId: 2, fromId: 1 }] });
      await read('full', 100);
      await read('tail');
      assert.deepEqual(reads, { full: 1, tail: 1 });
      pages.changed({ accounts: [1] });
      await read('full', 100);
      assert.deepEqual(reads, { full: 2, tail: 1 });
    });

    test('a page read across an append it may contain is sent but not kept; across one above its last id it is kept', async () => {
      const { pages, reads } = log();
      const slowRead = (cursor: string, lastId: number | undefined, during: () => void) =>
        pages.page(of(1), { cursor }, async () => {
          reads[cursor] = (reads[cursor] ?? 0) + 1;
          during(); // the append is heard while this read runs
          return { json: `${cursor} read ${reads[cursor]}`, lastId };
        });
      await slowRead('full', 100, () => pages.changed({ appended: [{ accountId: 1, fromId: 150 }] }));
      await slowRead('full', 100, () => assert.fail('kept: not read again'));
      await slowRead('tail', undefined, () => pages.changed({ appended: [{ accountId: 1, fromId: 150 }] }));
      await slowRead('tail', undefined, () => undefined);
      assert.deepEqual(reads, { full: 1, tail: 2 });
      await slowRead('late', 100, () => pages.changed({ appended: [{ accountId: 1, fromId: 90 }] }));
      await slowRead('late', 100, () => undefined);
      assert.equal((reads as Record<string, number>).late, 2, 'read again: the late row may be on it');
    });

    test('more appends during a read than are remembered: the page is not kept', async () => {
      const { pages, reads } = log();
      const read = () =>
        pages.page(of(1), { cursor: 'full' }, async () => {
          reads.full = (reads.full ?? 0) + 1;
          for (let i = 0; i < 100; i++) pages.changed({ appended: [{ accountId: 1, fromId: 1000 + i }] });
          return { json: 'full', lastId: 100 };
        });
      await read();
      await read();
      assert.equal(reads.full, 2);
    });
  });

  describe("this instance's own appends (appendingHere): the end of the list grows, and the notification of the same insert changes nothing more", () => {
    /** Account 1's pages as in log(), the end of the list growable: its tail state is the rows it shows. */
    function growable() {
      const pages = new PageCache<typeof Query, string[]>({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
      const reads: Record<string, number> = {};
      const read = async (cursor: string, lastId?: number) =>
        String(
          await pages.page(of(1), { cursor }, async () => {
            reads[cursor] = (reads[cursor] ?? 0) + 1;
            return lastId === undefined ? { json: 'rows:', tail: [] } : { json: `full ${cursor}`, lastId };
          }),
        );
      /** An insert of `rows` from `fromId`, in flight until the function it returns is called. */
      const appending = (fromId: number, rows: string[]) => {
        const done = pages.appendingHere([1]);
        return (failed = false) =>
          done(failed ? null : [{ append: { accountId: 1, fromId }, grow: (tail: string[]) => ({ json: `rows:${[...tail, ...rows].join(',')}`, tail: [...tail, ...rows] }) }]);
      };
      return { pages, reads, read, appending };
    }

    test('grows the end of the list in place, drops a full page the rows may join, and ignores its own notification, before or after', async () => {
      const { pages, reads, read, appending } = growable();
      await read('tail');
      await read('full', 100);
      await read('below', 50);
      appending(80, ['a', 'b'])();
      assert.equal(await read('tail'), 'rows:a,b', 'grown, not read again');
      pages.changed({ appended: [{ accountId: 1, fromId: 80 }] }); // its notification, after
      assert.equal(await read('tail'), 'rows:a,b');
      await read('full', 100);
      await read('below', 50);
      assert.deepEqual(reads, { tail: 1, full: 2, below: 1 });
      const finish = appending(120, ['c']);
      pages.changed({ appended: [{ accountId: 1, fromId: 120 }] }); // its notification, before the insert's answer
      finish();
      assert.equal(await read('tail'), 'rows:a,b,c');
      assert.equal(reads.tail, 1);
    });

    test("another writer's append heard while this instance's insert runs drops the end of the list once that insert is done", async () => {
      const { pages, reads, read, appending } = growable();
      await read('tail');
      const finish = appending(130, ['mine']);
      pages.changed({ appended: [{ accountId: 1, fromId: 125 }] }); // another instance's rows, committed meanwhile
      finish();
      assert.equal(await read('tail'), 'rows:', 'read again: the other rows are on it');
      assert.equal(reads.tail, 2);
      const failing = appending(140, ['never']);
      pages.changed({ appended: [{ accountId: 1, fromId: 135 }] });
      failing(true); // the insert failed: what was heard is applied all the same
      await read('tail');
      assert.equal(reads.tail, 3);
    });

    test('two inserts of this instance in flight for one account: the end of the list is read again, not grown (they may commit out of id order)', async () => {
      const { reads, read, appending } = growable();
      await read('tail');
      const earlier = appending(200, ['earlier']);
      const later = appending(210, ['later']);
      later(); // answered first; the earlier insert may be committed already, its answer not back yet
      assert.equal(await read('tail'), 'rows:', 'read again, not grown without the earlier rows');
      assert.equal(reads.tail, 2);
      earlier();
      appending(220, ['alone'])();
      assert.match(await read('tail'), /,alone$/, 'alone again: grown');
      assert.equal(reads.tail, 2);
    });

    test("another account's insert in flight holds nothing of this one", async () => {
      const { pages, reads, read } = growable();
      await read('tail');
      const other = pages.appendingHere([2]);
      pages.changed({ appended: [{ accountId: 1, fromId: 10 }] });
      await read('tail');
      assert.equal(reads.tail, 2);
      other(null);
    });
  });

  test('a payload that is not a list of account ids means every account', () => {
    assert.deepEqual(parseChanged('12'), { accounts: [12] });
    assert.deepEqual(parseChanged('3,4'), { accounts: [3, 4] });
    assert.deepEqual(parseChanged('3:120,4:7'), { appended: [{ accountId: 3, fromId: 120 }, { accountId: 4, fromId: 7 }] }, 'rows appended (migration 019)');
    assert.equal(parseChanged('3:120,4'), 'all');
    assert.equal(parseChanged(''), 'all', 'the LISTEN connection came back: anything may have changed');
    assert.equal(parseChanged('3,x'), 'all');
  });
});

describe('PageCaches: a write request drops pages before its answer leaves', () => {
  /** An app whose routes stand for the three kinds of access; `x-account` plays an authenticated key. */
  async function app() {
    const caches = new PageCaches();
    const pages = caches.create({ query: Query, maxBytes: 1_000_000, ttlMs: 60_000 });
    const server = Fastify();
    server.addHook('onRequest', async (request, reply) => {
      const account = request.headers['x-account'];
      if (request.routeOptions.config.access?.kind === 'public') {
        if (!account) return reply.code(401).send({ error: 'unauthenticated' });
        request.caller = { accountId: Number(account) } as Caller;
      }
      if (request.routeOptions.config.access?.kind === 'admin' && request.headers.authorization !== 'Bearer operator') {
        return reply.code(401).send({ error: 'unauthenticated' });
      }
    });
    caches.install(server);
    const answer = async () => ({ ok: true });
    server.post('/public', { config: { access: { kind: 'public', scopes: [] } } }, answer);
    server.get('/public', { config: { access: { kind: 'public', scopes: [] } } }, answer);
    server.post('/admin', { config: { access: { kind: 'admin' } } }, answer);
    server.post('/open', { config: { access: { kind: 'open' } } }, async (_request, reply) => reply.code(400).send({ error: 'bad link' }));
    // Pages of accounts 1 and 2, and a counter of how often each was read from the database.
    const reads = { 1: 0, 2: 0 };
    const read = (account: 1 | 2) => pages.page(of(account), q, async () => `page ${++reads[account]}`);
    await read(1);
    await read(2);
    return { server, read, reads };
  }

  test("an authenticated key's write drops its own account's pages only", async () => {
    const { server, read, reads } = await app();
    assert.equal((await server.inject({ method: 'POST', url: '/public', headers: { 'x-account': '1' } })).statusCode, 200);
    await read(1);
    await read(2);
    assert.deepEqual(reads, { 1: 2, 2: 1 });
  });

  test('reads, and writes refused before authentication, drop nothing (an anonymous flood cannot empty the caches)', async () => {
    const { server, read, reads } = await app();
    assert.equal((await server.inject({ method: 'GET', url: '/public', headers: { 'x-account': '1' } })).statusCode, 200);
    assert.equal((await server.inject({ method: 'POST', url: '/public' })).statusCode, 401);
    assert.equal((await server.inject({ method: 'POST', url: '/admin', headers: { authorization: 'Bearer wrong' } })).statusCode, 401);
    assert.equal((await server.inject({ method: 'POST', url: '/open' })).statusCode, 400);
    await read(1);
    await read(2);
    assert.deepEqual(reads, { 1: 1, 2: 1 });
  });

  test("an operator's write drops every account's pages", async () => {
    const { server, read, reads } = await app();
    assert.equal((await server.inject({ method: 'POST', url: '/admin', headers: { authorization: 'Bearer operator' } })).statusCode, 200);
    await read(1);
    await read(2);
    assert.deepEqual(reads, { 1: 2, 2: 2 });
  });
});
