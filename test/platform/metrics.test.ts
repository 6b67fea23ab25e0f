// Prometheus metrics (README: Operations): served only by the METRICS_PORT listener, never on the API's port;
// each app counts in its own registry; requests, rate-limit refusals, webhook deliveries, door events and
// database errors move their series, labelled by route pattern (never the URL) and fixed names.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { databaseError } from '../../src/platform/db/errors.ts';
import { advanceClock, alignToMinuteStart, createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { backend, createTestDatabase, withFaults, type TestDatabase } from '../helpers/database.ts';
import { createGateway, gatewayClients, gatewayTopic } from '../helpers/gateways.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { freshIp, startService, useTestService, type TestService } from '../helpers/service.ts';

let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
});
after(async () => receiver?.close());

const ctx = useTestService(undefined, { METRICS_PORT: '0', WEBHOOK_ALLOW_HOSTS: 'localhost' }, { transport: 'inject' });
const connect = gatewayClients();

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The exposition text as samples. */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string;
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

async function scrape(service: TestService = ctx.service): Promise<Sample[]> {
  const url = service.latchkey.metricsUrl;
  assert.ok(url, 'the metrics listener runs');
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parse(await response.text());
}

/** The sum of the samples of `name` whose labels include `labels` (0 when there is none). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

describe('the listener', () => {
  test('GET /metrics on METRICS_PORT answers the process metrics and the service\'s own', async () => {
    assert.match(ctx.service.latchkey.metricsUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const samples = await scrape();
    const names = new Set(samples.map((s) => s.name));
    for (const name of ['process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'latchkey_gateways_connected', 'latchkey_webhook_deliveries_pending']) {
      assert.ok(names.has(name), `${name} in ${[...names].join(' ')}`);
    }
    const other = await fetch(ctx.service.latchkey.metricsUrl?.replace('/metrics', '/') ?? '');
    assert.equal(other.status, 404);
  });

  test('latchkey_build_info{version,node} is 1, labelled with package.json\'s version and the Node.js version', async () => {
    const { version } = JSON.parse(await readFile('package.json', 'utf8')) as { version: string };
    const info = (await scrape()).filter((s) => s.name === 'latchkey_build_info');
    assert.deepEqual(info, [{ name: 'latchkey_build_info', labels: { version, node: process.version }, value: 1 }]);
  });

  test('the sample Grafana dashboard queries only metrics the service exports', async () => {
    const dashboard = await readFile('deploy/grafana/latchkey.json', 'utf8');
    JSON.parse(dashboard);
    const used = new Set([...dashboard.matchAll(/\b(?:latchkey|nodejs|process)_[a-z0-9_]+/g)].map(([name]) => name.replace(/_(bucket|sum|count)$/, '')));
    // Every metric the registry holds is declared by a `# TYPE` line, with or without samples yet.
    const text = await (await fetch(ctx.service.latchkey.metricsUrl ?? '')).text();
    const exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map(([, name]) => name as string));
    // The pool's gauges exist on server PostgreSQL only.
    const postgresOnly = /^latchkey_database_pool_/;
    const missing = [...used].filter((name) => !exported.has(name) && !postgresOnly.test(name));
    assert.ok(used.size > 20);
    assert.deepEqual(missing, []);
  });

  test('an idle PostgreSQL pool has no statement waiting, though the scrape itself runs statements', { skip: backend !== 'postgres' && 'server PostgreSQL only' }, async () => {
    for (let i = 0; i < 3; i++) {
      const samples = await scrape();
      assert.ok(valueOf(samples, 'latchkey_database_pool_connections') >= 1);
      // Before, the scrape's own statements were counted: 2 on every scrape of an idle service.
      assert.equal(valueOf(samples, 'latchkey_database_pool_waiting_clients'), 0);
    }
  });

  test('/metrics is not on the API\'s port', async () => {
    const res = await ctx.service.request('GET', '/metrics');
    assert.equal(res.status, 404);
    assert.doesNotMatch(res.text, /latchkey_|process_/);
  });

  test('METRICS_PORT unset: no listener, nothing on the API\'s port either', async () => {
    const database = await createTestDatabase();
    const service = await startService(database.db, {}, undefined, undefined, 'inject');
    try {
      assert.equal(service.latchkey.metricsUrl, null);
      assert.equal((await service.request('GET', '/metrics')).status, 404);
    } finally {
      await service.close();
      await database.close();
    }
  });

  test('METRICS_PORT is validated like the other variables', () => {
    assert.equal(loadConfig({}).metricsPort, null);
    assert.equal(loadConfig({ METRICS_PORT: '9464' }).metricsPort, 9464);
    assert.equal(loadConfig({}).metricsHost, '127.0.0.1');
    assert.equal(loadConfig({ METRICS_HOST: '0.0.0.0' }).metricsHost, '0.0.0.0');
    for (const bad of ['x', '-1', '70000']) assert.throws(() => loadConfig({ METRICS_PORT: bad }), (e: unknown) => e instanceof ConfigError && e.variable === 'METRICS_PORT');
    assert.throws(() => loadConfig({ PORT: '9000', METRICS_PORT: '9000' }), /METRICS_PORT: must differ from PORT/);
  });
});

describe('HTTP requests', () => {
  test('a request moves the counter and the histogram of its route pattern, never its URL', async () => {
    const account = await createAccount(ctx.service);
    const lockId = await createLock(ctx.service, account.rootLocationId);
    const { token } = await createApiKey(ctx.service, account.rootLocationId, ['catalog:read']);
    const before = await scrape();
    const labels = { method: 'GET', route: '/v1/locks/:id', status: '200' };
    for (let i = 0; i < 3; i++) assert.equal((await ctx.service.request('GET', `/v1/locks/${lockId}?secret=x`, { token })).status, 200);
    assert.equal((await ctx.service.request('GET', '/v1/locks/987654321', { token })).status, 404);
    assert.equal((await ctx.service.request('GET', '/no/such/path')).status, 404);
    const after = await scrape();
    assert.equal(valueOf(after, 'latchkey_http_requests_total', labels) - valueOf(before, 'latchkey_http_requests_total', labels), 3);
    assert.equal(
      valueOf(after, 'latchkey_http_requests_total', { route: '/v1/locks/:id', status: '404' }) - valueOf(before, 'latchkey_http_requests_total', { route: '/v1/locks/:id', status: '404' }),
      1,
    );
    const count = { method: 'GET', route: '/v1/locks/:id' };
    assert.equal(valueOf(after, 'latchkey_http_request_duration_seconds_count', count) - valueOf(before, 'latchkey_http_request_duration_seconds_count', count), 4);
    assert.ok(valueOf(after, 'latchkey_http_request_duration_seconds_bucket', { ...count, le: '+Inf' }) >= 4);
    assert.equal(valueOf(after, 'latchkey_http_requests_total', { route: 'unmatched', status: '404' }) - valueOf(before, 'latchkey_http_requests_total', { route: 'unmatched', status: '404' }), 1);
    // Only patterns: no id, no query string, no unknown path is ever a label.
    const routes = new Set(after.filter((s) => s.name === 'latchkey_http_requests_total').map((s) => s.labels.route ?? ''));
    for (const route of routes) assert.doesNotMatch(route, /\d{3,}|\?|no\/such/, route);
  });

  test('each app counts in its own registry', async () => {
    const database = await createTestDatabase();
    const other = await startService(database.db, { METRICS_PORT: '0' }, undefined, undefined, 'inject');
    try {
      await ctx.service.request('GET', '/healthz');
      const samples = await scrape(other);
      assert.equal(valueOf(samples, 'latchkey_http_requests_total', { route: '/healthz' }), 0);
    } finally {
      await other.close();
      await database.close();
    }
  });
});

test('a rate-limit refusal moves its bucket\'s counter', async () => {
  const ip = freshIp();
  // The limits' windows are whole minutes of the service clock: 31 requests across a minute's end start afresh.
  await alignToMinuteStart(ctx.service);
  const before = await scrape();
  // 30 failed authentications a minute per IP; the next request is refused by the lock-out.
  for (let i = 0; i < 30; i++) assert.equal((await ctx.service.request('GET', '/v1/locks', { ip, token: `lk_wrong${i}` })).status, 401);
  assert.equal((await ctx.service.request('GET', '/v1/locks', { ip, token: 'lk_wrong' })).status, 429);
  const after = await scrape();
  const refused = (samples: typeof before) => valueOf(samples, 'latchkey_rate_limit_refusals_total', { bucket: 'auth-failed' });
  assert.equal(refused(after) - refused(before), 1);
  assert.equal(valueOf(after, 'latchkey_http_requests_total', { route: '/v1/locks', status: '429' }) - valueOf(before, 'latchkey_http_requests_total', { route: '/v1/locks', status: '429' }), 1);
});

test('a webhook delivery shows as pending, then moves the delivered counter and the attempt histogram', async () => {
  const account = await createAccount(ctx.service);
  const user = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops', email: `ops${account.id}@example.com` });
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['webhooks:manage', 'people:write'], { created_by_user_id: user.body.id });
  assert.equal((await ctx.service.request('POST', '/v1/webhooks', { token, body: { url: receiver.url('/metrics-test'), events: ['person.created'] } })).status, 201);
  const before = await scrape();
  assert.equal((await ctx.service.request('POST', '/v1/people', { token, body: { name: 'Ada' } })).status, 201);
  const waiting = await scrape();
  assert.equal(valueOf(waiting, 'latchkey_webhook_deliveries_pending'), 1);
  assert.ok(valueOf(waiting, 'latchkey_webhook_oldest_pending_age_seconds') >= 0);
  await advanceClock(ctx.service, 0); // runs the jobs, the dispatcher among them
  assert.equal(receiver.received.filter((r) => r.path === '/metrics-test').length, 1);
  const after = await scrape();
  const delivered = (samples: typeof before) => valueOf(samples, 'latchkey_webhook_delivery_attempts_total', { outcome: 'delivered' });
  assert.equal(delivered(after) - delivered(before), 1);
  assert.equal(valueOf(after, 'latchkey_webhook_attempt_duration_seconds_count') - valueOf(before, 'latchkey_webhook_attempt_duration_seconds_count'), 1);
  assert.equal(valueOf(after, 'latchkey_webhook_deliveries_pending'), 0);
  assert.equal(valueOf(after, 'latchkey_webhook_oldest_pending_age_seconds'), 0);
});

test('door events move received, stored, dropped, batch size and lag; the gateway counts as connected', async () => {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lockId = await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
  const before = await scrape();
  const client = await connect(gateway);
  const event = JSON.stringify({ id: randomUUID(), lock_id: lockId, type: 'door.closed', occurred_at: new Date().toISOString(), key_id: null, reason: null });
  // QoS 1: the broker acknowledges once the event is committed.
  await client.publishAsync(gatewayTopic(gateway, 'events'), event, { qos: 1 });
  await client.publishAsync(gatewayTopic(gateway, 'events'), event, { qos: 1 }); // a repeat
  await client.publishAsync(gatewayTopic(gateway, 'events'), JSON.stringify({ id: 'x', type: 'nonsense' }), { qos: 1 });
  const after = await scrape();
  const delta = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels);
  assert.equal(delta('latchkey_door_events_received_total'), 2);
  assert.equal(delta('latchkey_door_events_stored_total'), 1);
  assert.equal(delta('latchkey_door_events_dropped_total', { reason: 'not_stored' }), 1);
  assert.equal(delta('latchkey_door_events_dropped_total', { reason: 'malformed' }), 1);
  assert.equal(delta('latchkey_door_event_batch_size_count'), 2);
  assert.equal(delta('latchkey_door_event_ingestion_lag_seconds_count'), 2);
  assert.equal(valueOf(after, 'latchkey_gateways_connected'), 1);
  await client.endAsync();
});

describe('database errors', () => {
  let database: TestDatabase;
  let service: TestService;
  const state = { down: false };
  before(async () => {
    database = await createTestDatabase();
    const faulty = withFaults(database.db, () =>
      state.down ? databaseError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), '', true) : undefined,
    );
    service = await startService(faulty, { METRICS_PORT: '0' }, undefined, undefined, 'inject');
  });
  after(async () => {
    await service?.close();
    await database?.close();
  });

  test('a statement that fails for want of the database moves the query-error counter once', async () => {
    const before = await scrape(service);
    state.down = true;
    const answer = await service.admin('GET', '/admin/v1/accounts');
    state.down = false;
    assert.equal(answer.status, 503);
    const after = await scrape(service);
    const errors = (samples: Sample[], kind: string) => valueOf(samples, 'latchkey_database_query_errors_total', { kind });
    assert.equal(errors(after, 'unavailable') - errors(before, 'unavailable'), 1);
    assert.equal(errors(after, 'statement') - errors(before, 'statement'), 0);
  });
});
