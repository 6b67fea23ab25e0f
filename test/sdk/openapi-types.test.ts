// The SDK is generated from and checked against docs/openapi.json: its types (packages/sdk/src/openapi.ts,
// made by `npm run generate -w @latchkey/sdk`) must be what the generator makes of the committed document,
// every operation of the document must have its SDK call, and the SDK must compile with the Web platform's
// types only (no Node), as it runs on Deno, Bun and browsers too.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const binOf = (pkg: string, bin: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), bin);

test('packages/sdk/src/openapi.ts matches docs/openapi.json (run npm run generate -w @latchkey/sdk after npm run openapi)', async () => {
  const { stdout } = await run(process.execPath, [binOf('openapi-typescript', 'bin/cli.js'), 'docs/openapi.json', '--default-non-nullable=false'], { maxBuffer: 64 * 1024 * 1024 });
  const committed = await readFile('packages/sdk/src/openapi.ts', 'utf8');
  assert.ok(stdout === committed, 'packages/sdk/src/openapi.ts is stale: run npm run generate -w @latchkey/sdk');
});

test('every operation of docs/openapi.json has a call in the SDK', async () => {
  const document = JSON.parse(await readFile('docs/openapi.json', 'utf8')) as { paths: Record<string, Record<string, unknown>> };
  const dir = 'packages/sdk/src/resources';
  const sources = (await Promise.all((await readdir(dir)).map((name) => readFile(path.join(dir, name), 'utf8')))).join('\n');
  const missing = Object.entries(document.paths).flatMap(([route, methods]) =>
    Object.keys(methods)
      .filter((method) => !sources.includes(`this.api.${method.toUpperCase()}('${route}'`))
      .map((method) => `${method.toUpperCase()} ${route}`),
  );
  assert.deepEqual(missing, []);
});

test('the SDK compiles with ES2022 and the DOM types only (tsconfig.build.json, no Node types)', async () => {
  await run(process.execPath, [binOf('typescript', 'bin/tsc'), '-p', 'packages/sdk/tsconfig.build.json', '--noEmit']).catch((error: { stdout?: string }) => {
    assert.fail(error.stdout ?? String(error));
  });
});
