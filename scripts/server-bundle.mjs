// The service as one ES module: esbuild bundles src/main.ts and what it imports (npm packages stay
// external), so `npm start` runs no TypeScript loader. tsx's hooks run on a thread of their own (a second V8
// isolate) and transpile at every start: the bundle saves that memory and start-up time (README: Architecture).
// Plain JavaScript: it runs before anything can run TypeScript.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
/** Under the project (git- and docker-ignored), so that the bundle's bare imports find its node_modules. */
export const BUNDLE = '.cache/server/latchkey.mjs';
/** Besides src/: what a bundle is built from (this file holds the build options). */
const INPUTS = ['package.json', 'package-lock.json', 'scripts/server-bundle.mjs'];

/** The newest modification time of the inputs, directories included (a deleted or renamed file changes its directory's). */
export async function newestInput(root) {
  let newest = 0;
  const visit = async (file) => {
    const info = await stat(file).catch(() => null);
    if (!info) return;
    newest = Math.max(newest, info.mtimeMs);
    if (info.isDirectory()) await Promise.all((await readdir(file)).map((name) => visit(path.join(file, name))));
  };
  await Promise.all([visit(path.join(root, 'src')), ...INPUTS.map((name) => visit(path.join(root, name)))]);
  return newest;
}

/**
 * Each source file's `import.meta.url` becomes its own URL, said relative to the bundle (which sits two levels
 * below the project): files found next to the source (migrations, the PGlite template, the console's web/,
 * package.json) are found from the bundle too, and still when the project directory moves.
 */
function ownImportMetaUrl(root, outDir) {
  return {
    name: 'own-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return { contents: source, loader: 'ts' };
        const relative = path.relative(outDir, args.path).split(path.sep).join('/');
        const own = `new URL(${JSON.stringify(relative)}, import.meta.url).href`;
        return { contents: source.replaceAll('import.meta.url', own), loader: 'ts', resolveDir: path.dirname(args.path) };
      });
    },
  };
}

/**
 * The embedded database's migrated template (src/platform/db/migrated-template.ts), built with the bundle so that
 * a first start on an empty data directory copies it instead of migrating: its writer is bundled beside the
 * service and run in a process of its own (PGlite and the migrations, about 2 s). Before the bundle is renamed
 * into place, so an up-to-date bundle comes with its template. A failure is reported and the build goes on: a
 * start without the template migrates, and says so if a migration fails.
 */
async function writeMigratedTemplate(esbuild, options, root, bundle) {
  const entry = path.join(root, 'src/write-migrated-template.ts');
  if (!existsSync(entry)) return; // a project without an embedded database (the bundle's own test)
  const writer = path.join(path.dirname(bundle), 'write-migrated-template.mjs');
  await esbuild.build({ ...options, entryPoints: [entry], outfile: writer });
  const result = spawnSync(process.execPath, [writer], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    process.stderr.write(`could not build the embedded database's migrated template (first starts will migrate instead):\n${result.stderr || result.error}\n`);
  }
}

/**
 * Builds `root`/.cache/server/latchkey.mjs from `root`/src/main.ts unless it is newer than every input, and
 * returns its path. Several processes may start at once (tests do): each writes a file of its own and renames
 * it into place, so a reader sees a whole bundle, old or new.
 */
export async function ensureServerBundle(root = PROJECT) {
  const bundle = path.join(root, BUNDLE);
  const newest = await newestInput(root);
  const built = await stat(bundle).catch(() => null);
  if (built && built.mtimeMs >= newest) return bundle;

  const esbuild = await import('esbuild');
  const temp = `${bundle}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const options = {
    absWorkingDir: root,
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Names as in the source (error classes, functions in logs), like tsx.
    keepNames: true,
    logLevel: 'error',
    plugins: [ownImportMetaUrl(root, path.dirname(bundle))],
  };
  try {
    await mkdir(path.dirname(bundle), { recursive: true });
    await esbuild.build({
      ...options,
      entryPoints: [path.join(root, 'src/main.ts')],
      outfile: temp,
      // For NODE_OPTIONS=--enable-source-maps (scripts/start.mjs); found by name next to the bundle.
      sourcemap: 'external',
      sourcesContent: false,
      footer: { js: `//# sourceMappingURL=${path.basename(bundle)}.map` },
    });
    await writeMigratedTemplate(esbuild, options, root, bundle);
    // Stamped with the inputs' time as read before the build (rounded up): a file saved during the build
    // is newer, so the next start builds again.
    const stamp = new Date(Math.ceil(newest) + 1);
    await utimes(temp, stamp, stamp);
    await rename(`${temp}.map`, `${bundle}.map`);
    await rename(temp, bundle);
  } finally {
    await esbuild.stop();
    await rm(temp, { force: true });
    await rm(`${temp}.map`, { force: true });
  }
  return bundle;
}
