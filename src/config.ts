// Every environment variable the service reads, typed and validated in one place.
// An invalid value stops start-up with a message naming the variable.
//
// Written by hand rather than with env-schema (ajv over a TypeBox schema), judged in issue 26: about half of
// what is checked here is not a property of one variable's value that a JSON schema states. Defaults come
// from other variables (PUBLIC_URL from PORT, SMTP_FROM and SMS_FROM from BRAND_NAME, MQTT_CLIENT_ID from the
// host name); variables depend on each other (MQTT_DYNSEC_* both or neither and only with a user in MQTT_URL,
// METRICS_PORT not PORT); TRUST_PROXY is a boolean, a number or a list of addresses and CIDRs;
// CONTROLLER_LISTEN and CONTROLLER_EVENT_ADDRESS are host:port; WEBHOOK_SECRET_KEY is 32 bytes of base64.
// ajv's coercion would also change rules deployments rely on: it takes " 12" and "1e3" as integers and
// refuses a blank value and any boolean but true and false, where here an integer is digits only, a blank
// means unset and 1/0, yes/no, on/off are booleans. Its messages (`/PORT must be <= 65535`) name no remedy;
// these say what to run (openssl rand -base64 32). A schema would hold the simple half and leave the other
// half as code beside it, for one more dependency: the helpers below (text, integer, boolean, url) are that
// simple half.
import { hostname } from 'node:os';
import ipaddr from 'ipaddr.js';

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | null;
  /**
   * With DATABASE_URL: the longest wait for a database connection, and the longest a statement may run. Past
   * it the statement fails as "database unavailable" and a request answers 503 not_available (README: Faults).
   */
  databaseTimeoutSeconds: number;
  dataDir: string; // 'memory' for a throw-away embedded store
  mqttUrl: string | null;
  /**
   * The broker URL gateways are given in their credentials (GATEWAY_MQTT_URL): the address they dial, which
   * may differ from the one the service uses (a compose network's name, a TLS port). Null: derived.
   */
  gatewayMqttUrl: string | null;
  mqttPort: number;
  /** The embedded broker's listen address (HOST is the HTTP listener's only). */
  mqttHost: string;
  /**
   * The service's MQTT client id at MQTT_URL: its session there keeps what the service has not acknowledged
   * yet, to be delivered again when the same id reconnects. Stable and different for every instance.
   */
  mqttClientId: string;
  /** How long MQTT_URL's broker keeps the service's session (and what it queued for it) while it is away. */
  mqttSessionExpirySeconds: number;
  /**
   * Admin credentials of Mosquitto's dynamic-security control channel (MQTT_DYNSEC_USERNAME/_PASSWORD): with
   * them the service gives every gateway a broker account of its own. Needs MQTT_URL with the service's user.
   */
  mqttDynsec: { username: string; password: string } | null;
  /** Shared secret of the HTTP authentication and ACL endpoints a broker calls (EMQX); unset: no endpoints. */
  mqttHttpAuthSecret: string | null;
  /** The largest MQTT packet the embedded broker reads, fixed header included; a larger one closes the connection. */
  mqttMaxPacketBytes: number;
  /** Online access requests a second one gateway may keep up (four times as many at once); more go unanswered. */
  gatewayAccessRequestsPerSecond: number;
  redisUrl: string | null;
  /** Prefix of every Redis key, so that several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  publicUrl: string;
  adminToken: string | null;
  sandbox: boolean;
  /** The operator console at /console (docs/console.md); false leaves every /console path a 404. */
  consoleEnabled: boolean;
  /** List pages kept in memory per instance (platform/page-cache.ts); false reads every page from the database. */
  pageCacheEnabled: boolean;
  keyRevocationEnabled: boolean;
  webhookAllowHosts: string[];
  /** base64 of 32 bytes: the key webhook signing secrets are encrypted with; generated and kept when unset. */
  webhookSecretKey: string | null;
  /**
   * Which peers may set the client IP through X-Forwarded-For (Fastify's `trustProxy`): false, none; a
   * number, that many proxies counted from the right; or addresses and CIDR ranges of the proxies.
   */
  trustProxy: TrustProxy;
  brandName: string;
  /** smtp://user:pass@host:port for e-mail; unset: e-mail cannot be sent (outside the sandbox). */
  smtpUrl: string | null;
  smtpFrom: string;
  /** The SMS provider's HTTP endpoint (a JSON POST, see README) and its bearer credential. */
  smsUrl: string | null;
  smsToken: string | null;
  smsFrom: string;
  logLevel: string;
  /** LOG_FORMAT: `json` lines, `pretty` (pino-pretty) lines, or `auto`: pretty when stdout is a terminal. */
  logFormat: 'auto' | 'json' | 'pretty';
  /**
   * The longest a client may take to send a whole request, headers and body (Node's default is 300 s, which
   * let slow-body sockets be held for five minutes each); past it the answer is 408 and the socket closes.
   */
  requestTimeoutSeconds: number;
  /** Seconds before an unanswered unlock command becomes `timed_out`. */
  unlockTimeoutSeconds: number;
  /** UHPPOTE controllers (README "Real controllers"): where the service listens for their events (null: polled only). */
  controllerListen: { host: string; port: number } | null;
  /** The address:port controllers are told to send their events to (null: the listener's, when it is a concrete address). */
  controllerEventAddress: { host: string; port: number } | null;
  controllerPollSeconds: number;
  controllerReconcileMinutes: number;
  controllerTimeoutMs: number;
  /** Requests a minute per API key (and per IP without a bearer token). The spec fixes 600. */
  apiRateLimitPerMinute: number;
  /** The Prometheus listener's port (GET /metrics), apart from the API's; null: no listener (the default). */
  metricsPort: number | null;
  /** Where the metrics listener binds; loopback unless the scraper is elsewhere. */
  metricsHost: string;
}

export type TrustProxy = false | number | string[];

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | null {
  const value = env[name];
  return value === undefined || value.trim() === '' ? null : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name);
  if (raw === null) return fallback;
  const lower = raw.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(lower)) return true;
  if (['false', '0', 'no', 'off'].includes(lower)) return false;
  throw new ConfigError(name, `expected true or false, got "${raw}"`);
}

/**
 * A URL that does not parse, as an error may show it: its password (everything between the user's `:` and the last
 * `@`, where a password holding `/` or `@` makes the URL unparsable) and its query are hidden, since the message is
 * logged and configuration URLs carry credentials.
 */
export function maskedUrl(raw: string): string {
  return raw.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:).*@/is, '$1***@').replace(/\?.*$/s, '?***');
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = text(env, name);
  if (raw === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `not a valid URL: "${maskedUrl(raw)}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `expected a ${protocols.map((p) => p.replace(':', '://')).join(' or ')} URL`);
  }
  return raw;
}

function secretKey(env: Env, name: string): string | null {
  const raw = text(env, name);
  if (raw === null) return null;
  if (Buffer.from(raw, 'base64').length !== 32) throw new ConfigError(name, 'must be 32 bytes in base64 (openssl rand -base64 32)');
  return raw;
}

/** Both variables or neither; only in front of an external broker that names the service's own user. */
function mqttDynsec(env: Env, mqttUrl: string | null): Config['mqttDynsec'] {
  const username = text(env, 'MQTT_DYNSEC_USERNAME');
  const password = text(env, 'MQTT_DYNSEC_PASSWORD');
  if (username === null && password === null) return null;
  if (username === null) throw new ConfigError('MQTT_DYNSEC_USERNAME', 'must be set with MQTT_DYNSEC_PASSWORD');
  if (password === null) throw new ConfigError('MQTT_DYNSEC_PASSWORD', 'must be set with MQTT_DYNSEC_USERNAME');
  if (mqttUrl === null || new URL(mqttUrl).username === '') {
    throw new ConfigError('MQTT_DYNSEC_USERNAME', "needs MQTT_URL with the service's own broker user (mqtt://user:password@host:1883)");
  }
  return { username, password };
}

/** proxy-addr's names for ranges, accepted beside addresses and CIDRs. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY: `true` is one hop (the one proxy in front appends the address it saw, and only that entry is
 * believed); a number of hops; or the proxies' addresses and CIDRs. Never "every hop": the left-most entry
 * of X-Forwarded-For is whatever the client wrote.
 */
function trustProxy(env: Env): TrustProxy {
  const raw = text(env, 'TRUST_PROXY');
  if (raw === null) return false;
  const lower = raw.toLowerCase();
  if (['false', 'no', 'off'].includes(lower)) return false;
  if (['true', 'yes', 'on'].includes(lower)) return 1;
  if (/^\d+$/.test(raw)) {
    const hops = integer(env, 'TRUST_PROXY', 0, 0, 16);
    return hops === 0 ? false : hops;
  }
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.has(entry.toLowerCase())) continue;
    const valid = entry.includes('/') ? isCidr(entry) : ipaddr.isValid(entry);
    if (!valid) {
      throw new ConfigError('TRUST_PROXY', `expected true, false, a number of proxies or their addresses and CIDR ranges, got "${entry}"`);
    }
  }
  return entries.map((entry) => (PROXY_RANGE_NAMES.has(entry.toLowerCase()) ? entry.toLowerCase() : entry));
}

/**
 * Comma-separated host names as a URL's host reads them (lower case, IPv6 without brackets), each checked: a scheme,
 * a port, a path or a space in one would never match a webhook's host, and the exemption would silently not apply.
 */
function hostNames(env: Env, name: string): string[] {
  const hosts = (text(env, name) ?? '').split(',').map((h) => h.trim().toLowerCase()).filter((h) => h !== '');
  for (const host of hosts) {
    let parsed: string | null = null;
    try {
      parsed = new URL(`https://${host.includes(':') ? `[${host}]` : host}/`).hostname.replace(/^\[(.*)\]$/, '$1');
    } catch {
      // not a host
    }
    if (parsed !== host) {
      throw new ConfigError(name, `expected comma-separated host names such as localhost or receiver.internal, got "${host}"${parsed ? ` (as a URL's host: ${parsed})` : ''}`);
    }
  }
  return hosts;
}

/** `host:port` (IPv4 or a name; port 0..65535), or null when unset. */
function hostPort(env: Env, name: string): { host: string; port: number } | null {
  const raw = text(env, name);
  if (raw === null) return null;
  const match = /^([^:\s]+):(\d{1,5})$/.exec(raw);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new ConfigError(name, `expected host:port (for example 0.0.0.0:60001), got "${raw}"`);
  return { host: match[1] as string, port };
}

function isCidr(entry: string): boolean {
  try {
    ipaddr.parseCIDR(entry);
    return true;
  } catch {
    return false;
  }
}

/** METRICS_PORT: unset for no listener; 0 picks a free port (tests); never the API's own port. */
function metricsPort(env: Env, apiPort: number): number | null {
  if (text(env, 'METRICS_PORT') === null) return null;
  const port = integer(env, 'METRICS_PORT', 0, 0, 65535);
  if (port !== 0 && port === apiPort) throw new ConfigError('METRICS_PORT', `must differ from PORT (${apiPort}): metrics stay off the API's port`);
  return port;
}

export const MQTT_HTTP_AUTH_SECRET_MIN_LENGTH = 32;

export function loadConfig(env: Env = process.env): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535);
  const mqttUrl = url(env, 'MQTT_URL', ['mqtt:', 'mqtts:', 'tcp:', 'ws:', 'wss:']);
  const mqttHttpAuthSecret = text(env, 'MQTT_HTTP_AUTH_SECRET');
  if (mqttHttpAuthSecret !== null && mqttHttpAuthSecret.length < MQTT_HTTP_AUTH_SECRET_MIN_LENGTH) {
    throw new ConfigError('MQTT_HTTP_AUTH_SECRET', `must be at least ${MQTT_HTTP_AUTH_SECRET_MIN_LENGTH} characters (openssl rand -hex 32)`);
  }
  const publicUrl = url(env, 'PUBLIC_URL', ['http:', 'https:']) ?? `http://localhost:${port}`;
  const adminToken = text(env, 'ADMIN_TOKEN');
  if (adminToken !== null && adminToken.length < 16) {
    throw new ConfigError('ADMIN_TOKEN', 'must be at least 16 characters');
  }
  const brandName = text(env, 'BRAND_NAME') ?? 'Latchkey';
  if (/\s/.test(brandName)) throw new ConfigError('BRAND_NAME', 'must be one word');
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `unknown level "${logLevel}"`);
  }
  const logFormat = text(env, 'LOG_FORMAT') ?? 'auto';
  if (logFormat !== 'auto' && logFormat !== 'json' && logFormat !== 'pretty') {
    throw new ConfigError('LOG_FORMAT', `expected auto, json or pretty, got "${logFormat}"`);
  }
  return {
    port,
    host: text(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseTimeoutSeconds: integer(env, 'DATABASE_TIMEOUT_SECONDS', 10, 1, 3600),
    dataDir: text(env, 'DATA_DIR') ?? './data',
    mqttUrl,
    gatewayMqttUrl: url(env, 'GATEWAY_MQTT_URL', ['mqtt:', 'mqtts:', 'ws:', 'wss:']),
    mqttPort: integer(env, 'MQTT_PORT', 1884, 0, 65535),
    mqttHost: text(env, 'MQTT_HOST') ?? '0.0.0.0',
    // Not to be changed: a restart under another id starts a new session, and the old one keeps what came meanwhile.
    mqttClientId: text(env, 'MQTT_CLIENT_ID') ?? `latchkey-${hostname()}`,
    mqttSessionExpirySeconds: integer(env, 'MQTT_SESSION_EXPIRY_SECONDS', 3600, 0, 4_294_967_295),
    mqttDynsec: mqttDynsec(env, mqttUrl),
    mqttHttpAuthSecret,
    // 64 KiB: a door event is a few hundred bytes. 268,435,460 is the largest packet MQTT can frame.
    mqttMaxPacketBytes: integer(env, 'MQTT_MAX_PACKET_BYTES', 65_536, 1024, 268_435_460),
    gatewayAccessRequestsPerSecond: integer(env, 'GATEWAY_ACCESS_REQUESTS_PER_SECOND', 50, 1, 1_000_000),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: text(env, 'REDIS_KEY_PREFIX') ?? 'latchkey',
    publicUrl: publicUrl.replace(/\/+$/, ''),
    adminToken,
    sandbox: boolean(env, 'SANDBOX', false),
    consoleEnabled: boolean(env, 'CONSOLE_ENABLED', true),
    pageCacheEnabled: boolean(env, 'PAGE_CACHE_ENABLED', true),
    keyRevocationEnabled: boolean(env, 'KEY_REVOCATION_ENABLED', true),
    webhookAllowHosts: hostNames(env, 'WEBHOOK_ALLOW_HOSTS'),
    webhookSecretKey: secretKey(env, 'WEBHOOK_SECRET_KEY'),
    trustProxy: trustProxy(env),
    brandName,
    smtpUrl: url(env, 'SMTP_URL', ['smtp:', 'smtps:']),
    smtpFrom: text(env, 'SMTP_FROM') ?? `${brandName} <no-reply@localhost>`,
    smsUrl: url(env, 'SMS_URL', ['http:', 'https:']),
    smsToken: text(env, 'SMS_TOKEN'),
    smsFrom: text(env, 'SMS_FROM') ?? brandName,
    logLevel,
    logFormat,
    apiRateLimitPerMinute: integer(env, 'API_RATE_LIMIT_PER_MINUTE', 600, 1, 10_000_000),
    unlockTimeoutSeconds: integer(env, 'UNLOCK_TIMEOUT_SECONDS', 30, 1, 3600),
    requestTimeoutSeconds: integer(env, 'REQUEST_TIMEOUT_SECONDS', 30, 1, 300),
    controllerListen: hostPort(env, 'CONTROLLER_LISTEN'),
    controllerEventAddress: hostPort(env, 'CONTROLLER_EVENT_ADDRESS'),
    controllerPollSeconds: integer(env, 'CONTROLLER_POLL_SECONDS', 10, 1, 3600),
    controllerReconcileMinutes: integer(env, 'CONTROLLER_RECONCILE_MINUTES', 60, 1, 10_080),
    controllerTimeoutMs: integer(env, 'CONTROLLER_TIMEOUT_MS', 1000, 50, 30_000),
    metricsPort: metricsPort(env, port),
    metricsHost: text(env, 'METRICS_HOST') ?? '127.0.0.1',
  };
}
