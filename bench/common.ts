// What every section of the bench shares: the run length, the operator calls, the load generator and the
// percentiles. The service always runs in its own process (test/helpers/process.ts).
import autocannon from 'autocannon';
import { startServiceProcess, type ServiceProcess } from '../test/helpers/process.ts';

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = 50;
export const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ADMIN_TOKEN = 'bench-admin-token-0123456789';

export async function stop(server: ServiceProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
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
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

export async function load(name: string, url: string, token: string | null): Promise<Measured> {
  // Warm-up, then the measured run.
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  await autocannon({ url, connections: CONNECTIONS, duration: 2, headers });
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers });
  return {
    name,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors,
  };
}

/** The service in its own process on a free port, with the rate limit raised so the limiter counts without refusing. */
export function startBenchService(env: Record<string, string>): Promise<ServiceProcess> {
  return startServiceProcess({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_TOKEN,
    LOG_LEVEL: 'warn',
    API_RATE_LIMIT_PER_MINUTE: '10000000',
    ...env,
  });
}
