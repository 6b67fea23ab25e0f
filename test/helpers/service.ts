// A Latchkey service listening on a real port, for tests that talk to it over HTTP as a client would.
import { randomBytes } from 'node:crypto';
import { buildApp, type Latchkey } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { after, before } from 'node:test';
import type { Clock } from '../../src/platform/clock.ts';
import type { Database } from '../../src/platform/db/database.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as X-Forwarded-For: test services trust the proxy, so each test can be its own client IP. */
  ip?: string;
  headers?: Record<string, string>;
}

export interface TestService {
  url: string;
  latchkey: Latchkey;
  request<T = Record<string, unknown>>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  /** Operator API call with ADMIN_TOKEN. */
  admin<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<HttpResult<T>>;
  close(): Promise<void>;
}

/** `logger`: Fastify logger options (e.g. a `stream` to read the log); silent without. */
export async function startService(
  db: Database,
  env: Record<string, string> = {},
  clock?: Clock,
  logger?: Record<string, unknown>,
): Promise<TestService> {
  const config: Config = loadConfig({
    ADMIN_TOKEN,
    SANDBOX: 'true',
    TRUST_PROXY: 'true',
    PORT: '0',
    HOST: '127.0.0.1',
    MQTT_PORT: '0',
    // With an external broker: a client id of its own, and no session left behind (a persistent one would
    // keep a share of the gateway topics queued for a service that is gone, away from the next test's).
    MQTT_CLIENT_ID: `latchkey-test-${randomBytes(6).toString('hex')}`,
    MQTT_SESSION_EXPIRY_SECONDS: '0',
    ...env,
  });
  const latchkey = await buildApp({ config, db, logger: logger ?? false, ...(clock ? { clock } : {}) });
  await latchkey.app.listen({ port: 0, host: '127.0.0.1' });
  const address = latchkey.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const url = `http://127.0.0.1:${address.port}`;

  async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.ip) headers['x-forwarded-for'] = options.ip;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const response = await fetch(url + path, { method, headers, body: payload });
    const text = await response.text();
    let body: unknown = null;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status: response.status, headers: response.headers, body: body as T, text };
  }

  return {
    url,
    latchkey,
    request,
    admin: (method, path, body) => request(method, path, { token: ADMIN_TOKEN, body }),
    close: () => latchkey.close(),
  };
}

/** A client IP of its own, so that per-IP limits of one test never touch another. */
export function freshIp(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

/**
 * The service of one test file: a database of its own and a listening service, made before the file's
 * tests and closed after them; `setup` makes the file's shared fixtures. Read `ctx.service` and
 * `ctx.database` inside hooks and tests.
 */
export function useTestService(
  setup?: (service: TestService) => Promise<void>,
  env: Record<string, string> = {},
): { service: TestService; database: TestDatabase } {
  const ctx = {} as { service: TestService; database: TestDatabase };
  // One hook: Node 20 does not wait for one root-level before() to finish before starting the next.
  before(async () => {
    ctx.database = await createTestDatabase();
    ctx.service = await startService(ctx.database.db, env);
    await setup?.(ctx.service);
  });
  after(async () => {
    await ctx.service?.close();
    await ctx.database?.close();
  });
  return ctx;
}
