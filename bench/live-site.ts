// A live site (issue 25): the lists clients poll, read while doors are busy. One gateway reports 200 door
// events a second over MQTT (QoS 1) and people and keys change a few times a second through the public API,
// all through the run; meanwhile the reads are measured like the reads section (50 connections, the service
// pinned to core 0, this process on core 1): the first page of GET /v1/events, a poller at the tail of the
// log (each connection re-reads its cursor until the page fills, then follows next_cursor, as the spec tells
// clients to), pollers of one door each (lock_id, 50 doors), and the first pages of locks, people and keys. Bare
// Fastify runs in the same section.
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import mqtt from 'mqtt';
import type autocannon from 'autocannon';
import { gatewayTopicPrefix } from '../src/modules/devices/topics.ts';
import { startServiceProcess, type ServiceProcess } from '../test/helpers/process.ts';
import { oneRun, percentile, pin, PINNED, RUNS, SECONDS, startBenchService, stop, summarize, warmUp, type Measured, type OneRun } from './common.ts';
import { seed, type Seeded } from './reads.ts';

/** Door events a second the gateway reports during the reads. */
export const DOOR_EVENTS_PER_SECOND = 200;
/** Changes of people and keys a second (half each) during the reads. */
export const WRITES_PER_SECOND = 4;

/** A read's runs, each set against a run of bare Fastify made just before it (pairedLoad). */
export interface PairedMeasure extends Measured {
  /** Bare Fastify's requests/s in the run before each of the read's runs, in order. */
  bareRuns: number[];
  /** Each run's requests/s over the bare run before it, in order. */
  shares: number[];
}

export interface LiveSiteFigures {
  label: string;
  reads: PairedMeasure[];
  /** Each read's body as the service sent it before the run (the tail pollers': the first page's), for a bare route to serve. */
  bodies: string[];
  /** Door events stored a second during the reads (counted from the log at the end), and changes made. */
  eventsPerSecond: number;
  writesPerSecond: number;
  /** Writes the API refused (should be none). */
  failedWrites: number;
}

/** Door events in the log before the reads begin. */
export const LOG_ROWS = 20_000;

/** Publishes `n` door events from the site's gateway as fast as the broker takes them, and waits until all are stored. */
export async function seedLog(site: Seeded, n: number): Promise<void> {
  const gateway = await mqtt.connectAsync(site.gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
    clientId: site.gateway.mqtt.client_id,
    username: site.gateway.mqtt.username,
    password: site.gateway.mqtt.password,
  });
  try {
    const topic = `${gatewayTopicPrefix(site.gateway.id)}events`;
    const at = Date.now() - n * 1000;
    for (let i = 0; i < n; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, n - i) }, (_, j) => {
          const k = i + j;
          const event = { id: `log-${k}`, lock_id: site.locks[k % site.locks.length], type: k % 7 === 0 ? 'door.closed' : 'access.granted', occurred_at: new Date(at + k * 1000).toISOString(), key_id: site.cards[k % site.cards.length], reason: null };
          return gateway.publishAsync(topic, JSON.stringify(event), { qos: 1 });
        }),
      );
    }
  } finally {
    await gateway.endAsync();
  }
}

export interface LiveTraffic {
  /** Stops the door events and the changes until resume (bare Fastify's runs beside the reads). */
  pause(): void;
  resume(): void;
  /** Seconds the traffic has run so far, pauses left out. */
  activeSeconds(): number;
  stop(): Promise<{ events: number; writes: number; failedWrites: number; seconds: number }>;
}

/** The background of a live site: door events from the gateway and changes of people and keys, until stopped. */
export async function liveTraffic(url: string, site: Seeded): Promise<LiveTraffic> {
  const gateway = await mqtt.connectAsync(site.gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
    clientId: site.gateway.mqtt.client_id,
    username: site.gateway.mqtt.username,
    password: site.gateway.mqtt.password,
  });
  const started = performance.now();
  let events = 0;
  let writes = 0;
  let failedWrites = 0;
  let pausedAt: number | null = null;
  let pausedMs = 0;
  const tick = 50; // ms: 10 events a tick at 200/s
  const perTick = (DOOR_EVENTS_PER_SECOND * tick) / 1000;
  const doors = setInterval(() => {
    if (pausedAt !== null) return;
    for (let i = 0; i < perTick; i++) {
      const n = events++;
      const lock = site.locks[n % site.locks.length];
      const event = { id: `live-${n}`, lock_id: lock, type: 'access.granted', occurred_at: new Date().toISOString(), key_id: site.cards[n % site.cards.length], reason: null };
      void gateway.publishAsync(`${gatewayTopicPrefix(site.gateway.id)}events`, JSON.stringify(event), { qos: 1 }).catch(() => undefined);
    }
  }, tick);
  const headers = { authorization: `Bearer ${site.token}`, 'content-type': 'application/json' };
  const changes = setInterval(() => {
    if (pausedAt !== null) return;
    const n = writes++;
    const change =
      n % 2 === 0
        ? fetch(`${url}/v1/people/${site.people[n % site.people.length]}`, { method: 'PUT', headers, body: JSON.stringify({ name: `Person ${n}` }) })
        : fetch(`${url}/v1/keys/${site.cards[n % site.cards.length]}`, { method: 'PATCH', headers, body: JSON.stringify({ name: `Badge ${n}` }) });
    void change.then(
      async (res) => {
        if (!res.ok) failedWrites++;
        await res.arrayBuffer();
      },
      () => failedWrites++,
    );
  }, 1000 / WRITES_PER_SECOND);
  const activeSeconds = () => (performance.now() - started - pausedMs - (pausedAt === null ? 0 : performance.now() - pausedAt)) / 1000;
  return {
    pause() {
      pausedAt ??= performance.now();
    },
    resume() {
      if (pausedAt !== null) pausedMs += performance.now() - pausedAt;
      pausedAt = null;
    },
    activeSeconds,
    async stop() {
      clearInterval(doors);
      clearInterval(changes);
      await gateway.endAsync();
      return { events, writes, failedWrites, seconds: activeSeconds() };
    },
  };
}

/** The cursor of the log's tail: the last page's (the one without next_cursor), walked from the start. */
async function tailCursor(url: string, token: string): Promise<string | undefined> {
  let cursor: string | undefined;
  for (;;) {
    const res = await fetch(`${url}/v1/events?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: { authorization: `Bearer ${token}` } });
    const page = (await res.json()) as { data: Array<{ id: number }>; next_cursor: string | null };
    if (page.next_cursor === null) return cursor;
    cursor = page.next_cursor;
  }
}

/** The next_cursor of a page of GET /v1/events, read from the end of its text (the member comes last). */
function nextCursor(page: string): string | null {
  const member = page.lastIndexOf('"next_cursor":');
  if (member < 0) throw new Error(`not a page: ${page.slice(0, 200)}`);
  return JSON.parse(page.slice(member + '"next_cursor":'.length, -1)) as string | null;
}

/** The id a cursor of GET /v1/events stands for. */
const cursorId = (cursor: string): number => (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [number])[0];

/** How a read is measured: its name, URL and autocannon's options for it. */
type Measure = (name: string, url: string, more?: Partial<autocannon.Options>) => Promise<PairedMeasure>;

/** What the live-site section's bare route serves as "one lock's bytes". */
export const LOCK_BYTES = '{"id":31,"name":"Door 30","place":"Floor 1","location":{"id":1,"name":"Bench"},"online":false,"security_groups":["staff"]}';

/**
 * Each of a read's RUNS runs right after a run of bare Fastify (one lock's bytes, pinned like the service) made
 * with the traffic paused, and its share is taken against that run. This machine's speed moves up to twofold
 * between benches a few minutes apart (bench/RESULTS.md, 2026-11-28), so a ratio to a bare run made once, after
 * all the reads, carried that noise; pairs made seconds apart do not. The traffic resumes a second before the
 * read's run (the door events' backlog is none: ticks are skipped while paused, not queued).
 */
function pairedLoad(label: string, token: string, pid: number, traffic: LiveTraffic, bare: ServiceProcess): Measure {
  const bareUrl = `${bare.url}/v1/locks/1`;
  return async (name, url, more = {}) => {
    await warmUp(url, token, more);
    await warmUp(bareUrl, null);
    const runs: OneRun[] = [];
    const bareRuns: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      traffic.pause();
      await sleep(500); // the writes in flight end
      try {
        bareRuns.push(Math.round((await oneRun(bareUrl, null)).result.requests.average));
      } finally {
        traffic.resume();
      }
      await sleep(1000);
      runs.push(await oneRun(url, token, pid, more));
    }
    const shares = runs.map((run, i) => Math.round((run.result.requests.average / (bareRuns[i] as number)) * 100) / 100);
    return { ...summarize(`${label}: ${name}`, runs, pid), bareRuns, shares };
  };
}

/**
 * Pollers at the tail, CONNECTIONS of them, re-reading GET /v1/events?cursor=… and moving on to next_cursor when
 * the page is full; RUNS runs of SECONDS after a 2 s warm-up, the median run's figures. Driven by autocannon
 * like the other reads: each request is made from the furthest cursor any poller has been given (pollers
 * started together stay together; autocannon keeps no state of its own per connection across requests).
 * Until 2026-11-27 this was a loop of undici requests that parsed each page: it took this process's core at
 * about 6,000 polls a second, so the pollers measured themselves rather than the service.
 */
async function tailPollers(url: string, token: string, measure: Measure): Promise<PairedMeasure> {
  let cursor = await tailCursor(url, token);
  const requests = [
    {
      setupRequest: (req: autocannon.Request) => ({ ...req, path: `/v1/events?limit=50${cursor ? `&cursor=${cursor}` : ''}` }),
      onResponse: (status: number, body: string) => {
        const next = status === 200 ? nextCursor(body) : null;
        if (next !== null && (cursor === undefined || cursorId(next) > cursorId(cursor))) cursor = next;
      },
    },
  ];
  return measure('GET /v1/events at the tail (cursor pollers)', `${url}/v1/events`, { requests });
}

/** Doors the per-door pollers follow, each with its own filter (and so its own page at the end of its listing). */
export const POLLED_DOORS = 50;

/**
 * Pollers of one door each (GET /v1/events?lock_id=…), POLLED_DOORS of them, each following its own listing to
 * its end and re-reading it there, as a dashboard of doors would: every connection goes round the doors, a
 * cursor kept per door. Each door's end of the log is a page of its own, which every door event changed.
 */
async function doorPollers(url: string, locks: readonly number[], measure: Measure): Promise<PairedMeasure> {
  const cursors = new Map<number, string>();
  const requests = locks.slice(0, POLLED_DOORS).map((lock) => ({
    setupRequest: (req: autocannon.Request) => {
      const cursor = cursors.get(lock);
      return { ...req, path: `/v1/events?limit=50&lock_id=${lock}${cursor ? `&cursor=${cursor}` : ''}` };
    },
    onResponse: (status: number, body: string) => {
      const next = status === 200 ? nextCursor(body) : null;
      const cursor = cursors.get(lock);
      if (next !== null && (cursor === undefined || cursorId(next) > cursorId(cursor))) cursors.set(lock, next);
    },
  }));
  return measure(`GET /v1/events?lock_id=… at the tail, ${POLLED_DOORS} doors`, `${url}/v1/events`, { requests });
}

/**
 * The reads of a live site on one database (`env`: DATABASE_URL or DATA_DIR, and any other setting);
 * `settled` waits for the planner's statistics after the log is seeded.
 */
export async function liveSiteRuns(label: string, env: Record<string, string>, settled: () => Promise<void>): Promise<LiveSiteFigures> {
  const server = await startBenchService({ SANDBOX: 'false', ...env });
  const pid = server.child.pid as number;
  let bare: ServiceProcess | undefined;
  try {
    const site = await seed(server.url);
    const count = async () => {
      let n = 0;
      let cursor: string | undefined;
      for (;;) {
        const res = await fetch(`${server.url}/v1/events?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { headers: { authorization: `Bearer ${site.token}` } });
        const page = (await res.json()) as { data: unknown[]; next_cursor: string | null };
        n += page.data.length;
        if (page.next_cursor === null) return n;
        cursor = page.next_cursor;
      }
    };
    // A log that is not a toy: LOG_ROWS events before the run, and the planner's statistics taken on them
    // (what autovacuum does on server PostgreSQL, and the statistics job on the embedded database).
    await seedLog(site, LOG_ROWS);
    await settled();
    const traffic = await liveTraffic(server.url, site);
    const storedBefore = await count();
    bare = await startServiceProcess({ BARE_BODY: LOCK_BYTES }, 'bench/bare-server.ts');
    if (PINNED) {
      pin(pid, 0);
      pin(bare.child.pid as number, 0);
      pin(process.pid, 1);
    }
    const measure = pairedLoad(label, site.token, pid, traffic, bare);
    const bodies: string[] = [];
    const run = async (name: string, path: string) => {
      bodies.push(await (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${site.token}` } })).text());
      return measure(name, `${server.url}${path}`);
    };
    const reads: PairedMeasure[] = [];
    const activeBefore = traffic.activeSeconds();
    try {
      // BENCH_LIVE_READS=first,tail,doors,locks,people,keys (any of them): those reads only, e.g. for a profile.
      const wanted = (name: string) => !process.env.BENCH_LIVE_READS || process.env.BENCH_LIVE_READS.split(',').includes(name);
      if (wanted('first')) reads.push(await run('GET /v1/events?limit=50 (first page)', '/v1/events?limit=50'));
      if (wanted('tail')) bodies.push(await (await fetch(`${server.url}/v1/events?limit=50`, { headers: { authorization: `Bearer ${site.token}` } })).text());
      if (wanted('tail')) reads.push(await tailPollers(server.url, site.token, measure));
      if (wanted('doors')) bodies.push(await (await fetch(`${server.url}/v1/events?limit=50&lock_id=${site.locks[0]}`, { headers: { authorization: `Bearer ${site.token}` } })).text());
      if (wanted('doors')) reads.push(await doorPollers(server.url, site.locks, measure));
      if (wanted('locks')) reads.push(await run('GET /v1/locks?limit=50', '/v1/locks?limit=50'));
      if (wanted('people')) reads.push(await run('GET /v1/people?limit=50', '/v1/people?limit=50'));
      if (wanted('keys')) reads.push(await run('GET /v1/keys?limit=50', '/v1/keys?limit=50'));
    } finally {
      if (PINNED) pin(process.pid, '0-1');
    }
    // Door events were published only while the traffic ran (not during bare Fastify's runs).
    const elapsed = traffic.activeSeconds() - activeBefore;
    const stored = (await count()) - storedBefore;
    const background = await traffic.stop();
    return {
      label,
      reads,
      bodies,
      eventsPerSecond: Math.round(stored / elapsed),
      writesPerSecond: Math.round((background.writes / background.seconds) * 10) / 10,
      failedWrites: background.failedWrites,
    };
  } finally {
    if (bare) await stop(bare);
    await stop(server);
  }
}

/** Goals of issue 25 for these reads: a share of bare Fastify and a p99. */
export const LIVE_SITE_GOAL = { share: 0.3, p99Ms: 25 };

/**
 * The section's table: each read against bare Fastify twice: serving one lock's bytes (the reads section's
 * reference) in a run just before each of the read's runs (the median of the pairs' shares; pairedLoad), and serving
 * the very bytes of that read, measured after the site (a page of 50 is 10 to 25 KB, and on loopback the sending of
 * it costs a bare route more than half its rate). `sameBytes` is in the order of the reads of each run.
 */
export function formatLiveSite(sameBytes: Measured[][], runs: LiveSiteFigures[]): string {
  const bare = runs.flatMap((run) => run.reads.flatMap((m) => m.bareRuns));
  const lines = [
    `Bare Fastify (one lock's bytes from memory, no auth), a run before each run of each read with the traffic paused: ${Math.min(...bare)} to ${Math.max(...bare)} requests/s.`,
    '',
    "| read, while the doors are busy | database | requests/s (runs) | bare before each run | vs bare, one lock's bytes (each pair) | vs bare, the same bytes | p50 ms | p99 ms | service CPU | non-2xx | goal (≥ 0.30, p99 < 25 ms) |",
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  runs.forEach((run, r) => {
    run.reads.forEach((m, i) => {
      const share = percentile([...m.shares].sort((a, b) => a - b), 50);
      const same = sameBytes[r]?.[i];
      const met = share >= LIVE_SITE_GOAL.share && m.p99 < LIVE_SITE_GOAL.p99Ms;
      const sameShare = same ? `${(m.rps / same.rps).toFixed(2)} (${same.rps}/s)` : '–';
      lines.push(
        `| ${m.name.slice(run.label.length + 2)} | ${run.label} | ${m.rps} (${m.runs.join(', ')}) | ${m.bareRuns.join(', ')} | ${share.toFixed(2)} (${m.shares.map((x) => x.toFixed(2)).join(', ')}) | ${sameShare} | ${m.p50} | ${m.p99} | ${m.cpu?.toFixed(2) ?? '–'} | ${m.non2xx} | ${met ? 'met' : 'missed'} |`,
      );
    });
  });
  lines.push('');
  for (const run of runs) {
    lines.push(`${run.label}: ${run.eventsPerSecond} door events stored a second during the reads (${DOOR_EVENTS_PER_SECOND} published), ${run.writesPerSecond} changes of people and keys a second, ${run.failedWrites} refused.`);
  }
  return lines.join('\n');
}

export function liveSiteMachine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${new Date().toISOString()}, ${os.cpus().length} cores (${cpu}), Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, ${PINNED ? 'pinned' : 'not pinned'}, ${SECONDS} s runs, median of ${RUNS}`;
}

/** How the section is measured, and what changed it (bench/RESULTS.md). */
export const LIVE_SITE_NOTES = [
  `While the reads are measured, one gateway reports ${DOOR_EVENTS_PER_SECOND} door events a second over MQTT (QoS 1, acknowledged once committed) and`,
  `people and keys change ${WRITES_PER_SECOND} times a second through the public API (PUT /v1/people/{id}, PATCH /v1/keys/{id}); the log holds`,
  `${LOG_ROWS.toLocaleString('en')} events before the run, with the planner's statistics taken on them. The tail pollers re-read their cursor until the`,
  'page fills and then follow next_cursor, as the spec tells clients to (autocannon, every connection from the furthest cursor given);',
  `the per-door pollers do the same for ${POLLED_DOORS} doors (lock_id), a cursor per door. Each read is set against bare Fastify`,
  "twice: serving one lock's bytes (the reads section's reference), in a run just before each of the read's runs with the traffic",
  "paused (the share is the median of the pairs'), and serving the read's own bytes after the site (a page of 50 is 10 to 25 KB;",
  'sending it costs even the bare route more than half its rate on loopback).',
].join('\n');
