// npm start runs the service from an esbuild bundle (scripts/start.mjs, scripts/server-bundle.mjs): built when
// the sources changed, with each source file's import.meta.url still its own, and the service it runs finds
// its migrations, the console's sources and the API docs' assets.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { BUNDLE, ensureServerBundle } from '../../scripts/server-bundle.mjs';
import { processStorage, startArguments, startServiceProcess } from '../helpers/process.ts';

const ADMIN = `lk_admin_${'b'.repeat(43)}`;

test('the bundle is built when missing or older than a source, keeps every file its own import.meta.url, and still when the project moves', async () => {
  const root = await mkdtemp(path.join(tmpdir(), 'latchkey-bundle-'));
  const moved = `${root}-moved`;
  try {
    await writeFile(path.join(root, 'package.json'), '{"type": "module"}');
    await mkdir(path.join(root, 'src/deep'), { recursive: true });
    await writeFile(path.join(root, 'src/main.ts'), "export { beside } from './deep/beside.ts';\nexport const here: string = import.meta.url;\n");
    await writeFile(path.join(root, 'src/deep/beside.ts'), "export const beside = new URL('../db/migrations/', import.meta.url).href;\n");

    const bundle = await ensureServerBundle(root);
    assert.equal(bundle, path.join(root, BUNDLE));
    const built = await import(`${pathToFileURL(bundle).href}?1`);
    assert.equal(built.here, pathToFileURL(path.join(root, 'src/main.ts')).href);
    assert.equal(built.beside, pathToFileURL(path.join(root, 'src/db/migrations/')).href);
    assert.ok(!(await readFile(bundle, 'utf8')).includes(root), 'no absolute path in the bundle');

    const mtime = async () => (await stat(bundle)).mtimeMs;
    const first = await mtime();
    await ensureServerBundle(root);
    assert.equal(await mtime(), first, 'not built again while the sources are older');

    await writeFile(path.join(root, 'src/deep/beside.ts'), "export const beside = 'changed';\n");
    await ensureServerBundle(root);
    const second = await mtime();
    assert.notEqual(second, first, 'built again after a source changed');
    assert.equal((await import(`${pathToFileURL(bundle).href}?2`)).beside, 'changed');

    await writeFile(path.join(root, 'src/deep/unused.ts'), 'export {};\n');
    await ensureServerBundle(root);
    assert.notEqual(await mtime(), second, 'built again after a file was added (its directory changed)');

    await rename(root, moved);
    const movedBundle = await ensureServerBundle(moved);
    assert.equal((await import(`${pathToFileURL(movedBundle).href}?3`)).here, pathToFileURL(path.join(moved, 'src/main.ts')).href);
  } finally {
    await rm(root, { recursive: true, force: true });
    await rm(moved, { recursive: true, force: true });
  }
});

test('npm start runs the bundle with plain node, no tsx', () => {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } };
  assert.match(pkg.scripts.start, /^node (--\S+ )*scripts\/start\.mjs$/);
  assert.ok(!startArguments.includes('tsx'));
});

test('the bundled service applies its migrations and serves the console bundle and the API docs assets', async () => {
  const storage = await processStorage('bundle');
  const service = await startServiceProcess({ ...storage.env, ADMIN_TOKEN: ADMIN });
  try {
    assert.deepEqual(readFileSync(`/proc/${service.child.pid}/cmdline`, 'utf8').split('\0').slice(1, -1), startArguments);
    // Migrations: the schema is there (an account and its root location are written and read back).
    const created = await fetch(`${service.url}/admin/v1/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bundled' }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    assert.equal(((await created.json()) as { root_location: { name: string } }).root_location.name, 'Bundled');

    // The console's bundle is built from src/modules/console/web.
    const app = await fetch(`${service.url}/console/assets/app.js`);
    assert.equal(app.status, 200);
    assert.match(app.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.ok((await app.text()).length > 10_000);

    // The API reference's assets come from swagger-ui-dist, resolved from src/platform/api-docs.ts.
    const docs = await fetch(`${service.url}/docs/assets/swagger-ui-bundle.js`);
    assert.equal(docs.status, 200);
    assert.ok((await docs.text()).length > 100_000);
    assert.equal((await fetch(`${service.url}/docs`)).status, 200);
  } finally {
    service.child.kill('SIGTERM');
    assert.equal(await service.exited, 0);
    await storage.cleanup();
  }
});

test('packages only some configurations use are loaded when used, not by every start', async () => {
  // Each took 50 to 130 ms of a start (bench/RESULTS.md, start-up): ioredis (REDIS_URL), undici (the first
  // webhook attempt), mqtt.js (an external broker), @simplewebauthn/server (the first passkey ceremony),
  // node-postgres (DATABASE_URL).
  const text = await readFile(await ensureServerBundle(), 'utf8');
  for (const name of ['ioredis', 'undici', 'mqtt', '@simplewebauthn/server', 'pg']) {
    const quoted = name.replace(/[/@]/g, (c) => `\\${c}`);
    assert.doesNotMatch(text, new RegExp(`^import\\b[^;]*from "${quoted}";`, 'm'), `${name} imported statically`);
    assert.match(text, new RegExp(`import\\("${quoted}"\\)`), `${name} loaded where it is used`);
  }
});
