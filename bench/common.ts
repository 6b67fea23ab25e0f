// What every section of the bench shares: the run length, the operator calls, the load generator and the
// percentiles. The service always runs in its own process (test/helpers/process.ts).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { startServiceProcess, type ServiceProcess } from '../test/helpers/process.ts';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = 50;
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ADMIN_TOKEN = 'bench-admin-token-0123456789';

export async function stop(server: ServiceProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
  // BENCH_SERVICE_LOG=<dir>: what each service process wrote (with BENCH_SERVICE_FLAGS=--trace-gc, say).
  if (process.env.BENCH_SERVICE_LOG) {
    mkdirSync(process.env.BENCH_SERVICE_LOG, { recursive: true });
    writeFileSync(path.join(process.env.BENCH_SERVICE_LOG, `service-${server.child.pid}.log`), server.output());
  }
}

export async function admin<T>(url: string, method: string, pathname: string, body?: unknown): Promise<T> {
  const res = await fetch(url + pathname, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${pathname}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

export async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

export interface Measured {
  name: string;
  /** The median run's figures (by requests/s) of RUNS runs. */
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Every run's requests/s, in order. */
  runs: number[];
  /** The service's CPU during the median run, in cores (1.00 = one core busy); null when not watched. */
  cpu: number | null;
  /** The service's resident memory after the runs, MiB; null when not watched. */
  rssMiB: number | null;
}

/** Runs per figure: the median is reported (BENCH_RUNS, default 3). */
export const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** Pinned mode (BENCH_PIN, on unless 0): the service on core 0, this process (the load generator) on core 1. */
export const PINNED = process.env.BENCH_PIN !== '0' && os.cpus().length >= 2;

/** CPU seconds (user + system, every thread) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** Resident memory of a process, MiB. */
export function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(match?.[1] ?? 0) / 1024);
}

/** Puts a process (every thread it has) on one core; the threads it starts later inherit it. */
export function pin(pid: number, core: number | string): void {
  execFileSync('taskset', ['-a', '-cp', String(core), String(pid)], { stdio: 'ignore' });
}

/** One run of SECONDS at CONNECTIONS, with the service's CPU during it (`pid`: the process watched). */
export interface OneRun {
  result: autocannon.Result;
  cpu: number | null;
}

export function warmUp(url: string, token: string | null, more: Partial<autocannon.Options> = {}): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, duration: 2, headers: token ? { authorization: `Bearer ${token}` } : {}, ...more });
}

export async function oneRun(url: string, token: string | null, pid?: number, more: Partial<autocannon.Options> = {}): Promise<OneRun> {
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  const cpuBefore = pid ? cpuSeconds(pid) : 0;
  const started = performance.now();
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers, ...more });
  const cpu = pid ? (cpuSeconds(pid) - cpuBefore) / ((performance.now() - started) / 1000) : null;
  return { result, cpu };
}

/** The median run's figures (by requests/s) of `runs`, and the watched service's memory now. */
export function summarize(name: string, runs: readonly OneRun[], pid?: number): Measured {
  const median = [...runs].sort((a, b) => a.result.requests.average - b.result.requests.average)[Math.floor(runs.length / 2)] as OneRun;
  return {
    name,
    rps: Math.round(median.result.requests.average),
    p50: median.result.latency.p50,
    p99: median.result.latency.p99,
    non2xx: runs.reduce((sum, r) => sum + r.result.non2xx + r.result.errors, 0),
    runs: runs.map((r) => Math.round(r.result.requests.average)),
    cpu: median.cpu === null ? null : Math.round(median.cpu * 100) / 100,
    rssMiB: pid ? rssMiB(pid) : null,
  };
}

/**
 * A warm-up, then RUNS runs of SECONDS at CONNECTIONS; returns the median run's figures and, with `pid`,
 * the service's CPU during that run and its memory after.
 */
export async function load(name: string, url: string, token: string | null, pid?: number, more: Partial<autocannon.Options> = {}): Promise<Measured> {
  await warmUp(url, token, more);
  const runs: OneRun[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await oneRun(url, token, pid, more));
  return summarize(name, runs, pid);
}

/**
 * The service in its own process on a free port, with the rate limit raised so the limiter counts without refusing.
 * BENCH_CPU_PROF=<directory>: the service writes a CPU profile there when it ends (node --cpu-prof).
 */
export function startBenchService(env: Record<string, string>): Promise<ServiceProcess> {
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // BENCH_SERVICE_FLAGS: more node flags for the service, for a diagnosis or a comparison (space-separated).
  const flags = (process.env.BENCH_SERVICE_FLAGS ?? '').split(' ').filter(Boolean);
  return startServiceProcess({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    ...env,
  }, undefined, [...profile, ...flags]);
}

/** Bare Fastify serving `body` from memory, measured like the service (pinned the same way in pinned mode). */
export async function bareRun(name: string, body: string): Promise<Measured> {
  const bareServer = await startServiceProcess({ BARE_BODY: body }, 'bench/bare-server.ts');
  const pid = bareServer.child.pid as number;
  if (PINNED) {
    pin(pid, 0);
    pin(process.pid, 1);
  }
  return load(name, `${bareServer.url}/v1/locks/1`, null, pid).finally(() => {
    if (PINNED) pin(process.pid, '0-1');
    return stop(bareServer);
  });
}

