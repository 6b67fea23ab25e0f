// npm run openapi: writes docs/openapi.json (public API) and docs/operator-openapi.json (operator API) from the
// route schemas. Tests fail when a committed copy drifts. The operator document is written with SANDBOX=true,
// so that it describes the sandbox paths too (they exist only then).
import { writeFile } from 'node:fs/promises';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/platform/db/index.ts';

const config = loadConfig({
  DATA_DIR: 'memory',
  ADMIN_TOKEN: 'openapi-generation-only',
  PUBLIC_URL: 'http://localhost:8080',
  SANDBOX: 'true',
  MQTT_PORT: '0',
});
const db = await openDatabase(config);
const latchkey = await buildApp({ config, db, logger: false });
const write = (path: string, document: unknown) => writeFile(path, `${JSON.stringify(document, null, 2)}\n`);
await write('docs/openapi.json', latchkey.app.swagger());
await write('docs/operator-openapi.json', latchkey.app.operatorSwagger());
await latchkey.close();
await db.close();
console.log('wrote docs/openapi.json and docs/operator-openapi.json');
