// `latchkey webhooks …` against a real Latchkey delivering to a local HTTPS receiver: the secret is printed by
// create only, and the subscription is read, changed, pinged and redelivered from the command line.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { useTestService } from '../helpers/service.ts';
import { cliFor } from './cli.ts';

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

test('create prints the secret once; list, get, update, ping, deliveries and redeliver', async () => {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
  const cli = cliFor(ctx.service);
  const run = (args: string[]) => cli.run(args, { LATCHKEY_API_KEY: token });
  const json = <T>(args: string[]) => cli.json<T>(args, { LATCHKEY_API_KEY: token });

  const created = await run(['webhooks', 'create', receiver.url('/cli'), '--events', 'person.created,key.issued', '--description', 'CLI test']);
  assert.equal(created.code, 0, created.stderr);
  const secret = /^secret\s+(\S+)$/m.exec(created.stdout)?.[1];
  assert.match(secret ?? '', /^whsec_/);
  assert.match(created.stderr, /signing secret is shown only now/);
  const id = /^id\s+(\S+)$/m.exec(created.stdout)?.[1] as string;

  const listed = await run(['webhooks', 'list']);
  assert.match(listed.stdout, new RegExp(`^${id}\\s+https://localhost:\\d+/cli\\s+person\\.created, key\\.issued\\s+active`, 'm'));
  const read = await run(['webhooks', 'get', id]);
  assert.ok(!read.stdout.includes(secret as string) && !/^secret/m.test(read.stdout), 'reads never show the secret');

  const updated = await json<{ url: string; status: string; events: string[] }>(['webhooks', 'update', id, '--endpoint', receiver.url('/cli-2'), '--events', '*']);
  assert.deepEqual([new URL(updated.url).pathname, updated.events, updated.status], ['/cli-2', ['*'], 'active']);

  const ping = await json<{ id: string; event_type: string; status: string; response_status: number }>(['webhooks', 'ping', id]);
  assert.deepEqual([ping.event_type, ping.status, ping.response_status], ['ping', 'delivered', 200]);
  assert.ok(receiver.received.some((r) => r.path === '/cli-2' && r.body.type === 'ping'));
  const again = await json<{ event_id: string; status: string }>(['webhooks', 'redeliver', id, ping.id]);
  assert.deepEqual([again.event_id, again.status], [ping.id, 'pending']);
  const deliveries = await run(['webhooks', 'deliveries', id, '--event-type', 'ping']);
  assert.match(deliveries.stdout, /^ID\s+EVENT TYPE\s+STATUS\s+ATTEMPT/);
  assert.equal(deliveries.stdout.trim().split('\n').length, 3, deliveries.stdout);

  const paused = await json<{ status: string }>(['webhooks', 'update', id, '--status', 'paused']);
  assert.equal(paused.status, 'paused');
  const unchanged = await run(['webhooks', 'update', id]);
  assert.equal(unchanged.code, 2);
  assert.match(unchanged.stderr, /nothing to change/);
  const refused = await run(['webhooks', 'redeliver', id, ping.id]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /subscription_paused, HTTP 409/);
});
