// Live updates of the console (docs/console.md): a browser's event stream hears changes made through any
// instance (another instance on the same database here), gateways going online, and ends at sign-out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_STREAMS_PER_SESSION } from '../../src/modules/console/live.ts';
import pg from 'pg';
import { backend, testDatabaseUrl } from '../helpers/database.ts';
import { createAccount } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, startService, useTestService, type TestService } from '../helpers/service.ts';

const ctx = useTestService();
const connect = gatewayClients();
let other: TestService;

interface Change {
  topic: string;
  account_id: number | null;
}

/** An open event stream: the changes heard so far, and a wait for one that matches. */
async function openStream(url: string, cookie: string) {
  const controller = new AbortController();
  const response = await fetch(`${url}/console/live`, { headers: { cookie }, signal: controller.signal });
  const changes: Change[] = [];
  let ended = false;
  const waiters: (() => void)[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reading = (async () => {
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk);
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(message)?.[1];
          if (/^event: change$/m.test(message) && data) changes.push(JSON.parse(data) as Change);
        }
        waiters.splice(0).forEach((wake) => wake());
      }
    } catch {
      // aborted
    }
    ended = true;
    waiters.splice(0).forEach((wake) => wake());
  })();
  return {
    response,
    changes,
    get ended() {
      return ended;
    },
    async waitFor(check: () => boolean, what: string, ms = 5000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; heard ${JSON.stringify(changes)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}

async function signIn(service: TestService): Promise<{ cookie: string; csrf: string }> {
  const answer = await service.request<{ csrf_token: string }>('POST', '/console/session', { body: { token: ADMIN_TOKEN } });
  assert.equal(answer.status, 200);
  return { cookie: (answer.headers.get('set-cookie') ?? '').split(';')[0] as string, csrf: answer.body.csrf_token };
}

describe('the live stream', () => {
  // A second instance on the same database, as behind a load balancer (in the suite: root hooks run first).
  before(async () => {
    other = await startService(ctx.database.db);
  });
  after(async () => other?.close());

  test('needs a session', async () => {
    const answer = await fetch(`${ctx.service.url}/console/live`);
    assert.equal(answer.status, 401);
    assert.match(answer.headers.get('content-type') ?? '', /application\/json/);
  });

  test("hears another instance's changes and a gateway going online, tagged with the account", async () => {
    const session = await signIn(ctx.service);
    const stream = await openStream(ctx.service.url, session.cookie);
    assert.equal(stream.response.status, 200);
    assert.match(stream.response.headers.get('content-type') ?? '', /^text\/event-stream/);
    // The headers every answer carries, set by hooks before the stream took the reply over.
    assert.match(stream.response.headers.get('x-request-id') ?? '', /.+/);
    assert.equal(stream.response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(stream.response.headers.get('cache-control'), 'no-store, private');
    try {
      const account = await createAccount(other);
      const person = await other.admin('POST', '/admin/v1/people', { location_id: account.rootLocationId, name: 'Ada', email: 'ada@example.com' });
      assert.equal(person.status, 201, person.text);
      await stream.waitFor(() => stream.changes.some((c) => c.topic === 'events' && c.account_id === account.id), 'person.created from the other instance');

      const gateway = await createGateway(other, account.rootLocationId);
      const client = await connect(gateway);
      await stream.waitFor(() => stream.changes.some((c) => c.topic === 'presence' && c.account_id === account.id), 'the gateway online');
      client.end(true);
    } finally {
      await stream.close();
    }
  });

  test('a write from a session with another search_path (a script, a restore) succeeds and is heard', { skip: backend !== 'postgres' && 'server PostgreSQL only' }, async () => {
    const session = await signIn(ctx.service);
    const stream = await openStream(ctx.service.url, session.cookie);
    const [{ schema }] = (await ctx.database.db.query<{ schema: string }>('SELECT current_schema() AS schema')) as [{ schema: string }];
    const client = new pg.Client({ connectionString: testDatabaseUrl() }); // search_path: the server's default
    await client.connect();
    try {
      const account = await createAccount(ctx.service);
      const gateway = await createGateway(ctx.service, account.rootLocationId);
      await client.query(`UPDATE ${schema}.gateways SET online = true WHERE id = $1`, [gateway.id]);
      await stream.waitFor(() => stream.changes.some((c) => c.topic === 'presence' && c.account_id === account.id), 'the presence change');
    } finally {
      await client.end();
      await stream.close();
    }
  });

  test('a burst of changes is coalesced, not one message per row', async () => {
    const session = await signIn(ctx.service);
    const stream = await openStream(ctx.service.url, session.cookie);
    try {
      const account = await createAccount(ctx.service);
      await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          ctx.service.admin('POST', '/admin/v1/people', { location_id: account.rootLocationId, name: `P${i}`, email: `p${i}@example.com` }),
        ),
      );
      await stream.waitFor(() => stream.changes.some((c) => c.account_id === account.id), 'the burst');
      await new Promise((resolve) => setTimeout(resolve, 500));
      const heard = stream.changes.filter((c) => c.topic === 'events' && c.account_id === account.id).length;
      assert.ok(heard < 10, `10 changes arrived as ${heard} messages`);
    } finally {
      await stream.close();
    }
  });

  test('streams per session are capped, and sign-out ends them on the instance that signed out', async () => {
    const session = await signIn(ctx.service);
    const streams = [];
    for (let i = 0; i < MAX_STREAMS_PER_SESSION; i++) streams.push(await openStream(ctx.service.url, session.cookie));
    const refused = await fetch(`${ctx.service.url}/console/live`, { headers: { cookie: session.cookie } });
    assert.equal(refused.status, 429);
    await refused.text();

    const out = await ctx.service.request('DELETE', '/console/session', { headers: { cookie: session.cookie, 'x-csrf-token': session.csrf } });
    assert.equal(out.status, 204);
    for (const stream of streams) await stream.waitFor(() => stream.ended, 'the stream to end');
  });
});
