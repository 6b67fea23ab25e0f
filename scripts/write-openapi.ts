// npm run openapi: writes docs/openapi.json from the route schemas. CI fails when the committed copy drifts.
import { writeFile } from 'node:fs/promises';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';

const config = loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'openapi-generation-only', PUBLIC_URL: 'http://localhost:8080' });
const db = await openDatabase(config);
const latchkey = await buildApp({ config, db, logger: false });
const document = latchkey.app.swagger();
await writeFile('docs/openapi.json', `${JSON.stringify(document, null, 2)}\n`);
await latchkey.close();
await db.close();
console.log('wrote docs/openapi.json');
