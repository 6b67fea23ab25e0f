// The keys presented online are read together (credential-cache.ts): the swipes asked while an account's read
// runs share the read after it, which looks them all up in two statements, and never the read already running,
// so a change committed before a swipe is in its answer.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { CredentialCache } from '../../src/modules/access/credential-cache.ts';
import { keysByCredential } from '../../src/modules/access/store.ts';
import { sqlText, type Row, type Sql } from '../../src/platform/db/database.ts';
import { createAccount } from '../helpers/fixtures.ts';
import { overriding } from '../helpers/database.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** A person with one card whose lookup hash is `hash`; returns the key's id. */
async function card(accountId: number, locationId: number, hash: string, state = 'handed_over'): Promise<number> {
  const person = randomUUID();
  await ctx.database.db.query('INSERT INTO people (id, account_id, location_id, name, created_at, updated_at) VALUES ($1, $2, $3, $4, now(), now())', [person, accountId, locationId, `Holder ${hash}`]);
  const [key] = await ctx.database.db.query<{ id: number }>(
    `INSERT INTO keys (account_id, person_id, type, name, state, security_groups, starts_at, created_at, updated_at, credential_hash, credential_box)
     VALUES ($1, $2, 'card', 'Badge', $3, ARRAY['staff'], now(), now(), now(), $4, 'sealed') RETURNING id`,
    [accountId, person, state, hash],
  );
  return Number(key?.id);
}

/** The database, counting its statements; `hold` (when set) keeps each result back until it resolves. */
function counted() {
  const state = { statements: 0, hold: null as Promise<void> | null };
  const db = overriding(ctx.database.db, {
    query: async <T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> => {
      state.statements++;
      const rows = await ctx.database.db.query<T>(sql, params);
      if (state.hold) await state.hold;
      return rows;
    },
  });
  return { db, state };
}

test('looks up many credentials in two statements: the key in use first, else the newest returned one, else none', async () => {
  const account = await createAccount(ctx.service);
  const root = account.rootLocationId;
  const inUse = await card(account.id, root, 'in-use');
  await card(account.id, root, 'reissued', 'returned');
  const reissued = await card(account.id, root, 'reissued'); // given out again: the key in use wins
  await card(account.id, root, 'returned-twice', 'returned');
  const newestReturned = await card(account.id, root, 'returned-twice', 'returned');
  const revoked = await card(account.id, root, 'revoked');
  await ctx.database.db.query('UPDATE keys SET revoked_at = now() WHERE id = $1', [revoked]);
  const other = await createAccount(ctx.service);
  await card(other.id, other.rootLocationId, 'elsewhere');

  const { db, state } = counted();
  const found = await keysByCredential(db, account.id, ['in-use', 'reissued', 'returned-twice', 'revoked', 'elsewhere', 'unknown']);
  assert.equal(state.statements, 2);
  assert.deepEqual(
    Object.fromEntries([...found].map(([hash, row]) => [hash, [row.id, row.state, row.person_path.map(Number)]])),
    {
      'in-use': [inUse, 'handed_over', [root]],
      reissued: [reissued, 'handed_over', [root]],
      'returned-twice': [newestReturned, 'returned', [root]],
    },
    "a revoked key, another account's and an unknown credential are not found",
  );
  state.statements = 0;
  await keysByCredential(db, account.id, ['in-use']);
  assert.equal(state.statements, 1, 'all found in use: no second statement');
});

test('swipes asked while a read runs share the read after it, never the running one: a change before the swipe is in its answer', async () => {
  const account = await createAccount(ctx.service);
  const root = account.rootLocationId;
  const first = await card(account.id, root, 'first');
  const others = { a: await card(account.id, root, 'a'), b: await card(account.id, root, 'b'), c: await card(account.id, root, 'c') };
  const { db, state } = counted();
  const cache = new CredentialCache(db);

  let release = () => {};
  state.hold = new Promise((resolve) => (release = resolve));
  const before = cache.find(account.id, 'first'); // read, then held before it answers
  while (state.statements === 0) await new Promise((resolve) => setImmediate(resolve));
  // The key is revoked and the change heard (AccessLists.refresh notifies; the cache forgets) while that read is held.
  await ctx.database.db.query('UPDATE keys SET revoked_at = now() WHERE id = $1', [first]);
  cache.forgetAll();
  const after = [cache.find(account.id, 'first'), cache.find(account.id, 'a'), cache.find(account.id, 'b'), cache.find(account.id, 'c'), cache.find(account.id, 'nobody')];
  state.hold = null;
  release();

  assert.equal((await before)?.id, first, 'the swipe before the revocation');
  const [revoked, a, b, c, nobody] = await Promise.all(after);
  assert.equal(revoked, null, 'the swipe after the revocation is refused: it did not share the read begun before it');
  assert.deepEqual([a?.id, b?.id, c?.id, nobody], [others.a, others.b, others.c, null]);
  assert.equal(state.statements, 3, 'one statement for the first read, two for the five swipes after it');
});

test('a failed read fails its own swipes only; those waiting for the next read get their answer, and a failed key is read again', async () => {
  const account = await createAccount(ctx.service);
  const root = account.rootLocationId;
  const key = await card(account.id, root, 'k');
  const next = await card(account.id, root, 'next');
  let fail = true;
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const db = overriding(ctx.database.db, {
    query: async <T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> => {
      if (fail && sqlText(sql).includes('credential_hash')) {
        fail = false;
        await held;
        throw new Error('the database went away');
      }
      return ctx.database.db.query<T>(sql, params);
    },
  });
  const cache = new CredentialCache(db);
  const failed = cache.find(account.id, 'k');
  const waiting = cache.find(account.id, 'next');
  release();
  await assert.rejects(failed, /went away/);
  assert.equal((await waiting)?.id, next);
  assert.equal((await cache.find(account.id, 'k'))?.id, key, 'not remembered as failed');
});
