// Start-up: config -> database -> app -> listen; graceful shutdown on SIGTERM/SIGINT.
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { openDatabase } from './platform/db/index.ts';
import { describeFailure } from './platform/logging.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Invalid configuration: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }

  const db = await openDatabase(config);
  const latchkey = await buildApp({ config, db });
  const { app } = latchkey;

  if (latchkey.generatedAdminToken) {
    // Printed once, on the start that generated it; only its hash is kept.
    console.log(`admin token (shown once, keep it): ${latchkey.generatedAdminToken}`);
  }

  await app.listen({ port: config.port, host: config.host });
  latchkey.jobs.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const shownHost = config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host;
  if (latchkey.mqttUrl) console.log(`embedded MQTT broker on ${latchkey.mqttUrl}`);
  console.log(`listening on http://${shownHost}:${port}`);

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    // Stop accepting, finish in-flight requests, stop jobs, flush logs, then close the database.
    const force = setTimeout(() => {
      console.error('shutdown took too long; exiting');
      process.exit(1);
    }, 20_000);
    force.unref();
    try {
      await latchkey.close();
      await db.close();
      process.exit(0);
    } catch (error) {
      console.error('error during shutdown', error);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  // The whole chain with its stacks: "connect ECONNREFUSED" alone does not say what was being connected.
  console.error(`Latchkey failed to start: ${describeFailure(error)}`);
  process.exit(1);
});
