// Start-up: config -> ports -> database -> app -> listen; graceful shutdown on SIGTERM/SIGINT. Every line it writes
// is a log line (platform/logger.ts): what the service uses, progress, and a failure naming its part.
import type { Logger } from 'pino';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { openDatabase } from './platform/db/index.ts';
import { FASTIFY_LISTEN_TEXT, createLogger, startupLogger } from './platform/logger.ts';
import { checkPortFree, holdPort, logFailedStart, logWhatIsUsed, parts, secretsOf, startPart } from './platform/startup.ts';
import { VERSION } from './version.ts';


async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      // Before the configuration is known: the default level and format.
      const log = await createLogger({ level: 'info', format: 'auto' });
      log.fatal({ variable: error.variable }, `invalid configuration: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const log = await createLogger({ level: config.logLevel, format: config.logFormat });
  try {
    await start(config, log);
  } catch (error) {
    logFailedStart(startupLogger(log), error, secretsOf(config));
    process.exit(1);
  }
}

async function start(given: Config, log: Logger): Promise<void> {
  const startup = startupLogger(log);
  logWhatIsUsed(startup, given, VERSION);
  const progress = (message: string) => startup.info(message);

  // The ports first: one in use fails the start before the database is migrated or a broker session opened. A
  // given port is let go at once, so that during the start a client is refused as before rather than accepted
  // and dropped; PORT=0 is held until the app listens on it, and PUBLIC_URL's default (links) carries it.
  const httpPort = await startPart(parts.http(given), () => holdPort(given.port, given.host));
  if (given.port !== 0) await httpPort.release();
  const config = httpPort.port === given.port ? given : loadConfig({ ...process.env, PORT: String(httpPort.port) });
  if (!config.mqttUrl) await checkPortFree(parts.broker(config), config.mqttPort, config.mqttHost);
  if (config.metricsPort !== null) await checkPortFree(parts.metrics(config), config.metricsPort, config.metricsHost);

  const db = await startPart(parts.database(config), () => openDatabase(config, { progress }));
  const latchkey = await buildApp({ config, db, logger: log });
  const { app } = latchkey;

  // Fastify's own "Server listening at" lines (one per interface) are dropped by the logger: one line below.
  await httpPort.release();
  await startPart(parts.http(config), () => app.listen({ port: config.port, host: config.host, listenTextResolver: () => FASTIFY_LISTEN_TEXT }));
  // A generated operator token is kept only now that the service listens, and written once; only its hash is
  // kept. A start that failed before this point (a busy port) has kept nothing: the next start makes another.
  const generatedToken = await latchkey.keepGeneratedAdminToken();
  if (generatedToken) startup.info(`admin token (shown once, keep it): ${generatedToken}`);
  latchkey.jobs.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    startup.info({ signal }, 'shutting down');
    // Stop accepting, finish in-flight requests, stop jobs, flush logs, then close the database.
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, 20_000);
    force.unref();
    try {
      await latchkey.close();
      await db.close();
      startup.info('stopped');
      process.exit(0);
    } catch (error) {
      log.error({ err: error }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  // Last, once the signals are handled: whoever waits for this line may stop the service at once.
  if (latchkey.mqttUrl) startup.info(`embedded MQTT broker on ${latchkey.mqttUrl}`);
  if (latchkey.metricsUrl) startup.info(`Prometheus metrics on ${latchkey.metricsUrl} (METRICS_PORT)`);
  startup.info(`listening on http://${shownHost}:${port}`);
}

void main();
