// npm test: the whole suite on the embedded database, then again on server PostgreSQL when
// TEST_DATABASE_URL is set. Extra arguments are passed to node --test (e.g. a file list).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return testFiles(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

const args = process.argv.slice(2);
// Arguments are test files or folders of them (npm run test:unit passes test/unit).
const files = (args.length > 0 ? args : ['test']).flatMap((arg) => (!arg.startsWith('-') && statSync(arg).isDirectory() ? testFiles(arg).sort() : [arg]));
const backends = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];

let failed = false;
for (const backend of backends) {
  console.log(`\n# Latchkey tests on ${backend === 'pglite' ? 'embedded PGlite' : 'PostgreSQL'}\n`);
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-timeout=120000', ...files],
    {
      stdio: 'inherit',
      // The webhook tests' local HTTPS receiver uses a self-signed certificate (test fixture), trusted
      // the way an operator would trust a private CA.
      env: { ...process.env, LATCHKEY_TEST_BACKEND: backend, NODE_EXTRA_CA_CERTS: path.resolve('test/fixtures/tls/cert.pem') },
    },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
