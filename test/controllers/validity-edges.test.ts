// Cards of an external locking system go on at their key's starts_at and come off at its expires_at: every 15 s a
// job asks which keys of such accounts had an edge since it last looked (keysWithValidityEdge). It reads the keys at
// an edge through their indexes (migration 022), not every key of every account.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keysWithValidityEdge, VALIDITY_EDGE_KEYS } from '../../src/modules/controllers/store.ts';
import { sequentialScans } from '../helpers/database.ts';
import { createAccount } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();
const HOUR = 3_600_000;

/** `count` cards in the account, starting at `startsAt`, ending at `expiresAt`; returns their ids. */
async function cards(accountId: number, locationId: number, count: number, startsAt: Date, expiresAt: Date | null, box: string | null = 'sealed'): Promise<number[]> {
  const rows = await ctx.database.db.query<{ id: number }>(
    `WITH people AS (
       INSERT INTO people (id, account_id, location_id, name, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, 'Holder ' || n, now(), now() FROM generate_series(1, $3::int) AS n RETURNING id)
     INSERT INTO keys (account_id, person_id, type, name, state, security_groups, starts_at, expires_at, created_at, updated_at, credential_hash, credential_box)
     SELECT $1, id, 'card', 'Badge', 'handed_over', ARRAY['staff'], $4, $5, now(), now(), md5(random()::text), $6 FROM people
     RETURNING id`,
    [accountId, locationId, count, startsAt, expiresAt, box],
  );
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

test('finds the keys of external locking systems whose validity began or ended in the interval, reading only them', async () => {
  const now = new Date('2026-11-28T12:00:00Z');
  const from = new Date(now.getTime() - 15_000);
  const uhppote = await createAccount(ctx.service);
  await ctx.database.db.query("UPDATE accounts SET locking_system = 'uhppote' WHERE id = $1", [uhppote.id]);
  const latchkey = await createAccount(ctx.service);
  const root = uhppote.rootLocationId;

  const began = await cards(uhppote.id, root, 2, new Date(now.getTime() - 5_000), null);
  const ended = await cards(uhppote.id, root, 1, new Date(now.getTime() - 48 * HOUR), new Date(now.getTime() - 1_000));
  const endsAtTheEdge = await cards(uhppote.id, root, 1, new Date(now.getTime() - 48 * HOUR), now); // (from, to]: included
  await cards(uhppote.id, root, 1, from, null); // began at `from` itself: the run before took it
  await cards(uhppote.id, root, 1, new Date(now.getTime() + 1_000), null); // not yet
  await cards(uhppote.id, root, 1, new Date(now.getTime() - 5_000), null, null); // no card number: nothing to put on a board
  await cards(latchkey.id, latchkey.rootLocationId, 2, new Date(now.getTime() - 5_000), null); // Latchkey's own lists
  // The rest of a large site: keys valid for long, whose edges are far from now.
  await cards(uhppote.id, root, 3000, new Date(now.getTime() - 30 * 24 * HOUR), new Date(now.getTime() + 30 * 24 * HOUR));
  await cards(latchkey.id, latchkey.rootLocationId, 3000, new Date(now.getTime() - 30 * 24 * HOUR), null);
  await ctx.database.db.query('ANALYZE keys');

  const found = await keysWithValidityEdge(ctx.database.db, from, now);
  assert.deepEqual(
    found.map((r) => [r.account_id, r.key_id]).sort((a, b) => (a[1] as number) - (b[1] as number)),
    [...began, ...ended, ...endsAtTheEdge].map((id) => [uhppote.id, id]),
  );

  assert.deepEqual(await sequentialScans(ctx.database.db, 'keys', VALIDITY_EDGE_KEYS.text, [from, now]), [], 'no sequential scan of keys');
});
