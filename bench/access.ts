// Access decisions (issue 22), this process playing the gateways over MQTT with their real credentials:
// (a) online decisions, 10 gateways asking about known credentials at a steady rate, round trip publish →
// `access/answer`, and every decision counted in the access log; (b) revocations reaching an online gateway
// that holds 10,000 credentials, one at a time, request → the `access/list` change naming the key; (c) a full
// list of 100,000 credentials, `access/sync {version: 0}` → its last part received and parsed. Keys are
// inserted with SQL (people + keys, credential_hash and credential_box made as the service makes them, under a
// WEBHOOK_SECRET_KEY the bench sets), then a security group's windows are changed so the service builds the
// lists, which is timed too. On PostgreSQL (embedded broker or an external one) and on embedded PGlite, where
// the service is stopped while this process writes the keys into its data directory.
import { randomUUID } from 'node:crypto';
import mqtt from 'mqtt';
import pg from 'pg';
import { credentialDigest } from '../src/modules/access/credentials.ts';
import { gatewayTopicPrefix } from '../src/modules/devices/topics.ts';
import { openPglite } from '../src/platform/db/pglite.ts';
import { SecretBox } from '../src/platform/secret-box.ts';
import type { ServiceProcess } from '../test/helpers/process.ts';
import { freePort } from '../test/helpers/mosquitto.ts';
import { admin, percentile, pin, PINNED, startBenchService, stop, until } from './common.ts';
import { DOOR_EVENTS_PER_SECOND, LOG_ROWS, liveTraffic, seedLog, WRITES_PER_SECOND } from './live-site.ts';
import { seed } from './reads.ts';

/** The server key of the bench's services (base64 of 32 bytes): the bench seals and digests credentials under it. */
const SECRET_KEY = Buffer.alloc(32, 0x5a).toString('base64');
const DECISION_GATEWAYS = 10;
const DECISION_RATE = Number(process.env.BENCH_ACCESS_RATE ?? 1000);
const DECISION_SECONDS = Number(process.env.BENCH_ACCESS_SECONDS ?? 10);
const DECISION_KEYS = 1000;
const REVOCATION_KEYS = 10_000;
const REVOCATIONS = Number(process.env.BENCH_ACCESS_REVOCATIONS ?? 200);
const FULL_KEYS = Number(process.env.BENCH_ACCESS_FULL_KEYS ?? 100_000);
const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

export interface AccessFigures {
  label: string;
  decisions: { rate: number; seconds: number; sent: number; answered: number; p50: number; p99: number; logged: number; loggedDistinct: number };
  revocations: { holding: number; count: number; fromRequestP50: number; fromRequestP99: number; fromAnswerP50: number; fromAnswerP99: number; httpP50: number };
  /** The list rebuilt after the keys were written (PATCH of the group's windows: HTTP call, one transaction). */
  rebuild: { keys: number; answerMs: number; ms: number }[];
  full: { keys: number; ms: number; parts: number; bytes: number; entries: number } | null;
  /** The live site's load beside the measures (options.liveLoad), as it went; null without. */
  live: { doorEventsPerSecond: number; changesPerSecond: number; failedChanges: number } | null;
}

interface GatewayCreds {
  id: number;
  mqtt: { url: string; client_id: string; username: string; password: string };
}

interface ListMessage {
  type: 'full' | 'changes';
  version: number;
  part: number;
  parts: number;
  entries: Array<{ key_id: number }>;
  removed: number[];
}

type Sql = (text: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Where the service keeps its data, and how this process writes to it (PGlite: only while the service is stopped). */
type Target = { kind: 'postgres'; url: string } | { kind: 'embedded'; dataDir: string };

async function withSql<T>(target: Target, fn: (sql: Sql) => Promise<T>): Promise<T> {
  if (target.kind === 'postgres') {
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    try {
      return await fn(async (text, params) => (await client.query(text, params)).rows as Array<Record<string, unknown>>);
    } finally {
      await client.end();
    }
  }
  const db = await openPglite({ dataDir: `${target.dataDir}/pg` });
  try {
    return await fn((text, params) => db.query(text, params ?? []));
  } finally {
    await db.close();
  }
}

/** `count` people with a card each, in the account's root, in group `staff`; returns the keys' ids and credentials. */
async function seedKeys(sql: Sql, box: SecretBox, lookupKey: string, accountId: number, locationId: number, prefix: number, count: number): Promise<Array<{ id: number; credential: string }>> {
  const out: Array<{ id: number; credential: string }> = [];
  const batch = 5000;
  for (let start = 0; start < count; start += batch) {
    const n = Math.min(batch, count - start);
    const people: string[] = [];
    const names: string[] = [];
    const credentials: string[] = [];
    const hashes: string[] = [];
    const boxes: string[] = [];
    for (let i = start; i < start + n; i++) {
      // uid: 7 bytes, the account's prefix then the number: unique in the whole bench.
      const credential = `uid:${prefix.toString(16).padStart(2, '0')}${i.toString(16).padStart(12, '0')}`;
      people.push(randomUUID());
      names.push(`Bench Person ${prefix}-${i}`);
      credentials.push(credential);
      hashes.push(credentialDigest(lookupKey, credential));
      boxes.push(box.seal(credential));
    }
    await sql(
      `INSERT INTO people (id, account_id, location_id, name, created_at, updated_at)
       SELECT t.id, $2, $3, t.name, now(), now() FROM unnest($1::uuid[], $4::text[]) AS t (id, name)`,
      [people, accountId, locationId, names],
    );
    const rows = await sql(
      `INSERT INTO keys (account_id, person_id, type, name, state, security_groups, starts_at, created_at, updated_at, credential_hash, credential_box)
       SELECT $1, t.person, 'card', 'Badge', 'handed_over', ARRAY['staff'], now() - interval '1 day', now(), now(), t.hash, t.box
         FROM unnest($2::uuid[], $3::text[], $4::text[]) AS t (person, hash, box)
       RETURNING id, credential_hash`,
      [accountId, people, hashes, boxes],
    );
    const byHash = new Map(hashes.map((hash, i) => [hash, credentials[i] as string]));
    for (const row of rows) out.push({ id: Number(row.id), credential: byHash.get(row.credential_hash as string) as string });
  }
  return out;
}

/** A gateway as a device: subscribed to its answers and list messages, applying each list message it gets. */
async function gatewayClient(gateway: GatewayCreds, onList: (message: ListMessage, bytes: number, at: number) => void, onAnswer?: (id: string, at: number) => void) {
  const client = await mqtt.connectAsync(gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
    clientId: gateway.mqtt.client_id,
    username: gateway.mqtt.username,
    password: gateway.mqtt.password,
    reconnectPeriod: 0,
  });
  (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
  const base = gatewayTopicPrefix(gateway.id);
  client.on('message', (topic, payload) => {
    const at = performance.now();
    if (topic === `${base}access/answer`) {
      onAnswer?.((JSON.parse(payload.toString()) as { id: string }).id, at);
      return;
    }
    if (topic !== `${base}access/list`) return;
    const message = JSON.parse(payload.toString()) as ListMessage;
    onList(message, payload.length, performance.now());
    // A real gateway applies the version once it has every part.
    if (message.part === message.parts) void client.publishAsync(`${base}access/applied`, JSON.stringify({ version: message.version }), { qos: 1 }).catch(() => undefined);
  });
  await client.subscribeAsync([`${base}access/answer`, `${base}access/list`], { qos: 1 });
  await client.publishAsync(`${base}presence`, '{"online":true}', { qos: 1, retain: true });
  return { client, base };
}

async function site(url: string, name: string, gateways: number) {
  const account = await admin<{ id: number; root_location: { id: number } }>(url, 'POST', '/admin/v1/accounts', { name });
  const root = account.root_location.id;
  const group = await admin<{ id: number }>(url, 'POST', '/admin/v1/security_groups', { location_id: root, code: 'staff', title: 'Staff' });
  const list: Array<GatewayCreds & { lock: number }> = [];
  for (let g = 0; g < gateways; g++) {
    const gateway = await admin<GatewayCreds>(url, 'POST', '/admin/v1/gateways', { location_id: root, name: `${name} gw ${g}` });
    const lock = await admin<{ id: number }>(url, 'POST', '/admin/v1/locks', { location_id: root, name: `Door ${g}`, gateway_id: gateway.id, security_groups: ['staff'] });
    list.push({ ...gateway, lock: lock.id });
  }
  return { accountId: account.id, root, group: group.id, gateways: list };
}

/**
 * Changes the group's windows (every day, all day, then back): the account's lists are built again, after the
 * answer and in parts. Returns the call's time and the time until the gateway no longer says `rebuilding`.
 */
async function rebuild(url: string, groupId: number, gatewayId: number, round: number): Promise<{ answerMs: number; ms: number }> {
  const started = performance.now();
  await admin(url, 'PATCH', `/admin/v1/security_groups/${groupId}`, { windows: round % 2 === 0 ? [{ days: ALL_DAYS, start: '00:00', end: '24:00' }] : null });
  const answerMs = Math.round(performance.now() - started);
  for (;;) {
    const gateway = await admin<{ access_list: { rebuilding: boolean } }>(url, 'GET', `/admin/v1/gateways/${gatewayId}`);
    if (!gateway.access_list.rebuilding) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { answerMs, ms: Math.round(performance.now() - started) };
}

/**
 * One run of the three measures. `target` says where the data is; `mqttUrl` an external broker (PostgreSQL
 * only). `fullList`: whether (c) runs (its 100,000 keys are written either way only when it does). `liveLoad`
 * (issue 25): from the first decision to the last list, another account of the same service carries a live
 * site's load, its gateway reporting 200 door events a second and its people and keys changing 4 times a second,
 * its log holding 20,000 events first.
 */
export async function accessRuns(
  label: string,
  target: Target,
  mqttUrl?: string,
  options: { fullList?: boolean; liveLoad?: boolean; log?: (line: string) => void } = {},
): Promise<AccessFigures> {
  const log = options.log ?? (() => undefined);
  const fullList = options.fullList ?? true;
  const box = new SecretBox(Buffer.from(SECRET_KEY, 'base64'));
  const lookupKey = box.derive('latchkey credential lookup v1');
  const mqttPort = String(await freePort());
  const env = {
    ...(target.kind === 'postgres' ? { DATABASE_URL: target.url } : { DATA_DIR: target.dataDir }),
    SANDBOX: 'false',
    WEBHOOK_SECRET_KEY: SECRET_KEY,
    // Building the lists of 100,000 keys is one transaction whose statements can pass the default 10 s on this
    // shared machine (a 503 from the PATCH); the bench gives them a minute and reports how long it took.
    DATABASE_TIMEOUT_SECONDS: '60',
    // A fixed port: the gateways' address stays the same when the embedded service is restarted.
    MQTT_PORT: mqttPort,
    // The decisions are asked at DECISION_RATE over DECISION_GATEWAYS gateways (100 a second each by default), a
    // load to measure, above what one gateway is let ask by default (50): the limit is not what is measured here.
    GATEWAY_ACCESS_REQUESTS_PER_SECOND: String(Math.max(50, DECISION_RATE)),
    ...(mqttUrl ? { MQTT_URL: mqttUrl } : {}),
  };
  let server: ServiceProcess | null = await startBenchService(env);
  const clients: mqtt.MqttClient[] = [];
  try {
    const decisionSite = await site(server.url, `Decisions ${label}`, DECISION_GATEWAYS);
    const revocationSite = await site(server.url, `Revocations ${label}`, 1);
    const fullSite = fullList ? await site(server.url, `Full list ${label}`, 1) : null;
    const apiKey = await admin<{ token: string }>(server.url, 'POST', '/admin/v1/api_keys', { location_id: revocationSite.root, name: 'bench', scopes: ['keys:read', 'keys:write'] });

    log(`  writing ${DECISION_KEYS + REVOCATION_KEYS + (fullList ? FULL_KEYS : 0)} keys with SQL …`);
    if (target.kind === 'embedded') {
      await stop(server);
      server = null;
    }
    const seeded = await withSql(target, async (sql) => ({
      decision: await seedKeys(sql, box, lookupKey, decisionSite.accountId, decisionSite.root, 1, DECISION_KEYS),
      revocation: await seedKeys(sql, box, lookupKey, revocationSite.accountId, revocationSite.root, 2, REVOCATION_KEYS),
      full: fullSite ? await seedKeys(sql, box, lookupKey, fullSite.accountId, fullSite.root, 3, FULL_KEYS) : [],
    }));
    if (!server) server = await startBenchService(env);
    const pid = server.child.pid as number;
    let traffic: Awaited<ReturnType<typeof liveTraffic>> | null = null;
    if (options.liveLoad) {
      log(`  a live site beside: ${LOG_ROWS} door events first, then ${DOOR_EVENTS_PER_SECOND} a second and ${WRITES_PER_SECOND} changes of people and keys a second …`);
      const liveSite = await seed(server.url);
      await seedLog(liveSite, LOG_ROWS);
      traffic = await liveTraffic(server.url, liveSite);
    }
    if (PINNED) {
      pin(pid, 0);
      pin(process.pid, 1);
    }

    // (a) Online decisions: 10 gateways, DECISION_RATE requests a second in all, spread in 5 ms ticks.
    log(`  ${DECISION_RATE} decisions/s from ${DECISION_GATEWAYS} gateways for ${DECISION_SECONDS} s …`);
    const publishedAt = new Map<string, number>();
    const answeredAt = new Map<string, number>();
    const doors: Array<{ client: mqtt.MqttClient; base: string; gateway: GatewayCreds & { lock: number } }> = [];
    for (const gateway of decisionSite.gateways) {
      const door = await gatewayClient(gateway, () => undefined, (id, at) => {
        if (!answeredAt.has(id)) answeredAt.set(id, at);
      });
      clients.push(door.client);
      doors.push({ ...door, gateway });
    }
    const acks: Array<Promise<unknown>> = [];
    const ask = (round: string, i: number) => {
      const door = doors[i % doors.length] as (typeof doors)[number];
      const id = `${round}-${door.gateway.id}-${i}`;
      const credential = (seeded.decision[(i * 7) % seeded.decision.length] as { credential: string }).credential;
      publishedAt.set(id, performance.now());
      // A request not acknowledged when the clients end (the service did not keep up) must not end this process.
      acks.push(door.client.publishAsync(`${door.base}access/request`, JSON.stringify({ id, lock_id: door.gateway.lock, credential }), { qos: 1 }).catch(() => undefined));
    };
    const paced = async (round: string, seconds: number): Promise<number> => {
      const started = performance.now();
      let sent = 0;
      while (sent < DECISION_RATE * seconds) {
        const due = Math.min(DECISION_RATE * seconds, Math.floor(((performance.now() - started) / 1000) * DECISION_RATE));
        for (; sent < due; sent++) ask(round, sent);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return sent;
    };
    const progress = process.env.BENCH_ACCESS_DEBUG ? setInterval(() => log(`    answers ${answeredAt.size} / ${publishedAt.size}`), 2000) : null;
    await paced('warm', 2); // the service's first requests (facts loaded, statements prepared) are not measured
    const warm = publishedAt.size;
    await until(() => answeredAt.size >= warm, 30_000);
    if (answeredAt.size < warm) log(`  only ${answeredAt.size} of ${warm} warm-up requests answered`);
    publishedAt.clear();
    answeredAt.clear();
    const sent = await paced('run', DECISION_SECONDS);
    await until(() => answeredAt.size >= sent, 60_000);
    if (progress) clearInterval(progress);
    if (answeredAt.size < sent) log(`  only ${answeredAt.size} of ${sent} answered; the service said:\n${server.output().slice(-3000)}`);
    await Promise.race([Promise.all(acks), new Promise((resolve) => setTimeout(resolve, 60_000))]); // each request is acknowledged once its decision is committed
    const roundTrips = [...publishedAt].map(([id, at]) => (answeredAt.get(id) ?? Infinity) - at).sort((a, b) => a - b);
    const answered = roundTrips.filter(Number.isFinite).length;

    // (b) Revocations at a gateway holding 10,000 credentials: its list is built, sent whole and applied first.
    log(`  revocations at a gateway holding ${REVOCATION_KEYS} credentials …`);
    const revoked = new Map<number, number>();
    let lastVersion = 0;
    let appliedFull = false;
    const revocationGateway = revocationSite.gateways[0] as GatewayCreds & { lock: number };
    const holder = await gatewayClient(revocationGateway, (message, _bytes, at) => {
      lastVersion = message.version;
      if (message.type === 'full' && message.part === message.parts) appliedFull = true;
      if (message.type === 'changes') for (const id of message.removed) if (!revoked.has(id)) revoked.set(id, at);
    });
    clients.push(holder.client);
    const rebuilds: AccessFigures['rebuild'] = [];
    rebuilds.push({ keys: REVOCATION_KEYS, ...(await rebuild(server.url, revocationSite.group, revocationGateway.id, 0)) });
    // The service pushes changes only to a gateway that holds a list: this one asks for its first, as a gateway does.
    await holder.client.publishAsync(`${holder.base}access/sync`, JSON.stringify({ version: 0 }), { qos: 1 });
    await until(() => appliedFull, 60_000);
    if (!appliedFull) throw new Error('the revocation gateway never got its full list');
    await new Promise((resolve) => setTimeout(resolve, 500)); // its access/applied is recorded
    const fromRequest: number[] = [];
    const fromAnswer: number[] = [];
    const http: number[] = [];
    for (let i = 0; i < REVOCATIONS + 10; i++) {
      const key = seeded.revocation[i] as { id: number };
      const started = performance.now();
      const res = await fetch(`${server.url}/v1/keys/${key.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${apiKey.token}` } });
      const answeredAtMs = performance.now();
      if (!res.ok) throw new Error(`DELETE /v1/keys/${key.id}: ${res.status} ${await res.text()}`);
      await until(() => revoked.has(key.id), 10_000);
      const arrived = revoked.get(key.id) ?? Infinity;
      if (i < 10) continue; // warm-up
      fromRequest.push(arrived - started);
      fromAnswer.push(arrived - answeredAtMs);
      http.push(answeredAtMs - started);
    }
    for (const list of [fromRequest, fromAnswer, http]) list.sort((a, b) => a - b);
    log(`  (list version ${lastVersion} at the end)`);

    // (c) The full list: built (timed), pushed and applied; then asked for again from version 0 (timed).
    let full: AccessFigures['full'] = null;
    if (fullSite) {
      log(`  a full list of ${FULL_KEYS} credentials …`);
      let parts = 0;
      let bytes = 0;
      let entries = 0;
      let lastAt = 0;
      let complete = false;
      const fullGateway = fullSite.gateways[0] as GatewayCreds & { lock: number };
      const receiver = await gatewayClient(fullGateway, (message, size, at) => {
        if (message.type !== 'full') return;
        parts++;
        bytes += size;
        entries += message.entries.length;
        if (message.part === message.parts) {
          lastAt = at;
          complete = true;
        }
      });
      clients.push(receiver.client);
      rebuilds.push({ keys: FULL_KEYS, ...(await rebuild(server.url, fullSite.group, fullGateway.id, 0)) });
      await receiver.client.publishAsync(`${receiver.base}access/sync`, JSON.stringify({ version: 0 }), { qos: 1 });
      await until(() => complete, 120_000);
      // Applied, and nothing else on its way (a push again of the same list while its access/applied was on its way).
      let heard = parts;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 2000));
        if (parts === heard) break;
        heard = parts;
      }
      parts = bytes = entries = 0;
      complete = false;
      const started = performance.now();
      await receiver.client.publishAsync(`${receiver.base}access/sync`, JSON.stringify({ version: 0 }), { qos: 1 });
      await until(() => complete, 120_000);
      if (!complete) throw new Error('the full list never arrived');
      full = { keys: FULL_KEYS, ms: Math.round(lastAt - started), parts, bytes, entries };
    }
    if (PINNED) pin(process.pid, '0-1');
    const background = await traffic?.stop();

    // Every decision of the measured run in the access log once (the warm-up's are there too).
    const liveServer = server;
    if (target.kind === 'embedded') {
      for (const c of clients.splice(0)) await c.endAsync(true);
      await stop(liveServer);
      server = null;
    }
    const [counted] = await withSql(target, (sql) =>
      sql(
        `SELECT count(*)::int AS n, count(DISTINCT (gateway_id, gateway_event_id))::int AS d FROM access_events
          WHERE gateway_event_id LIKE 'request:run-%' AND gateway_id = ANY($1::bigint[])`,
        [decisionSite.gateways.map((g) => g.id)],
      ),
    );
    const round = (n: number) => Math.round(n * 10) / 10;
    return {
      label,
      decisions: {
        rate: DECISION_RATE,
        seconds: DECISION_SECONDS,
        sent,
        answered,
        p50: round(percentile(roundTrips, 50)),
        p99: round(percentile(roundTrips, 99)),
        logged: Number(counted?.n),
        loggedDistinct: Number(counted?.d),
      },
      revocations: {
        holding: REVOCATION_KEYS,
        count: fromRequest.length,
        fromRequestP50: Math.round(percentile(fromRequest, 50)),
        fromRequestP99: Math.round(percentile(fromRequest, 99)),
        fromAnswerP50: Math.round(percentile(fromAnswer, 50)),
        fromAnswerP99: Math.round(percentile(fromAnswer, 99)),
        httpP50: Math.round(percentile(http, 50)),
      },
      rebuild: rebuilds,
      full,
      live: background ? { doorEventsPerSecond: Math.round(background.events / background.seconds), changesPerSecond: Math.round((background.writes / background.seconds) * 10) / 10, failedChanges: background.failedWrites } : null,
    };
  } finally {
    if (PINNED) pin(process.pid, '0-1');
    for (const c of clients) await c.endAsync(true);
    if (server) await stop(server);
  }
}

export function formatAccess(runs: AccessFigures[]): string {
  const cell = (f: (r: AccessFigures) => string) => runs.map(f).join(' | ');
  const first = runs[0] as AccessFigures;
  const fullRun = runs.find((r) => r.full !== null)?.full;
  return [
    `| measure | ${runs.map((r) => r.label).join(' | ')} | target |`,
    `|---|${runs.map(() => '---:').join('|')}|---|`,
    ...(runs.some((r) => r.live)
      ? [`| live load meanwhile (another account): door events published a second / changes of people and keys a second / changes refused | ${cell((r) => (r.live ? `${r.live.doorEventsPerSecond} / ${r.live.changesPerSecond} / ${r.live.failedChanges}` : 'none'))} | – |`]
      : []),
    `| online decisions at ${first.decisions.rate}/s from ${DECISION_GATEWAYS} gateways for ${first.decisions.seconds} s: answered / sent | ${cell((r) => `${r.decisions.answered} / ${r.decisions.sent}`)} | all |`,
    `| decision round trip (publish → \`access/answer\`), p50 | ${cell((r) => `${r.decisions.p50} ms`)} | – |`,
    `| decision round trip, p99 | ${cell((r) => `${r.decisions.p99} ms`)} | < 25 ms |`,
    `| decisions in the access log (rows / distinct) | ${cell((r) => `${r.decisions.logged} / ${r.decisions.loggedDistinct}`)} | each once |`,
    `| revocation (DELETE /v1/keys/{id}) → \`access/list\` change at a gateway holding ${first.revocations.holding.toLocaleString('en')} credentials, from the request, p50 (${first.revocations.count} revocations, one at a time) | ${cell((r) => `${r.revocations.fromRequestP50} ms`)} | – |`,
    `| revocation, from the request, p99 | ${cell((r) => `${r.revocations.fromRequestP99} ms`)} | < 1 s |`,
    `| revocation, from the HTTP answer, p50 / p99 (negative: the change arrived first) | ${cell((r) => `${r.revocations.fromAnswerP50} / ${r.revocations.fromAnswerP99} ms`)} | – |`,
    `| the DELETE call itself, p50 | ${cell((r) => `${r.revocations.httpP50} ms`)} | – |`,
    ...first.rebuild.flatMap((_, i) => [
      `| lists built again after the keys were written (PATCH of the group's windows → the gateway no longer \`rebuilding\`), ${(first.rebuild[i] as { keys: number }).keys.toLocaleString('en')} keys | ${cell((r) => (r.rebuild[i] ? `${(r.rebuild[i] as { ms: number }).ms} ms` : '–'))} | – |`,
      `| … the PATCH call itself, ${(first.rebuild[i] as { keys: number }).keys.toLocaleString('en')} keys | ${cell((r) => (r.rebuild[i] ? `${(r.rebuild[i] as { answerMs: number }).answerMs} ms` : '–'))} | – |`,
    ]),
    ...(fullRun
      ? [
          `| full list of ${fullRun.keys.toLocaleString('en')} credentials, \`access/sync {version: 0}\` → last part received and parsed | ${cell((r) => (r.full ? `${r.full.ms} ms` : '–'))} | < 10 s |`,
          `| its parts / bytes / entries | ${cell((r) => (r.full ? `${r.full.parts} / ${(r.full.bytes / 2 ** 20).toFixed(1)} MiB / ${r.full.entries}` : '–'))} | – |`,
        ]
      : []),
  ].join('\n');
}

/** How the access figures are made, for bench/RESULTS.md. */
export const ACCESS_NOTES = [
  'This process plays the gateways over MQTT with their real credentials (QoS 1), the service pinned to core 0 and',
  'this process to core 1 in pinned mode (PostgreSQL and Mosquitto are not pinned). Keys are written with SQL',
  '(a person and a card each, credential_hash and credential_box made as the service makes them, under the',
  "bench's WEBHOOK_SECRET_KEY); a PATCH of the security group's windows then makes the service build the lists",
  '(timed: the HTTP call, one transaction). (a) 10 gateways, one door each, ask about known credentials at a',
  'steady rate in 5 ms ticks after a 2 s warm-up; the round trip is publish to `access/answer`; the access log is',
  "then counted (`gateway_event_id LIKE 'request:%'`). (b) One gateway holding the 10,000 credentials got its list",
  'whole and applied it; keys are revoked one at a time (DELETE /v1/keys/{id}, an API key) after 10 of warm-up,',
  'each timed to the `access/list` change naming it (the gateway applies every message). (c) A gateway that',
  'applied its 100,000-entry list asks `access/sync {"version": 0}`; timed to its last part received and parsed',
  '(`MQTT_MAX_PACKET_BYTES` 64 KiB). On PGlite the service is stopped while the keys are written into its data',
  'directory, and again to count the log.',
].join('\n');
