// The console's and the CLI's API types are generated from the committed OpenAPI documents (npm run
// generate:client-types, scripts/client-types.ts): each file must be what the generator makes of its document
// today, so a hand edit of a generated file, or a document changed without regenerating, fails here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { CLIENT_TYPES, generate } from '../../scripts/client-types.ts';

for (const { document, output } of CLIENT_TYPES) {
  test(`${output} matches ${document} (run npm run generate:client-types after npm run openapi)`, async () => {
    const [generated, committed] = await Promise.all([generate(document), readFile(output, 'utf8')]);
    assert.ok(generated === committed, `${output} is stale: run npm run generate:client-types`);
  });
}
