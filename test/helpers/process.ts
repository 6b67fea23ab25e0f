// The service as its own process (npm start's entry point), and storage that outlives one process.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { backend, testDatabaseUrl } from './database.ts';

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/** `npm start`'s arguments to node (package.json): its flags, then the launcher that runs the service's bundle. */
export const startArguments: readonly string[] = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }
).scripts.start
  .split(' ')
  .slice(1);

/**
 * Starts the service as `npm start` does (or runs the TypeScript file `entry` through tsx with the same Node flags)
 * and resolves once it logs `listening on <url>` (the `msg` of a JSON log line; a plain line from
 * bench/bare-server.ts). The node process is the service itself: no npm or wrapper in between.
 */
export async function startServiceProcess(env: Record<string, string>, entry?: string, nodeFlags: readonly string[] = []): Promise<ServiceProcess> {
  // `nodeFlags`: more flags for node itself, before npm start's (e.g. --cpu-prof, which NODE_OPTIONS refuses).
  const args = [...nodeFlags, ...(entry ? [...startArguments.filter((arg) => arg.startsWith('--')), '--import', 'tsx', entry] : startArguments)];
  const child = spawn(process.execPath, args, {
    // With an external broker, no session is left behind unless the test asks for one (a persistent session
    // would keep a share of the gateway topics queued for a process that is gone).
    env: { ...process.env, PORT: '0', MQTT_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', MQTT_CLIENT_ID: `latchkey-test-${randomBytes(6).toString('hex')}`, MQTT_SESSION_EXPIRY_SECONDS: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line:\n${output}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/[^\s"]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve((match[1] as string).replace('localhost', '127.0.0.1'));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`exited before listening:\n${output}`));
    });
  });
  return { child, url, output: () => output, exited };
}

/**
 * Storage for service processes of this test: a fresh data directory (embedded) or a fresh schema
 * (PostgreSQL, through DATABASE_URL's search_path). Returns the environment and its clean-up.
 */
export async function processStorage(name: string): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  if (backend === 'postgres') {
    const schema = `lk_${name}_${process.pid}`;
    const run = async (sql: string) => {
      const client = new pg.Client({ connectionString: testDatabaseUrl() });
      await client.connect();
      await client.query(sql);
      await client.end();
    };
    await run(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    const url = new URL(testDatabaseUrl());
    url.searchParams.set('options', `-c search_path=${schema}`);
    return { env: { DATABASE_URL: url.toString() }, cleanup: () => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
  }
  const dir = await mkdtemp(path.join(tmpdir(), `latchkey-${name}-`));
  return { env: { DATA_DIR: dir }, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
