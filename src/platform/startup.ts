// Start-up as an operator reads it: what the service uses, and when a part fails, which part and the
// variable that configures it. Never a password: URLs are shown without theirs, and a failure's text is
// scrubbed of every secret the configuration holds.
import { createServer } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import { DataDirectoryInUse } from './db/data-dir-lock.ts';
import { loggableError, shownUrl } from './logging.ts';

/** A part of the service (database, broker, listener) that could not start, named with its setting. */
export class StartupFailure extends Error {
  constructor(
    readonly part: string,
    /** The variable that configures the part, as `NAME=value` without a password. */
    readonly setting: string,
    problem: string,
    cause: unknown,
  ) {
    super(`${part} (${setting}) ${problem}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StartupFailure';
  }
}
StartupFailure.prototype.name = 'StartupFailure';

export interface StartupPart {
  part: string;
  setting: string;
  /** What to say when it fails for another reason than the network: "could not start", "failed". */
  problem?: string;
  /** What to say when a broker refuses the credentials given (an MQTT CONNACK code). */
  refusedCredentials?: string;
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE']);
const NETWORK_MESSAGES = /^(timeout exceeded when trying to connect|Connection terminated|connack timeout|connect ETIMEDOUT)/i;

function unreachable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if ((typeof code === 'string' && NETWORK_CODES.has(code)) || NETWORK_MESSAGES.test(e.message)) return true;
    // AggregateError (a host name with several addresses, each refused).
    if (e instanceof AggregateError && e.errors.some((inner) => unreachable(inner))) return true;
  }
  return false;
}

/** An MQTT CONNACK refusing the credentials: 4 or 5 (MQTT 3.1.1), 134 or 135 (MQTT 5). */
function credentialsRefused(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return [4, 5, 134, 135].includes(code as number) || /not authorized|bad user ?name or password/i.test((error as Error | null)?.message ?? '');
}

/** Runs one part's start; a failure leaves as a StartupFailure naming the part and its variable. */
export async function startPart<T>(part: StartupPart, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof StartupFailure) throw error;
    const code = (error as { code?: unknown } | null)?.code;
    const problem =
      code === 'EADDRINUSE'
        ? 'cannot listen, the port is in use'
        : unreachable(error)
          ? 'is not reachable'
          : part.refusedCredentials && credentialsRefused(error)
            ? part.refusedCredentials
            : (part.problem ?? 'failed');
    throw new StartupFailure(part.part, part.setting, problem, error);
  }
}

export const parts = {
  database(config: Pick<Config, 'databaseUrl' | 'dataDir'>): StartupPart {
    return config.databaseUrl
      ? { part: 'the database', setting: `DATABASE_URL=${shownUrl(config.databaseUrl)}` }
      : { part: 'the embedded database', setting: `DATA_DIR=${config.dataDir}`, problem: 'could not be opened' };
  },
  broker(config: Pick<Config, 'mqttUrl' | 'mqttPort' | 'mqttHost'>): StartupPart {
    return config.mqttUrl
      ? {
          part: 'the MQTT broker',
          setting: `MQTT_URL=${shownUrl(config.mqttUrl)}`,
          refusedCredentials:
            "refused the user and password of MQTT_URL (with Mosquitto's dynamic security, a user the service made before keeps the password it was made with: docs/brokers.md, changing the service's password)",
        }
      : { part: 'the embedded MQTT broker', setting: `MQTT_HOST=${config.mqttHost}, MQTT_PORT=${config.mqttPort}`, problem: 'could not start' };
  },
  dynsec(config: Pick<Config, 'mqttUrl' | 'mqttDynsec'>): StartupPart {
    const url = config.mqttUrl ? shownUrl(config.mqttUrl) : '';
    return {
      part: "the MQTT broker's dynamic-security control",
      setting: `MQTT_URL=${url}, MQTT_DYNSEC_USERNAME=${config.mqttDynsec?.username ?? ''}`,
    };
  },
  http(config: Pick<Config, 'host' | 'port'>): StartupPart {
    return { part: 'the HTTP listener', setting: `HOST=${config.host}, PORT=${config.port}`, problem: 'could not start' };
  },
  metrics(config: Pick<Config, 'metricsHost' | 'metricsPort'>): StartupPart {
    return { part: 'the metrics listener', setting: `METRICS_HOST=${config.metricsHost}, METRICS_PORT=${config.metricsPort}`, problem: 'could not start' };
  },
};

/** A port taken until `release`, by a listener that drops whatever connects. */
export interface HeldPort {
  /** The port held: the one asked for, or the free port chosen for 0. */
  port: number;
  release(): Promise<void>;
}

/**
 * Takes the port before the start opens anything else, so that a port in use fails the start with nothing migrated
 * and no broker session opened, and so that PORT=0 is a known port (links carry it) before the app is built. While
 * held, a client that connects is dropped.
 */
export async function holdPort(port: number, host: string): Promise<HeldPort> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  let released: Promise<void> | null = null;
  return {
    port: typeof address === 'object' && address ? address.port : port,
    // Once: a second call waits for the first.
    release: () => (released ??= new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}

/** Fails at once when a port the start will listen on later (broker, metrics) is taken; 0 is always free. */
export async function checkPortFree(part: StartupPart, port: number, host: string): Promise<void> {
  if (port === 0) return;
  await startPart(part, async () => (await holdPort(port, host)).release());
}

/** The lines saying what this start uses, before it opens anything (so a failure after them reads in context). */
export function logWhatIsUsed(log: Logger, config: Config, version: string): void {
  log.info({ version, node: process.version }, `starting Latchkey ${version} on Node ${process.version}`);
  if (config.databaseUrl) {
    log.info({ database: 'postgres' }, `database: PostgreSQL at ${shownUrl(config.databaseUrl)} (DATABASE_URL)`);
  } else if (config.dataDir === 'memory') {
    log.info({ database: 'embedded' }, 'database: embedded, in memory: nothing is kept when the process ends (DATA_DIR=memory)');
  } else {
    log.info({ database: 'embedded' }, `database: embedded (PGlite) in ${config.dataDir} (DATA_DIR)`);
  }
  if (config.mqttUrl) {
    const dynsec = config.mqttDynsec ? `, gateway accounts through dynamic security as ${config.mqttDynsec.username}` : '';
    log.info({ broker: 'external' }, `MQTT broker: ${shownUrl(config.mqttUrl)} (MQTT_URL), client id ${config.mqttClientId}${dynsec}`);
  } else {
    log.info({ broker: 'embedded' }, `MQTT broker: embedded, on ${config.mqttPort === 0 ? 'any free port' : `port ${config.mqttPort}`} (MQTT_PORT)`);
  }
  if (config.redisUrl) {
    log.info({ rateLimits: 'redis' }, `rate limits: shared in Redis at ${shownUrl(config.redisUrl)} (REDIS_URL), keys prefixed ${config.redisKeyPrefix}`);
  } else {
    log.info({ rateLimits: 'memory' }, 'rate limits: counted in this process (REDIS_URL unset)');
  }
  log.info(
    { sandbox: config.sandbox, console: config.consoleEnabled },
    `sandbox: ${config.sandbox ? 'on (SANDBOX=true)' : 'off'}; operator console: ${config.consoleEnabled ? 'on at /console' : 'off (CONSOLE_ENABLED=false)'}`,
  );
}

/** Every secret the configuration holds, as written and as percent-decoded (URL passwords). */
export function secretsOf(config: Config): string[] {
  const secrets: string[] = [];
  for (const raw of [config.databaseUrl, config.mqttUrl, config.redisUrl, config.smtpUrl, config.smsUrl]) {
    if (!raw) continue;
    try {
      const url = new URL(raw);
      if (url.password) secrets.push(url.password, decodeURIComponent(url.password));
      for (const [name, value] of url.searchParams) if (/pass|secret|token|key/i.test(name)) secrets.push(value);
    } catch {
      // loadConfig checked the URL
    }
  }
  secrets.push(
    ...[config.mqttDynsec?.password, config.adminToken, config.webhookSecretKey, config.smsToken, config.mqttHttpAuthSecret].filter(
      (s): s is string => typeof s === 'string',
    ),
  );
  // A very short secret would mangle every line it happens to occur in; loadConfig asks for long ones.
  return [...new Set(secrets)].filter((s) => s.length >= 4);
}

function scrub<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  let text = JSON.stringify(value);
  for (const secret of secrets) text = text.split(JSON.stringify(secret).slice(1, -1)).join('[redacted]');
  return JSON.parse(text) as T;
}

/** The last line of a failed start: what failed, the variable, and the error chain with stacks. */
export function logFailedStart(log: Logger, error: unknown, secrets: readonly string[], what = 'Latchkey failed to start'): void {
  const named = error instanceof StartupFailure ? { part: error.part, setting: error.setting } : {};
  const message = error instanceof Error ? error.message : String(error);
  // A data directory held by another process: the line names the holder, and a stack would add nothing.
  const inUse = error instanceof DataDirectoryInUse ? error : error instanceof Error && error.cause instanceof DataDirectoryInUse ? error.cause : null;
  if (inUse) {
    log.fatal({ ...named, holder: inUse.holder, lockFile: inUse.lockFile }, `${what}: ${scrub(message, secrets)}`);
    return;
  }
  // The error is serialised (and scrubbed) here already: the logger's own err serializer would see a plain object.
  const raw = log.child({}, { serializers: { err: (e: unknown) => e } });
  raw.fatal(scrub({ ...named, err: loggableError(error) }, secrets), `${what}: ${scrub(message, secrets)}`);
}
