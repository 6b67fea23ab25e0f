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

  test('holds no more bytes than allowed', async () => {
    const pages = new PageCache({ query: Query, maxBytes: 10_000, ttlMs: 60_000 });
    for (let i = 0; i < 100; i++) await pages.page(of(1), { cursor: `q${i}` }, async () => 'x'.repeat(1_000));
    assert.ok(pages.size <= 10, `${pages.size} pages of 1,000 bytes kept`);
  });

  test('a payload that is not a list of account ids means every account', () => {
    assert.deepEqual(parseChanged('12'), { accounts: [12] });
    assert.deepEqual(parseChanged('3,4'), { accounts: [3, 4] });
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
