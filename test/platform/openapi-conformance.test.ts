// Real traffic through a validator built from the documents: every public operation, its successes and its
// main errors, and the operator calls that set them up, each answer checked against /v1/openapi.json or
// /admin/v1/openapi.json (test/helpers/openapi-conformance.ts). A status, body or header the documents do not
// describe fails the test.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { ALL_SCOPES, alignToMinuteStart, createAccount, createApiKey, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients } from '../helpers/gateways.ts';
import { conformingService, type ConformanceChecker } from '../helpers/openapi-conformance.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { useTestService, type TestService } from '../helpers/service.ts';

let client: TestService;
let checkers: { public: ConformanceChecker; operator: ConformanceChecker };
let receiver: Receiver;

// One setup (useTestService's): Node 20 does not wait for one root-level before() before starting the next.
useTestService(
  async (service) => {
    receiver = await startReceiver();
    const conforming = await conformingService(service);
    client = conforming.service;
    checkers = conforming;
  },
  { WEBHOOK_ALLOW_HOSTS: 'localhost' },
);
const connect = gatewayClients();
after(async () => receiver?.close());

interface Site {
  locationId: number;
  token: string;
  narrowToken: string;
  plainLock: number;
  remoteLock: number;
  otherLock: number;
}

async function site(): Promise<Site> {
  const account = await createAccount(client, { sms_enabled: true });
  await createSecurityGroup(client, account.rootLocationId, 'staff');
  const gateway = await createGateway(client, account.rootLocationId);
  const remoteLock = await createLock(client, account.rootLocationId, { name: 'Gate', gateway_id: gateway.id, security_groups: ['staff'] });
  const otherLock = await createLock(client, account.rootLocationId, { name: 'Back gate', gateway_id: gateway.id });
  const plainLock = await createLock(client, account.rootLocationId, { name: 'Office' });
  const { token } = await createApiKey(client, account.rootLocationId, ALL_SCOPES, { lock_allowlist: [remoteLock, plainLock] });
  const narrowToken = (await createApiKey(client, account.rootLocationId, ['catalog:read'])).token;
  await connect(gateway); // a gateway that logs in to the embedded broker is online
  return { locationId: account.rootLocationId, token, narrowToken, plainLock, remoteLock, otherLock };
}

test('the catalog, people, keys and invitations answer as documented', async () => {
  const s = await site();
  const as = (token: string, extra: Record<string, unknown> = {}) => ({ token, ...extra });
  const get = (path: string, token = s.token) => client.request<Record<string, unknown>>('GET', path, as(token));

  assert.equal((await get('/v1/locks')).status, 200);
  assert.equal((await get('/v1/locks?limit=abc')).status, 400);
  assert.equal((await client.request('GET', '/v1/locks')).status, 401);
  assert.equal((await get('/v1/people', s.narrowToken)).status, 403);
  assert.equal((await get(`/v1/locks/${s.plainLock}`)).status, 200);
  assert.equal((await get('/v1/locks/999999')).status, 404);
  assert.equal((await get('/v1/security_groups?is_default=false')).status, 200);
  assert.equal((await client.request('GET', '/v1/security_groups')).status, 401);
  assert.equal((await client.request('PUT', '/v1/locks', as(s.token, { body: {} }))).status, 405);
  assert.equal((await get('/v1/no_such_thing')).status, 404);

  const created = await client.request<{ id: string }>('POST', '/v1/people', as(s.token, { body: { name: 'Ada Lovelace', phone: '+4915112345678', email: 'ada@example.com' } }));
  assert.equal(created.status, 201);
  const person = created.body.id;
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: { name: 'Ada', email: 'ADA@example.com' } }))).status, 200);
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: { name: 'Admin', colour: 'red' } }))).status, 422);
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: '<name>Ada</name>', headers: { 'content-type': 'application/xml' } }))).status, 415);
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: '{"name": ' }))).status, 400);
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: { name: 'x'.repeat(1_100_000) } }))).status, 413);
  const once = { 'idempotency-key': 'conformance-1' };
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: { name: 'Grace Hopper' }, headers: once }))).status, 201);
  assert.equal((await client.request('POST', '/v1/people', as(s.token, { body: { name: 'Grace Murray Hopper' }, headers: once }))).status, 409);
  assert.equal((await get('/v1/people?phone=%2B49%20151%2012345678')).status, 200);
  assert.equal((await get('/v1/people?phone=nonsense')).status, 400);
  assert.equal((await get(`/v1/people/${person}`)).status, 200);
  assert.equal((await get('/v1/people/00000000-0000-4000-8000-000000000000')).status, 404);
  assert.equal((await client.request('PUT', `/v1/people/${person}`, as(s.token, { body: { title: 'Countess' } }))).status, 200);
  assert.equal((await client.request('PUT', `/v1/people/${person}`, as(s.token, { body: { phone: '12' } }))).status, 422);
  const managed = await client.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Managed Person', location_id: s.locationId, managed: true });
  assert.equal(managed.status, 201);
  assert.equal((await client.request('PUT', `/v1/people/${managed.body.id}`, as(s.token, { body: { title: 'x' } }))).status, 403);
  assert.equal((await client.request('DELETE', `/v1/people/${managed.body.id}`, as(s.token))).status, 403);

  const issued = await client.request<{ invitation_id: number }>('POST', '/v1/keys', as(s.token, { body: { person_id: person, security_groups: ['staff'], channel: 'both' } }));
  assert.equal(issued.status, 202);
  assert.equal((await client.request('POST', '/v1/keys', as(s.token, { body: { person_id: '00000000-0000-4000-8000-000000000000', security_groups: [] } }))).status, 404);
  assert.equal((await client.request('POST', '/v1/keys', as(s.token, { body: { person_id: person, security_groups: ['nope'] } }))).status, 422);
  const invitation = issued.body.invitation_id;
  assert.equal((await get('/v1/invitations')).status, 200);
  assert.equal((await get('/v1/invitations?state=bogus')).status, 422);
  assert.equal((await get(`/v1/invitations/${invitation}`)).status, 200);
  assert.equal((await get('/v1/invitations/999999')).status, 404);
  assert.equal((await client.request('POST', `/v1/invitations/${invitation}/resend`, as(s.token))).status, 202, 'a resend without a body');
  assert.equal((await client.request('POST', `/v1/invitations/${invitation}/resend`, as(s.token, { body: { channel: 'email' } }))).status, 202);
  assert.equal((await client.request('POST', `/v1/invitations/${invitation}/resend`, as(s.token, { body: { channel: 'fax' } }))).status, 422);
  assert.equal((await client.request('DELETE', `/v1/invitations/${invitation}`, as(s.token))).status, 204);
  assert.equal((await client.request('DELETE', `/v1/invitations/${invitation}`, as(s.token))).status, 409);
  assert.equal((await client.request('POST', `/v1/invitations/${invitation}/resend`, as(s.token))).status, 409);

  const card = await client.admin<{ id: number }>('POST', '/admin/v1/keys', { person_id: person, type: 'card', name: 'Card', security_groups: ['staff'] });
  assert.equal(card.status, 201);
  assert.equal((await get('/v1/keys?state=handed_over')).status, 200);
  assert.equal((await get('/v1/keys', s.narrowToken)).status, 403);
  assert.equal((await get(`/v1/keys/${card.body.id}`)).status, 200);
  assert.equal((await get('/v1/keys/999999')).status, 404);
  assert.equal((await client.request('PATCH', `/v1/keys/${card.body.id}`, as(s.token, { body: { name: 'Blue card' } }))).status, 200);
  assert.equal((await client.request('PATCH', `/v1/keys/${card.body.id}`, as(s.token, { body: {} }))).status, 422);
  assert.equal((await client.request('DELETE', `/v1/keys/${card.body.id}`, as(s.token))).status, 204);
  assert.equal((await client.request('DELETE', `/v1/keys/${card.body.id}`, as(s.token))).status, 404);
  assert.equal((await client.request('DELETE', `/v1/people/${person}`, as(s.token))).status, 204);
  assert.equal((await client.request('DELETE', `/v1/people/${person}`, as(s.token))).status, 404);
});

test('unlocks, the access log and rate limits answer as documented', async () => {
  const s = await site();
  await alignToMinuteStart(client);
  const unlock = (lock: number) => client.request<{ id: string }>('POST', `/v1/locks/${lock}/unlock`, { token: s.token });
  const command = await unlock(s.remoteLock);
  assert.equal(command.status, 202, command.text);
  assert.equal((await client.request('GET', `/v1/locks/${s.remoteLock}/commands/${command.body.id}`, { token: s.token })).status, 200);
  assert.equal((await client.request('GET', `/v1/locks/${s.remoteLock}/commands/00000000-0000-4000-8000-000000000000`, { token: s.token })).status, 404);
  assert.equal((await unlock(s.otherLock)).status, 403);
  assert.equal((await client.request('GET', `/v1/locks/${s.otherLock}/commands/${command.body.id}`, { token: s.token })).status, 403);
  assert.equal((await unlock(999999)).status, 404);
  for (let i = 0; i < 10; i++) assert.equal((await unlock(s.plainLock)).status, 409);
  const limited = await unlock(s.plainLock);
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get('retry-after')) >= 1, 'Retry-After');
  assert.equal(limited.headers.get('x-ratelimit-remaining'), '0');

  assert.equal((await client.request('GET', '/v1/events?type=access.granted', { token: s.token })).status, 200);
  assert.equal((await client.request('GET', '/v1/events?since=yesterday', { token: s.token })).status, 400);
});

test('webhooks answer as documented', async () => {
  const s = await site();
  const manage = (method: string, path: string, body?: unknown) => client.request<Record<string, unknown>>(method, path, { token: s.token, body });
  assert.equal((await manage('POST', '/v1/webhooks', { url: 'http://example.com/hook', events: ['*'] })).status, 422);
  const created = await manage('POST', '/v1/webhooks', { url: receiver.url('/hook'), events: ['*'], description: 'conformance' });
  assert.equal(created.status, 201, created.text);
  const id = String(created.body.id);
  assert.equal((await manage('GET', '/v1/webhooks')).status, 200);
  assert.equal((await client.request('GET', '/v1/webhooks', { token: s.narrowToken })).status, 403);
  assert.equal((await manage('GET', `/v1/webhooks/${id}`)).status, 200);
  assert.equal((await manage('GET', '/v1/webhooks/00000000-0000-4000-8000-000000000000')).status, 404);
  assert.equal((await manage('PATCH', `/v1/webhooks/${id}`, { description: 'renamed' })).status, 200);
  assert.equal((await manage('PATCH', `/v1/webhooks/${id}`, {})).status, 422);
  const ping = await manage('POST', `/v1/webhooks/${id}/ping`);
  assert.equal(ping.status, 200, ping.text);
  assert.equal((await manage('POST', '/v1/webhooks/00000000-0000-4000-8000-000000000000/ping')).status, 404);
  assert.equal((await manage('GET', `/v1/webhooks/${id}/deliveries?event_type=ping`)).status, 200);
  assert.equal((await manage('GET', '/v1/webhooks/00000000-0000-4000-8000-000000000000/deliveries')).status, 404);
  const redelivered = `/v1/webhooks/${id}/deliveries/${String(ping.body.id)}/redeliver`;
  assert.equal((await manage('POST', redelivered)).status, 202);
  assert.equal((await manage('POST', `/v1/webhooks/${id}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`)).status, 404);
  assert.equal((await manage('PATCH', `/v1/webhooks/${id}`, { status: 'paused' })).status, 200);
  assert.equal((await manage('POST', redelivered)).status, 409);
});

test('a listener stream of webhook events answers as documented', async () => {
  const s = await site();
  // The stream never ends, so it is read as a client would: its head and first message, then closed.
  const aborter = new AbortController();
  const res = await fetch(`${client.url}/v1/webhooks/listen`, { headers: { authorization: `Bearer ${s.token}` }, signal: aborter.signal });
  const first = await (res.body as ReadableStream<Uint8Array>).getReader().read();
  aborter.abort();
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  assert.match(new TextDecoder().decode(first.value), /event: ready/);
  checkers.public.check('GET', '/v1/webhooks/listen', { status: res.status, headers: res.headers, body: null, text: '' });
  assert.equal((await client.request('GET', '/v1/webhooks/listen?events=nope', { token: s.token })).status, 400);
});

test('every public operation was exercised, with a success and an error', () => {
  const operations = checkers.public.operationIds();
  assert.equal(operations.length, 28);
  for (const operation of operations) {
    const statuses = [...checkers.public.answered].filter((a) => a.startsWith(`${operation} `)).map((a) => Number(a.split(' ')[1]));
    assert.ok(statuses.some((status) => status < 300), `${operation}: no success (${statuses.join(', ')})`);
    assert.ok(statuses.some((status) => status >= 400), `${operation}: no error (${statuses.join(', ')})`);
  }
});

test('the validator refuses an answer the document does not describe', () => {
  const answer = (status: number, body: unknown) => ({
    status,
    body,
    text: body === null ? '' : JSON.stringify(body),
    headers: new Headers(body === null ? {} : { 'content-type': 'application/json' }),
  });
  const lock = { id: 1, name: 'Door', serial_number: null, place: '', provider: 'sandbox', online: null, security_groups: [], location: { id: 1, name: 'Acme' } };
  checkers.public.check('GET', '/v1/locks/1', answer(200, lock));
  assert.throws(() => checkers.public.check('GET', '/v1/locks/1', answer(418, { error: { code: 'not_found', message: 'x' } })), /does not document 418/);
  assert.throws(() => checkers.public.check('GET', '/v1/locks/1', answer(200, { ...lock, online: 'yes' })), /does not match/);
  assert.throws(() => checkers.public.check('GET', '/v1/locks/1', answer(200, { ...lock, colour: 'red' })), /does not match/);
  assert.throws(() => checkers.public.check('GET', '/v1/locks/1', answer(404, { error: { code: 'gone_fishing', message: 'x' } })), /does not match/);
  assert.throws(() => checkers.public.check('DELETE', '/v1/keys/1', answer(204, { id: 1 })), /documents no body/);
});
