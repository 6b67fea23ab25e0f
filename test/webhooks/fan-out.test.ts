// The webhook fan-out as another store uses it (the access log's batch write): the caller's `outgoing` rows
// become domain events with their deliveries in its one statement, exactly when it commits, and the
// dispatchers' NOTIFY goes out whatever the caller's answer reads (the statement is built around it).
import assert from 'node:assert/strict';
import { before, after, test } from 'node:test';
import { WEBHOOK_DUE_CHANNEL } from '../../src/platform/channels.ts';
import { fanOutStatement } from '../../src/modules/webhooks/index.ts';
import { createAccount, createApiKey, type AccountFixture } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { useTestService } from '../helpers/service.ts';

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

/** One person.created event of the account's root location, as a caller's CTE would give it; its answer reads none of it. */
const silentWrite = fanOutStatement({
  name: 'test.fanOut.silent',
  ctes: `outgoing AS (
    SELECT 'person.created'::text AS type, $1::bigint AS account_id, $2::bigint AS location_id, NULL::uuid AS person_id,
           jsonb_build_object('marker', $3::text) AS data, now() AS occurred_at, 1 AS n
  )`,
  answer: 'SELECT 1 AS one WHERE false',
});

async function subscribedAccount(): Promise<AccountFixture> {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
  const res = await ctx.service.request('POST', '/v1/webhooks', { token: key.token, body: { url: receiver.url(), events: ['person.created'] } });
  assert.equal(res.status, 201, res.text);
  return account;
}

async function stored(marker: string): Promise<{ events: number; deliveries: number }> {
  const [row] = await ctx.database.db.query<{ events: number; deliveries: number }>(
    `SELECT (SELECT count(*)::int FROM domain_events WHERE data->>'marker' = $1) AS events,
            (SELECT count(*)::int FROM webhook_deliveries WHERE payload->>'marker' = $1) AS deliveries`,
    [marker],
  );
  return row ?? { events: -1, deliveries: -1 };
}

test('the event and its delivery commit with the statement, and the dispatchers are woken though its answer has no rows', async () => {
  const account = await subscribedAccount();
  let woken = 0;
  await ctx.database.db.listen(WEBHOOK_DUE_CHANNEL, () => woken++);
  const rows = await ctx.database.db.transaction((tx) => tx.query(silentWrite, [account.id, account.rootLocationId, 'committed']));
  assert.deepEqual(rows, []);
  assert.deepEqual(await stored('committed'), { events: 1, deliveries: 1 });
  await waitFor(() => woken > 0, 'the webhook_due NOTIFY');
});

test('rolled back with the caller: no event, no delivery', async () => {
  const account = await subscribedAccount();
  await assert.rejects(
    ctx.database.db.transaction(async (tx) => {
      await tx.query(silentWrite, [account.id, account.rootLocationId, 'rolled back']);
      throw new Error('the caller fails after the write');
    }),
    /the caller fails/,
  );
  assert.deepEqual(await stored('rolled back'), { events: 0, deliveries: 0 });
});

test('a statement without an outgoing CTE is refused when it is built', () => {
  assert.throws(() => fanOutStatement({ name: 'test.fanOut.none', ctes: 'rows AS (SELECT 1)', answer: 'SELECT 1' }), /CTE named outgoing/);
});
