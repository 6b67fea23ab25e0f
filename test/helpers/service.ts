// A Latchkey service for tests that talk to it over HTTP as a client would: listening on a real port, or
// served through Fastify's app.inject where the socket adds nothing (the same `request` either way).
import { randomBytes } from 'node:crypto';
import { buildApp, type Latchkey } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { after, before } from 'node:test';
import type { InjectOptions } from 'fastify';
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

/**
 * How requests reach the service. `socket` (default): a real listener and fetch, for tests of what the
 * socket and Node's HTTP parser do (raw bytes, header limits, timeouts, Connection: close) and for clients
 * that need `url`. `inject`: no listener, requests through `app.inject`, the same routing, hooks and
 * serialisation with no connection in between; `url` throws.
 */
export type Transport = 'socket' | 'inject';

export interface TestService {
  /** The listener's base URL (`socket` only). */
  readonly url: string;
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
  transport: Transport = 'socket',
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
  const connection = transport === 'inject' ? injector(latchkey) : await listener(latchkey);

  async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.ip) headers['x-forwarded-for'] = options.ip;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json';
      payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    }
    const { status, headers: responseHeaders, text } = await connection.send(method, path, headers, payload);
    let body: unknown = null;
    if (text !== '') {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return { status, headers: responseHeaders, body: body as T, text };
  }

  return {
    get url(): string {
      if (connection.url === null) throw new Error("this test service has no listener (transport 'inject'); use transport 'socket' for a URL");
      return connection.url;
    },
    latchkey,
    request,
    admin: (method, path, body) => request(method, path, { token: ADMIN_TOKEN, body }),
    close: () => latchkey.close(),
  };
}

interface Sent {
  status: number;
  headers: Headers;
  text: string;
}

interface Connection {
  /** The listener's base URL; null without one. */
  url: string | null;
  /** Sends one request (header names in lower case) and reads the whole answer. */
  send(method: string, path: string, headers: Record<string, string>, payload: string | undefined): Promise<Sent>;
}

async function listener(latchkey: Latchkey): Promise<Connection> {
  await latchkey.app.listen({ port: 0, host: '127.0.0.1' });
  const address = latchkey.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    async send(method, path, headers, payload) {
      const response = await fetch(url + path, { method, headers, body: payload });
      return { status: response.status, headers: response.headers, text: await response.text() };
    },
  };
}

/** Methods for which fetch sends `Content-Length: 0` when there is no body. */
const PAYLOAD_METHODS = new Set(['POST', 'PUT', 'PATCH']);

function injector(latchkey: Latchkey): Connection {
  return {
    url: null,
    async send(method, path, headers, payload) {
      // The request headers fetch would add that the service reads (content negotiation, an empty body's length).
      const sent: Record<string, string> = { accept: '*/*', ...headers };
      if (PAYLOAD_METHODS.has(method.toUpperCase()) && !payload) sent['content-length'] ??= '0';
      const response = await latchkey.app.inject({ method: method as InjectOptions['method'], url: path, headers: sent, ...(payload ? { payload } : {}) });
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(response.headers)) {
        if (value === undefined) continue;
        for (const each of Array.isArray(value) ? value : [value]) responseHeaders.append(name, String(each));
      }
      return { status: response.statusCode, headers: responseHeaders, text: response.body };
    },
  };
}

/** A client IP of its own, so that per-IP limits of one test never touch another. */
export function freshIp(): string {
  const b = randomBytes(3);
  return `10.${b[0]}.${b[1]}.${b[2]}`;
}

/**
 * The service of one test file: a database of its own and a service (listening, unless `transport` is
 * 'inject'), made before the file's tests and closed after them; `setup` makes the file's shared fixtures. Read `ctx.service` and
 * `ctx.database` inside hooks and tests.
 */
export function useTestService(
  setup?: (service: TestService) => Promise<void>,
  env: Record<string, string> = {},
  options: { transport?: Transport } = {},
): { service: TestService; database: TestDatabase } {
  const ctx = {} as { service: TestService; database: TestDatabase };
  // One hook: Node 20 does not wait for one root-level before() to finish before starting the next.
  before(async () => {
    ctx.database = await createTestDatabase();
    ctx.service = await startService(ctx.database.db, env, undefined, undefined, options.transport);
    await setup?.(ctx.service);
  });
  after(async () => {
    await ctx.service?.close();
    await ctx.database?.close();
  });
  return ctx;
}
