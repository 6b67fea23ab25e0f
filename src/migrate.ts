// npm run migrate: applies the database migrations and exits, without starting the service, so that a
// deploy can migrate first. Safe beside instances starting at the same time (the migration lock).
// Reads the same variables as the service (DATABASE_URL or DATA_DIR, LOG_LEVEL, LOG_FORMAT).
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrateDatabase } from './platform/db/index.ts';
import { createLogger, startupLogger } from './platform/logger.ts';
import { logFailedStart, parts, secretsOf, startPart } from './platform/startup.ts';
import { shownUrl } from './platform/logging.ts';

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  const log = await createLogger({ level: 'info', format: 'auto' });
  log.fatal({ variable: error.variable }, `invalid configuration: ${error.message}`);
  process.exit(1);
}
const log = startupLogger(await createLogger({ level: config.logLevel, format: config.logFormat }));
log.info(
  `migrating ${config.databaseUrl ? `PostgreSQL at ${shownUrl(config.databaseUrl)} (DATABASE_URL)` : `the embedded database in ${config.dataDir} (DATA_DIR)`}`,
);
try {
  const applied = await startPart(parts.database(config), () => migrateDatabase(config, { progress: (message) => log.info(message) }));
  log.info({ applied }, applied.length === 0 ? 'nothing to migrate' : `applied ${applied.length} migrations`);
  process.exit(0);
} catch (error) {
  logFailedStart(log, error, secretsOf(config), 'migration failed');
  process.exit(1);
}
