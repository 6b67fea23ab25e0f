// The key holder's page's files: its script (./web, bundled by esbuild on first request, with
// @simplewebauthn/browser), its styles and its icons (the SVG, and the PNGs scripts/holder-icons.ts rasterises
// from it for the manifest and iOS). Nothing is fetched from elsewhere.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errors } from '../../platform/errors.ts';

const WEB_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'web');

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

/** The PNG icons (scripts/holder-icons.ts writes them): the manifest's two, and iOS's home-screen icon. */
export const HOLDER_PNG_ICONS = [
  { file: 'icon-192.png', size: 192, manifest: true },
  { file: 'icon-512.png', size: 512, manifest: true },
  { file: 'apple-touch-icon.png', size: 180, manifest: false },
] as const;

const asset = (type: string, body: Buffer): Asset => ({ type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` });

async function build(): Promise<Map<string, Asset>> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [path.join(WEB_DIR, 'holder.ts')],
    write: false,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2020'],
    legalComments: 'none',
    logLevel: 'silent',
  });
  const files = new Map<string, Asset>();
  files.set('holder.js', asset('text/javascript; charset=utf-8', Buffer.from((result.outputFiles[0] as { contents: Uint8Array }).contents)));
  files.set('holder.css', asset('text/css; charset=utf-8', await readFile(path.join(WEB_DIR, 'holder.css'))));
  files.set('icon.svg', asset('image/svg+xml', await readFile(path.join(WEB_DIR, 'icon.svg'))));
  for (const png of HOLDER_PNG_ICONS) files.set(png.file, asset('image/png', await readFile(path.join(WEB_DIR, png.file))));
  return files;
}

let built: Promise<Map<string, Asset>> | null = null;

export async function holderAsset(name: string): Promise<Asset> {
  built ??= build().catch((error: unknown) => {
    built = null;
    throw error;
  });
  const found = (await built).get(name);
  if (!found) throw errors.notFound('asset');
  return found;
}
