// The access log at scale (issue 15): GET /v1/events on 10 million events against the same queries on
// 1,000 events. For each query, one client's sequential latencies (p50/p99) and the 50-connection
// throughput; the service in its own process on PostgreSQL (bench/access-log-dataset.ts builds the data),
// with PAGE_CACHE_ENABLED=false so that every request reads the database.
//
//   import { measureAccessLogScale } from './access-log-scale.ts';
//   const figures = await measureAccessLogScale();          // or { requests: 500, log: console.log }
//
//   npx tsx bench/access-log-scale.ts                        prints the table (BENCH_SECONDS sets the load runs)
import { encodeCursor } from '../src/platform/pagination.ts';
import { buildDataset, LARGE, SMALL, type Dataset, type DatasetSpec } from './access-log-dataset.ts';
import { admin, load, percentile, startBenchService, stop } from './common.ts';

export interface QueryFigures {
  name: string;
  path: string;
  /** Rows in the answer (each query fills a page of 50 on both data sets). */
  rows: number;
  /** One client, sequential requests. */
  p50: number;
  p99: number;
  /** 50 connections (autocannon). */
  rps: number;
  loadP99: number;
  non2xx: number;
}

export interface DatasetFigures {
  database: string;
  events: number;
  builtSeconds: number;
  reused: boolean;
  queries: QueryFigures[];
}

export interface AccessLogScaleFigures {
  large: DatasetFigures;
  small: DatasetFigures;
  /** Per query: the 10M throughput as a share of the 1,000-event one, and whether the targets hold. */
  comparison: Array<{ name: string; p99: number; throughputRatio: number; met: boolean }>;
}

export interface MeasureOptions {
  /** Sequential requests per query for the single client (after 50 of warm-up). */
  requests?: number;
  log?: (line: string) => void;
}

/** The queries of the target, plus page 1 for a key at one floor (a small part of the tree). */
function queriesOf(d: Dataset): Array<{ name: string; path: string; floorKey?: boolean }> {
  const since = new Date(Date.now() - 3600_000).toISOString();
  return [
    { name: 'page 1', path: '/v1/events?limit=50' },
    { name: 'deep page (after the middle id)', path: `/v1/events?limit=50&cursor=${encodeURIComponent(encodeCursor(d.middleId, 'events'))}` },
    { name: 'since 1 h ago', path: `/v1/events?limit=50&since=${encodeURIComponent(since)}` },
    { name: 'lock_id', path: `/v1/events?limit=50&lock_id=${d.lockId}` },
    { name: 'person_id', path: `/v1/events?limit=50&person_id=${d.personId}` },
    { name: 'page 1, key at one floor', path: '/v1/events?limit=50', floorKey: true },
  ];
}

/** A floor of site 1 (bench/access-log-dataset.ts numbers the tree: 1 root, 2–10 sites, 11– floors). */
const FLOOR_LOCATION = 11;

async function sequential(url: string, token: string, requests: number): Promise<{ p50: number; p99: number; rows: number }> {
  const headers = { authorization: `Bearer ${token}` };
  let rows = 0;
  for (let i = 0; i < 50; i++) {
    const res = await fetch(url, { headers });
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
    rows = ((await res.json()) as { data: unknown[] }).data.length;
  }
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t = performance.now();
    const res = await fetch(url, { headers });
    await res.arrayBuffer();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: round(percentile(times, 50)), p99: round(percentile(times, 99)), rows };
}

const round = (n: number): number => Math.round(n * 100) / 100;

async function measureDataset(spec: DatasetSpec, options: Required<MeasureOptions>): Promise<DatasetFigures> {
  const dataset = await buildDataset(spec, options.log);
  // The database's own path: with the page cache on, every request after the first of a query would be
  // answered from memory whatever the table holds.
  const server = await startBenchService({ DATABASE_URL: dataset.url, PAGE_CACHE_ENABLED: 'false' });
  const keys: number[] = [];
  try {
    const key = async (location: number) => {
      const made = await admin<{ id: number; token: string }>(server.url, 'POST', '/admin/v1/api_keys', {
        location_id: location,
        name: 'access-log bench',
        scopes: ['events:read'],
      });
      keys.push(made.id);
      return made.token;
    };
    const rootToken = await key(1);
    const floorToken = await key(FLOOR_LOCATION);
    const queries: QueryFigures[] = [];
    for (const q of queriesOf(dataset)) {
      const token = q.floorKey ? floorToken : rootToken;
      const url = server.url + q.path;
      const one = await sequential(url, token, options.requests);
      const many = await load(`${spec.database}: ${q.name}`, url, token, server.child.pid);
      const figures = { name: q.name, path: q.path, rows: one.rows, p50: one.p50, p99: one.p99, rps: many.rps, loadP99: many.p99, non2xx: many.non2xx };
      options.log(`  ${spec.database} ${q.name}: ${figures.rows} rows, p50 ${figures.p50} ms, p99 ${figures.p99} ms, ${figures.rps} req/s at 50 connections`);
      queries.push(figures);
    }
    return { database: spec.database, events: dataset.events, builtSeconds: round(dataset.builtSeconds), reused: dataset.reused, queries };
  } finally {
    for (const id of keys) await admin(server.url, 'DELETE', `/admin/v1/api_keys/${id}`).catch(() => undefined);
    await stop(server);
  }
}

export async function measureAccessLogScale(options: MeasureOptions = {}): Promise<AccessLogScaleFigures> {
  const o: Required<MeasureOptions> = { requests: options.requests ?? 500, log: options.log ?? (() => undefined) };
  const small = await measureDataset(SMALL, o);
  const large = await measureDataset(LARGE, o);
  const comparison = large.queries.map((q, i) => {
    const base = small.queries[i] as QueryFigures;
    const throughputRatio = round(q.rps / base.rps);
    return { name: q.name, p99: q.p99, throughputRatio, met: q.p99 < 20 && throughputRatio >= 0.8 };
  });
  return { large, small, comparison };
}

export function formatAccessLogScale(f: AccessLogScaleFigures): string {
  const lines = [
    `| query | rows | 1 client p50 / p99 (10M) | 1 client p50 / p99 (1k) | req/s at 50 conn. (10M) | req/s (1k) | ratio | target |`,
    `|---|---:|---:|---:|---:|---:|---:|---|`,
  ];
  f.large.queries.forEach((q, i) => {
    const s = f.small.queries[i] as QueryFigures;
    const c = f.comparison[i] as AccessLogScaleFigures['comparison'][number];
    lines.push(`| ${q.name} | ${q.rows} | ${q.p50} / ${q.p99} ms | ${s.p50} / ${s.p99} ms | ${q.rps} | ${s.rps} | ${c.throughputRatio} | ${c.met ? 'met' : 'missed'} |`);
  });
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  measureAccessLogScale({ log: console.log })
    .then((f) => {
      console.log(formatAccessLogScale(f));
      console.log(JSON.stringify(f));
    })
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
