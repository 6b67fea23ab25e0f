// The operator console's cost: start-up time and memory of the service with and without it (CONSOLE_ENABLED),
// on a fresh embedded data directory and on PostgreSQL, and what the first page load adds (the bundle is built
// in memory on the first request for it).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startBenchService, stop } from './common.ts';

export interface ConsoleFigures {
  runs: number;
  /** Spawn to "listening on", median, ms. */
  startWith: number;
  startWithout: number;
  /** Resident memory 2 s after listening, median, MiB. */
  rssWith: number;
  rssWithout: number;
  /** Lowest and highest of the runs: PGlite's first start leaves 600–960 MiB whatever else runs. */
  rssWithRange: string;
  rssWithoutRange: string;
  /** First GET of the bundle (built then), and a later one (cached), median, ms. */
  firstBundleMs: number;
  cachedBundleMs: number;
  /** Resident memory after the first page load, median, MiB. */
  rssAfterLoad: number;
  bundleKiB: number;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

const range = (values: number[]): string => `${Math.min(...values)}–${Math.max(...values)}`;

async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return Math.round(kib / 1024);
}

async function timed(url: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const response = await fetch(url);
  const body = await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${url}: ${response.status}`);
  return { ms: performance.now() - started, bytes: body.byteLength };
}

/** One start: on a fresh embedded data directory, or on `databaseUrl` (migrated by the first start). */
async function oneRun(enabled: boolean, databaseUrl: string | undefined): Promise<{ start: number; rss: number; first?: number; cached?: number; after?: number; bytes?: number }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-console-'));
  const storage: Record<string, string> = databaseUrl ? { DATABASE_URL: databaseUrl } : { DATA_DIR: dataDir };
  const started = performance.now();
  const service = await startBenchService({ ...storage, CONSOLE_ENABLED: String(enabled) });
  const start = performance.now() - started;
  try {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const pid = service.child.pid as number;
    const rss = await rssMiB(pid);
    if (!enabled) return { start, rss };
    await timed(`${service.url}/console`);
    const first = await timed(`${service.url}/console/assets/app.js`);
    await timed(`${service.url}/console/assets/app.css`);
    const cached = await timed(`${service.url}/console/assets/app.js`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { start, rss, first: first.ms, cached: cached.ms, after: await rssMiB(pid), bytes: first.bytes };
  } finally {
    await stop(service);
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function consoleRuns(databaseUrl?: string, runs = 7): Promise<ConsoleFigures> {
  const withConsole = [];
  const without = [];
  // Interleaved, so that a noisy moment of the shared machine hits both alike.
  for (let i = 0; i < runs; i++) {
    withConsole.push(await oneRun(true, databaseUrl));
    without.push(await oneRun(false, databaseUrl));
  }
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    runs,
    startWith: Math.round(median(withConsole.map((r) => r.start))),
    startWithout: Math.round(median(without.map((r) => r.start))),
    rssWith: median(withConsole.map((r) => r.rss)),
    rssWithout: median(without.map((r) => r.rss)),
    rssWithRange: range(withConsole.map((r) => r.rss)),
    rssWithoutRange: range(without.map((r) => r.rss)),
    firstBundleMs: Math.round(median(withConsole.map((r) => r.first as number))),
    cachedBundleMs: round(median(withConsole.map((r) => r.cached as number))),
    rssAfterLoad: median(withConsole.map((r) => r.after as number)),
    bundleKiB: Math.round((withConsole[0]?.bytes ?? 0) / 1024),
  };
}
