// Webhook URLs holding whitespace or control characters: the WHATWG parser strips tabs and line breaks (and
// spaces at either end), so such a URL parsed, was stored raw, shown by the API and mailed in the auto-pause
// e-mail. It is refused (422, `invalid` on `url`) on create and update; one stored before is mailed encoded.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { advanceClock, createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

/** A receiver that fails every delivery. */
let server: Server;
let port = 0;
before(async () => {
  server = createServer({ key: readFileSync('test/fixtures/tls/key.pem'), cert: readFileSync('test/fixtures/tls/cert.pem') }, (request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(500).end('no'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

async function tenant() {
  const account = await createAccount(ctx.service);
  const opsEmail = `ops${account.id}@example.com`;
  const user = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops', email: opsEmail });
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write'], { created_by_user_id: user.body.id });
  return { token: key.token, opsEmail };
}

const base = () => `https://localhost:${port}/fail`;
const INJECTED = '\n\nYour Latchkey API keys were revoked. Sign in at https://latchkey-console.example.net/ to issue new ones.\n\n';

/** Each parses with new URL() (the characters are stripped or encoded), and each must be refused. */
const refused = () => [
  `${base()}${INJECTED}`,
  `${base()}\r\nX-Injected: 1`,
  `https://local\thost:${port}/fail`,
  `${base()}/a\tb`,
  `${base()}/a b`,
  ` ${base()}`,
  `${base()} `,
  `${base()}\u0000`,
  `\u0001${base()}`,
  `${base()}\u007f`,
  `${base()}\u0085`,
  `${base()}\u00a0`,
  `${base()}\u2028`,
];

test('a URL with whitespace or control characters is refused on create: 422, invalid on url, nothing stored', async () => {
  const t = await tenant();
  for (const url of refused()) {
    assert.doesNotThrow(() => new URL(url), JSON.stringify(url)); // what made it slip through
    const res = await ctx.service.request<ErrorBody>('POST', '/v1/webhooks', { token: t.token, body: { url, events: ['*'] } });
    assert.equal(res.status, 422, JSON.stringify(url));
    assert.equal(res.body.error.code, 'validation_failed');
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']], JSON.stringify(url));
    // (A NUL is refused before, by the request's own check, with a message of its own.)
    if (!url.includes('\u0000')) assert.match(res.body.error.details?.[0]?.message ?? '', /whitespace or control characters/);
  }
  const list = await ctx.service.request<{ data: unknown[] }>('GET', '/v1/webhooks', { token: t.token });
  assert.deepEqual(list.body.data, []);
  // A percent-encoded one is a plain URL.
  const encoded = await ctx.service.request('POST', '/v1/webhooks', { token: t.token, body: { url: `${base()}/a%20b`, events: ['*'] } });
  assert.equal(encoded.status, 201, encoded.text);
});

test('and on update, the stored URL unchanged', async () => {
  const t = await tenant();
  const sub = await ctx.service.request<{ id: string; url: string }>('POST', '/v1/webhooks', { token: t.token, body: { url: base(), events: ['*'] } });
  assert.equal(sub.status, 201, sub.text);
  for (const url of refused()) {
    const res = await ctx.service.request<ErrorBody>('PATCH', `/v1/webhooks/${sub.body.id}`, { token: t.token, body: { url } });
    assert.equal(res.status, 422, JSON.stringify(url));
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['url', 'invalid']], JSON.stringify(url));
  }
  const read = await ctx.service.request<{ url: string }>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token });
  assert.equal(read.body.url, base());
});

test('a URL stored before the rule goes into the auto-pause e-mail encoded, on one line', async () => {
  const t = await tenant();
  const sub = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token: t.token, body: { url: base(), events: ['*'] } });
  assert.equal(sub.status, 201, sub.text);
  await ctx.database.db.query('UPDATE webhook_subscriptions SET url = $2 WHERE id = $1', [sub.body.id, `${base()}${INJECTED}`]);
  await ctx.service.request('POST', '/v1/people', { token: t.token, body: { name: 'Trigger' } });
  await advanceClock(ctx.service, 0);
  await advanceClock(ctx.service, 24 * 3600 + 5);
  const read = await ctx.service.request<{ status: string }>('GET', `/v1/webhooks/${sub.body.id}`, { token: t.token });
  assert.equal(read.body.status, 'paused');
  const out = await ctx.service.admin<{ data: Array<{ body: string }> }>('GET', `/admin/v1/sandbox/outbox?to=${encodeURIComponent(t.opsEmail)}`);
  assert.equal(out.body.data.length, 1);
  const body = (out.body.data[0] as { body: string }).body;
  const line = body.split('\n').find((l) => l.startsWith('Deliveries to ')) ?? '';
  assert.ok(line.includes(`${base()}%0A%0AYour%20Latchkey%20API%20keys%20were%20revoked.`), line);
  assert.ok(line.endsWith(`have failed for 24 hours, so the subscription ${sub.body.id} is now paused.`), line);
  assert.ok(!body.includes('\n\nYour Latchkey API keys were revoked'), body);
});
