// `latchkey webhooks listen --forward-to <local url>` against a real Latchkey: the events of the key's location
// reach a plain-http local receiver as signed deliveries that verifyWebhook accepts with the printed secret;
// a receiver that is down is one line; Ctrl-C ends it cleanly, a revoked key ends it with exit 1.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { verifyWebhook } from '../../packages/sdk/src/index.ts';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import { cliFor, outcome, startCli } from './cli.ts';

const ctx = useTestService();

interface Got {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

async function localReceiver() {
  const got: Got[] = [];
  const server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    request.on('end', () => {
      got.push({ path: request.url ?? '', headers: request.headers, raw });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    got,
    url: `http://localhost:${port}/hook`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function person(token: string, name: string): Promise<string> {
  const res = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

test('forwards each event, signed, to a local http URL; one line per event; a receiver that is down is one line; Ctrl-C ends it', async () => {
  const account = await createAccount(ctx.service);
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write']);
  const receiver = await localReceiver();
  const cli = cliFor(ctx.service);
  const child = startCli(['webhooks', 'listen', '--forward-to', receiver.url, '--events', 'person.created,person.deleted'], { ...cli.env, LATCHKEY_API_KEY: token });
  const { result, output } = outcome(child);
  try {
    await waitFor(() => /Ready! Your webhook signing secret is whsec_\S+ \(\^C to quit\)/.test(output()), `the ready line (${output()})`, 20_000);
    const secret = /signing secret is (whsec_[A-Za-z0-9_-]+)/.exec(output())?.[1] as string;

    const id = await person(token, 'Forwarded');
    await waitFor(() => receiver.got.length > 0, 'the forwarded delivery', 10_000);
    const [got] = receiver.got;
    assert.ok(got);
    assert.equal(got.path, '/hook');
    const now = (await ctx.service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock')).body.now;
    const event = await verifyWebhook(got.raw, got.headers, secret, { now: new Date(now) });
    assert.equal(event.type, 'person.created');
    assert.equal((event.data as { id: string }).id, id);
    assert.equal(got.headers['x-service-delivery'], event.id);
    assert.equal(got.headers['content-type'], 'application/json');
    await waitFor(() => output().includes(`person.created   ${event.id}  [204] POST ${receiver.url}`), `the event's line (${output()})`);
    assert.match(output(), new RegExp(`^\\d\\d:\\d\\d:\\d\\d  person\\.created   ${event.id}  \\[204\\]`, 'm'));

    const secretPrinted = await cli.run(['webhooks', 'listen', '--print-secret'], { LATCHKEY_API_KEY: token });
    assert.deepEqual([secretPrinted.code, secretPrinted.stdout.trim()], [0, secret], 'the same secret for every session of the key');

    await receiver.close();
    await ctx.service.request('DELETE', `/v1/people/${id}`, { token });
    await waitFor(() => /person\.deleted\s+\S+\s+failed: ECONNREFUSED/.test(output()), `the failure line (${output()})`, 10_000);
    assert.equal(receiver.got.length, 1);
  } finally {
    child.kill('SIGINT');
  }
  const ended = await result;
  assert.equal(ended.code, 0, ended.stderr);
});

test('a revoked key ends the command with exit 1; a key without webhooks:manage is refused at once', async () => {
  const account = await createAccount(ctx.service);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage']);
  const receiver = await localReceiver();
  const cli = cliFor(ctx.service);
  try {
    const child = startCli(['webhooks', 'listen', '--forward-to', receiver.url], { ...cli.env, LATCHKEY_API_KEY: key.token });
    const { result, output } = outcome(child);
    await waitFor(() => output().includes('Ready!'), `the ready line (${output()})`, 20_000);
    await ctx.service.admin('DELETE', `/admin/v1/api_keys/${key.id}`);
    const ended = await result;
    assert.equal(ended.code, 1, output());
    assert.match(ended.stderr, /API key was revoked/);

    const reader = await createApiKey(ctx.service, account.rootLocationId, ['people:read']);
    const refused = await cli.run(['webhooks', 'listen', '--forward-to', receiver.url], { LATCHKEY_API_KEY: reader.token });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /insufficient_scope, HTTP 403/);
    const usage = await cli.run(['webhooks', 'listen'], { LATCHKEY_API_KEY: reader.token });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--forward-to/);
  } finally {
    await receiver.close();
  }
});
