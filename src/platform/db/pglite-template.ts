// A freshly initialised PGlite cluster, committed next to the migrations (src/db/pglite/): a first start loads
// it instead of running initdb, which takes 3-5 s of CPU inside WebAssembly and leaves a second PostgreSQL
// instance's memory behind (about 450 MiB that the process never gives back). It is initdb's output only, no
// migration: those still run at start, as on server PostgreSQL. It is keyed by the exact PGlite version; with
// another version installed there is no file for it and PGlite runs initdb as before (`npm run pglite-template`
// writes the file for the installed version).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';

export const templateDir = fileURLToPath(new URL('../../db/pglite/', import.meta.url));

/** The installed PGlite's version (its package.json is not in the package's exports: found from its entry). */
export function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const manifest = path.join(path.dirname(entry), '..', 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

export function templateFile(version = pgliteVersion()): string {
  return path.join(templateDir, `initdb-${version}.tar.br`);
}

/** The template's tar (about 1.5 MB of brotli for 39 MB: three near-identical databases, a mostly empty WAL). */
async function templateTar(): Promise<Buffer | null> {
  const file = templateFile();
  return existsSync(file) ? brotliDecompressSync(await readFile(file)) : null;
}

/** The initialised cluster as a tar for PGlite's `loadDataDir` (an in-memory database), or null without one. */
export async function initdbTemplate(): Promise<Blob | null> {
  const tar = await templateTar();
  return tar ? new Blob([new Uint8Array(tar)]) : null;
}

/**
 * Writes the initialised cluster into `dir` (absent or empty), as initdb would have; false without a template.
 * Unpacked here rather than through PGlite's `loadDataDir`, which keeps its copies of the 39 MB (as a Blob and
 * in its options) for the life of the process. Written beside `dir` and renamed into place, so that a start
 * interrupted meanwhile leaves no half a cluster behind.
 */
export async function unpackInitdbTemplate(dir: string): Promise<boolean> {
  const tar = await templateTar();
  if (!tar) return false;
  const temp = `${dir}.unpacking-${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  mkdirSync(temp, { mode: 0o700 });
  // ustar as PGlite's dumpDataDir writes it: a 512-byte header (name, octal mode and size, type) per entry.
  const text = (from: number, to: number) => tar.toString('latin1', from, to).replace(/\0.*$/s, '');
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const name = text(offset, offset + 100);
    if (name === '') break; // the zero blocks at the end
    const prefix = text(offset + 345, offset + 500);
    const relative = (prefix ? `${prefix}/${name}` : name).replace(/^\/+/, '');
    if (relative.split('/').includes('..')) throw new Error(`unexpected path in the PGlite template: ${relative}`);
    const mode = parseInt(text(offset + 100, offset + 108).trim(), 8);
    const size = parseInt(text(offset + 124, offset + 136).trim() || '0', 8);
    const type = text(offset + 156, offset + 157);
    const target = path.join(temp, relative);
    if (type === '5') mkdirSync(target, { recursive: true, mode });
    else if (type === '0' || type === '') writeFileSync(target, tar.subarray(offset + 512, offset + 512 + size), { mode });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  rmSync(dir, { recursive: true, force: true }); // empty (openPglite checks): rename does not replace a directory everywhere
  renameSync(temp, dir);
  return true;
}

/** Runs initdb once (the slow way) and writes the template for the installed PGlite; removes older ones. */
export async function writeInitdbTemplate(): Promise<string> {
  const version = pgliteVersion();
  // initdb's output as PGlite leaves it, before any statement of ours: the state every first start begins in.
  // PGlite itself is loaded here only: the service runs it on the database's thread (pglite-worker.mjs).
  const { PGlite } = await import('@electric-sql/pglite');
  const pg = new PGlite('memory://');
  await pg.waitReady;
  const tar = Buffer.from(await (await pg.dumpDataDir('none')).arrayBuffer());
  await pg.close();
  const compressed = brotliCompressSync(tar, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 9,
      // A 16 MiB window spans one database's files, so the other two compress to almost nothing.
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_SIZE_HINT]: tar.length,
    },
  });
  await mkdir(templateDir, { recursive: true });
  for (const old of await readdir(templateDir)) {
    if (/^initdb-.+\.tar\.br$/.test(old)) await rm(path.join(templateDir, old));
  }
  const file = templateFile(version);
  await writeFile(file, compressed);
  return file;
}
