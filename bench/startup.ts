// Start-up and idle memory of the service process: embedded on a fresh data directory, embedded on a reopened
// one, and on PostgreSQL (DATABASE_URL). Each start is `npm start`'s command (startServiceProcess: node, its flags
// and scripts/start.mjs, which imports the service's bundle in the same process; the bundle is built before the
// first start, as any start after a change to src/ would), timed from spawn to its `listening on` line; the
// resident memory is the node process's own VmRSS (/proc/<pid>/status; no npm or wrapper in between), read a
// moment after listening. Medians of several starts, interleaved so that a noisy moment of the shared machine
// hits every kind alike.
//
//   import { startupRuns, startupSummary } from './startup.ts';
//   const figures = await startupRuns({ databaseUrl: 'postgres://postgres@127.0.0.1:5432/bench', runs: 5 });
//   console.log(startupSummary(figures));
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ensureServerBundle } from '../scripts/server-bundle.mjs';
import { startBenchService, stop } from './common.ts';

export type StartKind = 'embedded fresh' | 'embedded reopened' | 'postgres';

export interface StartFigures {
  kind: StartKind;
  runs: number;
  /** Spawn to `listening on`, ms: median, lowest, highest. */
  startMs: number;
  startRange: [number, number];
  /** The process's CPU time (user + system) up to the RSS reading, ms, median: less disturbed by other load. */
  cpuMs: number;
  /** VmRSS after start, MiB: median, lowest, highest; and the peak (VmHWM), median. */
  rssMiB: number;
  rssRange: [number, number];
  peakMiB: number;
  /** RSS after IDLE_MS more of idleness, read in the last start only (V8 gives back young-generation pages when idle). */
  idleRssMiB: number | null;
}

/** How long the last start of each kind stays idle before its memory is read again. */
const IDLE_MS = 30_000;

export interface StartupOptions {
  /** PostgreSQL for the third kind; skipped without it. Each run starts on a migrated database (the first migrates). */
  databaseUrl?: string;
  /** Starts of each kind (at least 5 for a median worth the name). */
  runs?: number;
  /** How long after `listening on` the memory is read. */
  settleMs?: number;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

async function processFigures(pid: number): Promise<{ rss: number; peak: number; cpuMs: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  // /proc/<pid>/stat: utime and stime (fields 14 and 15) in clock ticks, after the command name's closing parenthesis.
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(stat[11] ?? 0) + Number(stat[12] ?? 0);
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024), cpuMs: ticks * 10 }; // 100 ticks/s on Linux
}

type Sample = { start: number; rss: number; peak: number; cpuMs: number; idleRss?: number };

async function oneStart(env: Record<string, string>, settleMs: number, idleMs = 0): Promise<Sample> {
  const started = performance.now();
  const service = await startBenchService(env);
  const start = performance.now() - started;
  try {
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    const figures = { start, ...(await processFigures(service.child.pid as number)) };
    if (idleMs === 0) return figures;
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    return { ...figures, idleRss: (await processFigures(service.child.pid as number)).rss };
  } finally {
    await stop(service);
  }
}

function summarise(kind: StartKind, samples: Sample[]): StartFigures {
  const starts = samples.map((s) => Math.round(s.start));
  const rss = samples.map((s) => s.rss);
  return {
    kind,
    runs: samples.length,
    startMs: median(starts),
    startRange: [Math.min(...starts), Math.max(...starts)],
    cpuMs: median(samples.map((s) => s.cpuMs)),
    rssMiB: median(rss),
    rssRange: [Math.min(...rss), Math.max(...rss)],
    peakMiB: median(samples.map((s) => s.peak)),
    idleRssMiB: samples.find((s) => s.idleRss !== undefined)?.idleRss ?? null,
  };
}

export async function startupRuns(options: StartupOptions = {}): Promise<StartFigures[]> {
  const runs = options.runs ?? 5;
  const settleMs = options.settleMs ?? 2000;
  const samples: Record<StartKind, Sample[]> = {
    'embedded fresh': [],
    'embedded reopened': [],
    postgres: [],
  };
  await ensureServerBundle(); // a start after a change to src/ builds it first: not what is measured here
  if (options.databaseUrl) await oneStart({ DATABASE_URL: options.databaseUrl }, 0); // migrates, not counted
  for (let i = 0; i < runs; i++) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-startup-'));
    try {
      // The same directory twice: created by the first start, reopened by the second.
      const idle = i === runs - 1 ? IDLE_MS : 0; // the last start of each kind also stays idle a while
      samples['embedded fresh'].push(await oneStart({ DATA_DIR: dir }, settleMs, idle));
      samples['embedded reopened'].push(await oneStart({ DATA_DIR: dir }, settleMs, idle));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    if (options.databaseUrl) samples.postgres.push(await oneStart({ DATABASE_URL: options.databaseUrl }, settleMs, i === runs - 1 ? IDLE_MS : 0));
  }
  return (Object.entries(samples) as Array<[StartKind, typeof samples.postgres]>)
    .filter(([, list]) => list.length > 0)
    .map(([kind, list]) => summarise(kind, list));
}

/** A small table: one line per kind. */
export function startupSummary(figures: readonly StartFigures[]): string {
  const lines = [
    `| start | runs | spawn → listening (median, range) | CPU time | RSS after start (median, range) | peak RSS | RSS after ${IDLE_MS / 1000} s idle (last start) |`,
    '|---|---:|---:|---:|---:|---:|---:|',
    ...figures.map(
      (f) =>
        `| ${f.kind} | ${f.runs} | ${f.startMs} ms (${f.startRange[0]}–${f.startRange[1]}) | ${f.cpuMs} ms | ${f.rssMiB} MiB (${f.rssRange[0]}–${f.rssRange[1]}) | ${f.peakMiB} MiB | ${f.idleRssMiB === null ? '–' : `${f.idleRssMiB} MiB`} |`,
    ),
  ];
  return lines.join('\n');
}

// `npx tsx bench/startup.ts [runs]` prints the table (PostgreSQL from BENCH_DATABASE_URL, when set).
if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await startupRuns({ runs: Number(process.argv[2] ?? 5), ...(process.env.BENCH_DATABASE_URL ? { databaseUrl: process.env.BENCH_DATABASE_URL } : {}) });
  console.log(startupSummary(figures));
}
