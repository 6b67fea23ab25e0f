// The key holder's surface (README "The key holder's page"): /my-key and its JSON endpoints, the setup
// page's passkey registration, and the bundled script, styles, manifest and icon. Same CSP as the console:
// nothing inline, nothing from elsewhere.
import { Type } from '@sinclair/typebox';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { Id, NoContent } from '../../platform/schemas.ts';
import { KeyDeviceList } from './schemas.ts';
import { HOLDER_PNG_ICONS, holderAsset } from './assets.ts';
import { COMMAND_POLL_LIMIT, SETUP_LINK_LIMIT, type HolderService } from './service.ts';
import { escapeHtml, pageHeaders } from '../../platform/html-page.ts';

export const HOLDER_CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "style-src 'self'",
  "script-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const open = { access: { kind: 'open' as const } };
const setupLink = { access: { kind: 'open' as const, perIp: SETUP_LINK_LIMIT } };
const BODY_LIMIT = 16 * 1024;
const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
const Assertion = Type.Object({ response: Type.Object({}, { additionalProperties: true }) });
// lock_id as every id (Id): one beyond the safe integers (1e300) reached a bigint query and answered 500.
const OpenBody = Type.Object({ response: Type.Object({}, { additionalProperties: true }), lock_id: Id() });

export function holderHeaders(reply: FastifyReply): FastifyReply {
  return pageHeaders(reply, HOLDER_CSP).header('cache-control', 'no-store');
}

/** German when the browser asks for it first; English otherwise. */
export function languageOf(request: FastifyRequest): 'de' | 'en' {
  return /^\s*de\b/i.test(request.headers['accept-language'] ?? '') ? 'de' : 'en';
}



function myKeyPage(brand: string, lang: 'de' | 'en'): string {
  const t =
    lang === 'de'
      ? { title: 'Mein Schlüssel', intro: 'Ihr Schlüssel ist an dieses Gerät gebunden. Jede Aktion bestätigen Sie mit der Displaysperre Ihres Telefons.', show: 'Meine Türen zeigen', noscript: 'Diese Seite braucht JavaScript.' }
      : { title: 'My key', intro: 'Your key is bound to this device. You confirm every action with your phone’s screen lock.', show: 'Show my doors', noscript: 'This page needs JavaScript.' };
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="theme-color" content="#0b57d0">
<title>${escapeHtml(t.title)} · ${escapeHtml(brand)}</title>
<link rel="manifest" href="/my-key/manifest.webmanifest">
<link rel="icon" href="/my-key/assets/icon.svg" type="image/svg+xml">
<link rel="apple-touch-icon" href="/my-key/assets/apple-touch-icon.png">
<link rel="stylesheet" href="/my-key/assets/holder.css">
<script type="module" src="/my-key/assets/holder.js"></script>
</head>
<body>
<main id="my-key">
<h1>${escapeHtml(t.title)}</h1>
<p>${escapeHtml(t.intro)}</p>
<noscript><p>${escapeHtml(t.noscript)}</p></noscript>
<button type="button" id="show-doors">${escapeHtml(t.show)}</button>
<p id="status" role="status" aria-live="polite"></p>
<section id="key" aria-labelledby="key-name" hidden>
<h2 id="key-name"></h2>
<dl id="validity"></dl>
<ul id="doors"></ul>
</section>
</main>
</body>
</html>
`;
}

export function holderRoutes(app: ApiInstance, holder: HolderService, brand: string): void {
  app.get('/my-key', { config: open, schema: { hide: true } }, async (request, reply) =>
    holderHeaders(reply).header('content-type', 'text/html; charset=utf-8').send(myKeyPage(brand, languageOf(request))),
  );
  app.get('/my-key/manifest.webmanifest', { config: open, schema: { hide: true } }, async (_request, reply) =>
    holderHeaders(reply)
      .header('content-type', 'application/manifest+json')
      .send({
        name: `${brand} key`,
        short_name: brand,
        start_url: '/my-key',
        scope: '/my-key',
        display: 'standalone',
        background_color: '#f6f6f4',
        theme_color: '#0b57d0',
        icons: [
          { src: '/my-key/assets/icon.svg', sizes: 'any', type: 'image/svg+xml', purpose: 'any' },
          ...HOLDER_PNG_ICONS.filter((icon) => icon.manifest).map((icon) => ({
            src: `/my-key/assets/${icon.file}`,
            sizes: `${icon.size}x${icon.size}`,
            type: 'image/png',
            purpose: 'any',
          })),
        ],
      }),
  );
  app.get(
    '/my-key/assets/:file',
    { config: open, schema: { hide: true, params: Type.Object({ file: Type.String({ maxLength: 64 }) }) } },
    async (request, reply) => {
      const asset = await holderAsset(request.params.file);
      holderHeaders(reply).header('cache-control', 'no-cache').header('etag', asset.etag);
      if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
      return reply.header('content-type', asset.type).send(asset.body);
    },
  );

  app.post('/activate/:token/passkey/options', { config: setupLink, bodyLimit: BODY_LIMIT, schema: { hide: true, params: TokenParams } }, async (request, reply) =>
    holderHeaders(reply).send(await holder.registrationOptions(request.params.token, request.clientKey)),
  );
  app.post(
    '/activate/:token/passkey',
    { config: setupLink, bodyLimit: BODY_LIMIT, schema: { hide: true, params: TokenParams, body: Assertion } },
    async (request, reply) => holderHeaders(reply).send(await holder.register(request.params.token, request.body.response as unknown as RegistrationResponseJSON, request.clientKey)),
  );
  app.post('/my-key/challenge', { config: open, bodyLimit: BODY_LIMIT, schema: { hide: true } }, async (request, reply) =>
    holderHeaders(reply).send(await holder.assertionOptions(request.clientKey)),
  );
  app.post('/my-key/doors', { config: open, bodyLimit: BODY_LIMIT, schema: { hide: true, body: Assertion } }, async (request, reply) =>
    holderHeaders(reply).send(await holder.doors(request.body.response as unknown as AuthenticationResponseJSON, request.clientKey)),
  );
  app.post('/my-key/open', { config: open, bodyLimit: BODY_LIMIT, schema: { hide: true, body: OpenBody } }, async (request, reply) =>
    holderHeaders(reply).send(await holder.open(request.body.response as unknown as AuthenticationResponseJSON, request.body.lock_id, request.clientKey, request.log)),
  );
  app.get(
    '/my-key/commands/:id',
    { config: { access: { kind: 'open', perIp: COMMAND_POLL_LIMIT } }, schema: { hide: true, params: Type.Object({ id: Type.String({ maxLength: 36 }) }) } },
    async (request, reply) => holderHeaders(reply).send(await holder.commandStatus(request.params.id)),
  );
}

/** The operator's side: a key's devices (its passkeys) and removing one (docs/spec/operator-api.md). */
export function holderAdminRoutes(app: ApiInstance, holder: HolderService): void {
  const admin = { access: { kind: 'admin' as const } };
  const notFound = failures({ 404: ['not_found'] });
  app.get(
    '/admin/v1/keys/:id/devices',
    {
      config: admin,
      schema: {
        operationId: 'listKeyDevices',
        tags: ['Keys'],
        summary: "List a phone key's devices",
        description: 'The devices (passkeys) bound to the key on its setup page: when each was registered and last used to open a door or show the doors.',
        params: Type.Object({ id: Id() }),
        response: { 200: ref(KeyDeviceList), ...notFound },
      },
    },
    async (request) => holder.devices(request.params.id),
  );
  app.delete(
    '/admin/v1/keys/:id/devices/:deviceId',
    {
      config: admin,
      schema: {
        operationId: 'removeKeyDevice',
        tags: ['Keys'],
        summary: 'Remove a device from a phone key',
        description: 'The device opens nothing from its next tap on. The key itself stays; a new device needs a new setup link (resend).',
        params: Type.Object({ id: Id(), deviceId: Id() }),
        response: { 204: NoContent, ...notFound },
      },
    },
    async (request, reply) => {
      await holder.removeDevice(request.params.id, request.params.deviceId);
      return reply.code(204).send(null);
    },
  );
}
