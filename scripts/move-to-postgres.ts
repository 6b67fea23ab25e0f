// npm run move-to-postgres -- [--data-dir ./data] [--to postgres://…]: moves an embedded data directory into an
// empty PostgreSQL database (README: "From embedded to PostgreSQL"). Stop the service first: the embedded
// database is one process's (a live directory is refused at once, naming the process that holds it). Defaults: DATA_DIR and DATABASE_URL from the environment.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DataDirectoryInUse } from '../src/platform/db/data-dir-lock.ts';
import { openPglite, type PgliteDatabase } from '../src/platform/db/pglite.ts';
import { openPostgres } from '../src/platform/db/postgres.ts';
import { transferDatabase, TransferRefused } from '../src/platform/db/transfer.ts';
import { shownUrl } from '../src/platform/logging.ts';

const { values } = parseArgs({ options: { 'data-dir': { type: 'string' }, to: { type: 'string' } } });
const dataDir = values['data-dir'] ?? process.env.DATA_DIR ?? './data';
const to = values.to ?? process.env.DATABASE_URL;

async function main(): Promise<number> {
  if (!to || !/^postgres(ql)?:\/\//.test(to)) {
    console.error('Give the target with --to postgres://user:password@host:5432/database (or DATABASE_URL).');
    return 2;
  }
  if (!existsSync(`${dataDir}/pg`)) {
    console.error(`No embedded database in ${dataDir} (looked for ${dataDir}/pg); give it with --data-dir.`);
    return 2;
  }
  console.log(`moving the embedded database in ${dataDir} into ${shownUrl(to)}`);
  let source: PgliteDatabase;
  try {
    source = await openPglite({ dataDir: `${dataDir}/pg` });
  } catch (error) {
    // The service (or another command) still runs on the directory: one line naming it, nothing moved.
    if (!(error instanceof DataDirectoryInUse)) throw error;
    console.error(`Nothing was moved: ${error.message}.`);
    return 1;
  }
  const target = await openPostgres({ connectionString: to, maxConnections: 2 });
  try {
    const result = await transferDatabase(source, target, ({ table, rows }) => console.log(`  ${table}: ${rows} rows`));
    console.log(`moved ${result.rows} rows in ${result.tables.length} tables; start the service with DATABASE_URL set to that database`);
    return 0;
  } catch (error) {
    if (error instanceof TransferRefused) {
      console.error(`Nothing was moved: ${error.message}.`);
      return 1;
    }
    const code = (error as { code?: unknown }).code;
    console.error(`Nothing was moved: ${error instanceof Error ? error.message : String(error)}${typeof code === 'string' ? ` [${code}]` : ''}`);
    return 1;
  } finally {
    await source.close();
    await target.close();
  }
}

process.exit(await main());
