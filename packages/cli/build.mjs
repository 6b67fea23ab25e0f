// The CLI as plain JavaScript: esbuild bundles src/main.ts and what it imports into dist/ (npm packages stay
// external), so a call runs no TypeScript loader. @latchkey/sdk is used by name, as its package.json exports
// it: its dist/, built by tsc (its own `prepare`). `npm ci` builds both (the workspaces' `prepare` scripts, in
// dependency order); bin/latchkey.js rebuilds when a source is newer than the build (after a `git pull`, or a
// change to the CLI or the SDK), so a checkout never runs stale code.
// Plain JavaScript with only node: imports at the top: the bin loads this file on every call for isFresh().
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE = fileURLToPath(new URL('.', import.meta.url));
const DIST = path.join(PACKAGE, 'dist');
/** What the bin imports. */
export const ENTRY = path.join(DIST, 'latchkey.mjs');
/** The files the bundle was built from (esbuild's metafile inputs), relative to this package. */
const MANIFEST = path.join(DIST, 'inputs.json');
const SDK = path.resolve(PACKAGE, '../sdk');
const SDK_BUILT = path.join(SDK, 'dist/index.js');

function mtime(file) {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return null;
  }
}

/** The newest modification time under `dir` (directories included: a deleted file changes its directory's). */
function newestUnder(dir) {
  let newest = mtime(dir) ?? 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(full) : (mtime(full) ?? 0));
  }
  return newest;
}

function sdkFresh() {
  const built = mtime(SDK_BUILT);
  return built !== null && built >= Math.max(newestUnder(path.join(SDK, 'src')), mtime(path.join(SDK, 'tsconfig.build.json')) ?? 0);
}

/** True when dist/ holds a build newer than every file it was made from (and than the SDK's sources). */
export function isFresh() {
  const built = mtime(ENTRY);
  if (built === null) return false;
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(MANIFEST, 'utf8'));
  } catch {
    return false;
  }
  for (const input of [...inputs, 'build.mjs', 'package.json']) {
    const changed = mtime(path.join(PACKAGE, input));
    if (changed === null || changed > built) return false;
  }
  return sdkFresh();
}

/** Builds the SDK's dist/ when its sources are newer (what its `prepare` script does). */
function buildSdk() {
  if (sdkFresh()) return;
  const tsc = createRequire(path.join(SDK, 'package.json')).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', path.join(SDK, 'tsconfig.build.json')], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error('building @latchkey/sdk failed (tsc -p packages/sdk/tsconfig.build.json)');
}

/**
 * Builds dist/. Several processes may build at once (tests start many CLIs): each builds into a directory of
 * its own and moves the files into place, the entry last, so a reader sees a whole build, old or new.
 */
export async function build() {
  buildSdk();
  const esbuild = await import('esbuild');
  const temp = path.join(DIST, `.build-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    const result = await esbuild.build({
      absWorkingDir: PACKAGE,
      entryPoints: { latchkey: 'src/main.ts' },
      outdir: temp,
      outExtension: { '.js': '.mjs' },
      // The gateway simulator (mqtt, the decision code) is its own chunk, loaded by `gateway simulate` only.
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
      bundle: true,
      packages: 'external',
      platform: 'node',
      format: 'esm',
      target: 'node20',
      keepNames: true,
      metafile: true,
      logLevel: 'error',
    });
    const inputs = Object.keys(result.metafile.inputs).filter((input) => !input.includes('node_modules/'));
    mkdirSync(path.join(DIST, 'chunks'), { recursive: true });
    const written = Object.keys(result.metafile.outputs).map((output) => path.relative(temp, path.join(PACKAGE, output)));
    // Chunks are named by their content, so moving one over an existing one changes nothing for a reader.
    for (const file of written.filter((name) => name.startsWith('chunks'))) renameSync(path.join(temp, file), path.join(DIST, file));
    writeFileSync(path.join(temp, 'inputs.json'), `${JSON.stringify(inputs, null, 2)}\n`);
    renameSync(path.join(temp, 'inputs.json'), MANIFEST);
    renameSync(path.join(temp, 'latchkey.mjs'), ENTRY);
    // Chunks of earlier builds, once no process that started before this one can still be loading them.
    for (const name of readdirSync(path.join(DIST, 'chunks'))) {
      const file = path.join(DIST, 'chunks', name);
      if (!written.includes(path.join('chunks', name)) && (mtime(file) ?? Date.now()) < Date.now() - 60_000) rmSync(file, { force: true });
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

// `npm run build` / `prepare` (node build.mjs): build unconditionally.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await build();
