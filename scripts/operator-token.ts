// npm run operator-token -- --reset: makes a new operator token for the configured data store (DATA_DIR or
// DATABASE_URL, as the service reads them), keeps its hash in place of the old one and prints it once. The
// operator token is never stored in the clear, so a lost one cannot be shown again, only replaced. On the
// embedded database stop the service first; on PostgreSQL restart every instance afterwards (each reads the
// token's hash at start). With ADMIN_TOKEN set the service uses that one, and there is nothing to reset.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../src/config.ts';
import { resetAdminToken } from '../src/platform/admin-token.ts';
import { openDatabase } from '../src/platform/db/index.ts';
import { shownUrl } from '../src/platform/logging.ts';

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { reset: { type: 'boolean', default: false } } });
  const config = loadConfig();
  if (config.adminToken) {
    console.error('ADMIN_TOKEN is set: the service uses it as the operator token. To change the token, change ADMIN_TOKEN and restart.');
    return 2;
  }
  if (!values.reset) {
    console.error(
      'The operator token is kept only as a hash and cannot be shown again. `npm run operator-token -- --reset` makes a new one ' +
        '(the old one stops working), or set ADMIN_TOKEN (at least 16 characters) and restart.',
    );
    return 2;
  }
  const where = config.databaseUrl ? `PostgreSQL at ${shownUrl(config.databaseUrl)} (DATABASE_URL)` : `the embedded database in ${config.dataDir} (DATA_DIR)`;
  const db = await openDatabase(config);
  try {
    const token = await resetAdminToken(db);
    console.log(`new operator token for ${where} (shown once, keep it): ${token}`);
    console.log(
      config.databaseUrl
        ? 'Restart every instance: each reads the token at start; until then they accept the old one.'
        : 'Start the service: it accepts this token and no longer the old one.',
    );
    return 0;
  } finally {
    await db.close();
  }
}

try {
  process.exit(await main());
} catch (error) {
  if (error instanceof ConfigError) console.error(`invalid configuration: ${error.message}`);
  else console.error(`no new operator token: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
