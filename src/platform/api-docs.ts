// API reference pages: GET /docs shows the public API and GET /admin/docs the operator API, rendered by
// Swagger UI from the documents (openapi.ts). Every asset is served here from the swagger-ui-dist package
// (nothing from a CDN), and a strict Content-Security-Policy keeps the pages from loading anything off-host.
// The pages are open like GET /v1/openapi.json; the operator page asks for ADMIN_TOKEN in the browser and
// sends it only to this service, to read /admin/v1/openapi.json (and with "Try it out").
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { errors } from './errors.ts';
import { escapeHtml, pageHeaders } from './html-page.ts';

const ASSET_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files a page may load, and their types; nothing else of the package is served. */
const PACKAGE_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/**
 * Starts Swagger UI on the page's document. Swagger UI's own defaults would call out: `validatorUrl` (a badge
 * from validator.swagger.io) is switched off. On the operator page the token typed in goes into every request.
 */
const INITIALIZER = `"use strict";
(function () {
  var body = document.body;
  function start(token) {
    window.ui = SwaggerUIBundle({
      url: body.dataset.document,
      dom_id: "#reference",
      deepLinking: true,
      validatorUrl: null,
      tryItOutEnabled: false,
      requestInterceptor: function (request) {
        if (token) request.headers.Authorization = "Bearer " + token;
        return request;
      }
    });
  }
  var form = document.getElementById("token-form");
  if (!form) return start(null);
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var token = document.getElementById("token").value;
    form.hidden = true;
    start(token);
  });
})();
`;

const ASSETS: Record<string, { type: string; read: () => Promise<Buffer | string> }> = {
  ...Object.fromEntries(
    Object.entries(PACKAGE_ASSETS).map(([name, type]) => [name, { type, read: () => readFile(path.join(ASSET_DIR, name)) }]),
  ),
  'initializer.js': { type: 'text/javascript; charset=utf-8', read: async () => INITIALIZER },
};

/** Only this service: scripts, styles, images and requests; no frames, forms elsewhere or plugins. */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  // Swagger UI sets style attributes as it renders.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders = (reply: FastifyReply): FastifyReply => pageHeaders(reply, CONTENT_SECURITY_POLICY);

function page(title: string, document: string, tokenForm: boolean): string {
  const form = tokenForm
    ? `<form id="token-form" class="token-form">
  <label for="token">Operator token (ADMIN_TOKEN), sent only to this service to read the operator API's document</label>
  <input id="token" name="token" type="password" autocomplete="off" required>
  <button type="submit">Show the reference</button>
</form>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body data-document="${document}">
${form}
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/initializer.js"></script>
</body>
</html>
`;
}

/**
 * Whether an Accept header asks for HTML before JSON: a browser's (`text/html,…,*\/*;q=0.8`) does; a client's
 * that names JSON first, or names neither (`*\/*`, curl's), keeps the JSON answers.
 */
export function prefersHtml(accept: string | undefined): boolean {
  let html = 0;
  let json = 0;
  for (const part of (accept ?? '').split(',')) {
    const [range = '', ...params] = part.trim().toLowerCase().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? '1');
    const weight = Number.isFinite(q) ? q : 0;
    const type = range.trim();
    if (type === 'text/html' || type === 'application/xhtml+xml') html = Math.max(html, weight);
    if (type === 'application/json' || type === 'application/*') json = Math.max(json, weight);
  }
  return html > 0 && html > json;
}

/** GET / for a browser: where to go (the console, the API references); no script, no style. */
function homePage(brandName: string, consoleEnabled: boolean): string {
  const links = [
    ...(consoleEnabled ? [['/console', 'Operator console']] : []),
    ['/docs', 'Public API reference'],
    ['/admin/docs', 'Operator API reference'],
  ]
    .map(([href, text]) => `<li><a href="${href}">${text}</a></li>`)
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(brandName)}</title>
</head>
<body>
<main>
<h1>${escapeHtml(brandName)}</h1>
<p>This is an API service. Go on to:</p>
<ul>
${links}
</ul>
</main>
</body>
</html>
`;
}

/** GET / (a page for browsers, the JSON 404 for every other client), GET /docs, GET /admin/docs and their assets. */
export function registerApiDocs(app: FastifyInstance, brandName: string, options: { consoleEnabled: boolean } = { consoleEnabled: true }): void {
  const open = { config: { access: { kind: 'open' as const } } };
  const home = homePage(brandName, options.consoleEnabled);
  app.get('/', { ...open, schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'Accept');
    if (!prefersHtml(request.headers.accept)) throw errors.notFound('route');
    return securityHeaders(reply).header('content-type', 'text/html; charset=utf-8').send(home);
  });
  const pages = [
    { url: '/docs', html: page(`${brandName} public API reference`, '/v1/openapi.json', false) },
    { url: '/admin/docs', html: page(`${brandName} operator API reference`, '/admin/v1/openapi.json', true) },
  ];
  for (const { url, html } of pages) {
    app.get(url, { ...open, schema: { hide: true } }, async (_request, reply) =>
      securityHeaders(reply).header('content-type', 'text/html; charset=utf-8').send(html),
    );
  }

  const cache = new Map<string, Buffer | string>();
  app.get(
    '/docs/assets/:file',
    { ...open, schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const { file } = request.params as { file: string };
      const asset = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined;
      if (!asset) throw errors.notFound('asset');
      let content = cache.get(file);
      if (content === undefined) {
        content = await asset.read();
        cache.set(file, content);
      }
      return securityHeaders(reply).header('content-type', asset.type).send(content);
    },
  );
}
