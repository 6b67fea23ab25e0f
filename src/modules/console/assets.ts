// The operator console's browser side: the app shell (one HTML page for every console path, the app routes
// on the client with the History API) and its bundle, built from ./web by esbuild in memory on the first
// request and kept. Nothing is fetched from elsewhere and a strict Content-Security-Policy forbids it: no
// inline script or style, requests to this service only (docs/console.md).
import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from '../../platform/errors.ts';
import { escapeHtml, pageHeaders } from '../../platform/html-page.ts';

const WEB_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'web');

const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

/** Console paths that belong to the server part (session, proxy, live stream): never the shell. */
const SERVER_PATHS = /^(api|live|session|assets)(\/|$)/;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.woff2': 'font/woff2',
  '.svg': 'image/svg+xml',
};

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
}

const securityHeaders = (reply: FastifyReply): FastifyReply => pageHeaders(reply, CONTENT_SECURITY_POLICY);

function shell(brandName: string): string {
  const brand = escapeHtml(brandName);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${brand} console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/app.css">
<script type="module" src="/console/assets/app.js"></script>
</head>
<body data-brand="${brand}">
<div id="app"><noscript>The ${brand} console needs JavaScript.</noscript></div>
</body>
</html>
`;
}

/** esbuild is loaded on first use: most processes never serve the console, and the import costs start-up time. */
async function buildBundle(): Promise<Map<string, Asset>> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    absWorkingDir: WEB_DIR,
    entryPoints: { app: path.join(WEB_DIR, 'main.tsx') },
    outdir: '/console-assets',
    write: false,
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2020'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: path.join(WEB_DIR, 'tsconfig.json'),
    legalComments: 'none',
    logLevel: 'silent',
    loader: { '.woff2': 'file', '.svg': 'file' },
    assetNames: '[name]',
  });
  const assets = new Map<string, Asset>();
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    const body = Buffer.from(file.contents);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    assets.set(name, { type: TYPES[path.extname(name)] ?? 'application/octet-stream', body, etag });
  }
  return assets;
}

export function consoleAssetRoutes(app: FastifyInstance, options: { brandName: string }): void {
  const open = { config: { access: { kind: 'open' as const } }, schema: { hide: true } };
  const html = shell(options.brandName);

  const sendShell = (reply: FastifyReply) =>
    securityHeaders(reply).header('cache-control', 'no-store').header('content-type', 'text/html; charset=utf-8').send(html);

  app.get('/console', open, async (_request, reply) => sendShell(reply));
  app.get('/console/*', open, async (request, reply) => {
    const rest = (request.params as { '*': string })['*'];
    // The server part registers these; should one reach this route (not registered, wrong method), it is no page.
    if (SERVER_PATHS.test(rest)) throw errors.notFound('route');
    return sendShell(reply);
  });

  // Built once, on demand; a failed build is forgotten so that the next request tries again.
  let built: Promise<Map<string, Asset>> | null = null;
  const bundle = () => {
    built ??= buildBundle().catch((error: unknown) => {
      built = null;
      throw error;
    });
    return built;
  };

  app.get(
    '/console/assets/:file',
    { ...open, schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const { file } = request.params as { file: string };
      const asset = (await bundle()).get(file);
      if (!asset) throw errors.notFound('asset');
      // Names carry no hash, so a browser keeps the file but asks each time; unchanged answers 304.
      securityHeaders(reply).header('cache-control', 'no-cache').header('etag', asset.etag);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.header('content-type', asset.type).send(asset.body);
    },
  );
}
