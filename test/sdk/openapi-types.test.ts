// The SDK's types are generated from docs/openapi.json (npm run generate -w @latchkey/sdk): the committed
// packages/sdk/src/openapi.ts must be what the generator makes of the committed document today.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

test('packages/sdk/src/openapi.ts matches docs/openapi.json (run npm run generate -w @latchkey/sdk after npm run openapi)', async () => {
  const manifest = createRequire(import.meta.url).resolve('openapi-typescript/package.json');
  const cli = path.join(path.dirname(manifest), 'bin/cli.js');
  const { stdout } = await promisify(execFile)(process.execPath, [cli, 'docs/openapi.json'], { maxBuffer: 64 * 1024 * 1024 });
  const committed = await readFile('packages/sdk/src/openapi.ts', 'utf8');
  assert.ok(stdout === committed, 'packages/sdk/src/openapi.ts is stale: run npm run generate -w @latchkey/sdk');
});
