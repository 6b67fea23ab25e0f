// npm run generate:client-types: the console's and the CLI's types of the operator API, generated from the
// committed document by openapi-typescript with the SDK's options (the public API's are the SDK's own file,
// packages/sdk: `npm run generate`, which the console reads too), so no client keeps a hand copy of a shape.
// test/platform/client-types.test.ts fails when a file drifts. The operator types are written twice, once in
// each package, because the CLI is a package of its own that cannot reach the service's source.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

/** Each generated file (relative to the repository) and the document it is made from. */
export const CLIENT_TYPES = [
  { document: 'docs/operator-openapi.json', output: 'src/modules/console/web/openapi/operator.ts' },
  { document: 'docs/operator-openapi.json', output: 'packages/cli/src/operator-openapi.ts' },
] as const;

/** What openapi-typescript makes of `document` (its standard output, which is what --output writes). */
export async function generate(document: string): Promise<string> {
  const cli = path.join(path.dirname(require.resolve('openapi-typescript/package.json')), 'bin/cli.js');
  const { stdout } = await run(process.execPath, [cli, document, '--default-non-nullable=false'], { maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const { document, output } of CLIENT_TYPES) {
    await writeFile(output, await generate(document));
    console.log(`wrote ${output} from ${document}`);
  }
}
