// Setup links: GET /activate/{token} serves a small, accessible page; POST activates.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { SETUP_LINK_LIMIT, holderHeaders, languageOf } from '../holder/index.ts';
import type { ActivationService } from './activation.ts';

const SETUP_TEXT = {
  en: {
    title: 'Activate your phone key',
    hello: (name: string) => `Hello ${name}, a phone key has been issued to you.`,
    key: 'Key',
    opens: 'Opens',
    none: 'no doors yet; they can be added later',
    valid: 'Valid',
    from: 'from',
    until: 'until',
    linkUntil: 'This link works until',
    once: 'once',
    bind: 'Activating binds the key to this phone with a passkey: you confirm with your screen lock, now and at every door.',
    button: 'Activate my key',
  },
  de: {
    title: 'Telefonschlüssel aktivieren',
    hello: (name: string) => `Hallo ${name}, für Sie wurde ein Telefonschlüssel ausgestellt.`,
    key: 'Schlüssel',
    opens: 'Öffnet',
    none: 'noch keine Türen; sie können später hinzukommen',
    valid: 'Gültig',
    from: 'ab',
    until: 'bis',
    linkUntil: 'Dieser Link gilt bis',
    once: 'einmal',
    bind: 'Beim Aktivieren wird der Schlüssel mit einem Passkey an dieses Telefon gebunden: Sie bestätigen mit Ihrer Displaysperre, jetzt und an jeder Tür.',
    button: 'Meinen Schlüssel aktivieren',
  },
};

const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
/** No credentials to count by: a per-address budget, counted before the link is looked up (a guess costs no query past it). */
const access = { kind: 'open' as const, perIp: SETUP_LINK_LIMIT };
/** Activation takes no body (the page's form posts an empty one): nothing larger is read from anyone. */
const ACTIVATE_BODY_LIMIT = 4 * 1024;

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

const day = (date: Date) => date.toISOString().slice(0, 10);

function page(brand: string, title: string, body: string, lang: 'de' | 'en' = 'en'): string {
  // The holder page's styles and script (README "The key holder's page"): the script registers a passkey
  // when the form is sent; without JavaScript the form activates the key as before (no passkey).
  return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · ${escape(brand)}</title>
<link rel="manifest" href="/my-key/manifest.webmanifest">
<link rel="icon" href="/my-key/assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/my-key/assets/holder.css">
<script type="module" src="/my-key/assets/holder.js"></script>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  // The console's CSP (no inline script or style); never framed: a page that activates a key on one click is
  // a clickjacking target.
  return holderHeaders(reply.code(status)).header('content-type', 'text/html; charset=utf-8').send(html);
}

const wantsJson = (request: FastifyRequest) => (request.headers.accept ?? '').includes('application/json');

export function activationRoutes(app: ApiInstance, links: ActivationService, brand: string): void {
  const unusable = () =>
    page(brand, 'Link not usable', `<h1>This link can no longer be used</h1>
<p>It was cancelled, has expired or was already used. Ask whoever issued your key to send a new link.</p>`);

  app.get('/activate/:token', { config: { access }, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    const link = await links.describeLink(request.params.token);
    if (!link) return sendPage(reply, 410, unusable());
    const { invitation, opens } = link;
    const lang = languageOf(request);
    const t = SETUP_TEXT[lang];
    return sendPage(
      reply,
      200,
      page(
        brand,
        t.title,
        `<h1>${escape(t.title)}</h1>
<p>${escape(t.hello(invitation.person_name))}</p>
<dl>
  <dt>${t.key}</dt><dd>${escape(invitation.name)}</dd>
  <dt>${t.opens}</dt><dd>${opens.length > 0 ? opens.map(escape).join(', ') : t.none}</dd>
  <dt>${t.valid}</dt><dd>${t.from} ${day(invitation.starts_at)}${invitation.key_expires_at ? ` ${t.until} ${day(invitation.key_expires_at)}` : ''}</dd>
  <dt>${t.linkUntil}</dt><dd>${day(invitation.expires_at)}, ${t.once}</dd>
</dl>
<p>${escape(t.bind)}</p>
<form method="post" id="activate">
  <button type="submit">${escape(t.button)}</button>
</form>
<p id="status" role="status" aria-live="polite"></p>`,
        lang,
      ),
    );
  });

  app.post('/activate/:token', { config: { access }, bodyLimit: ACTIVATE_BODY_LIMIT, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    try {
      const activated = await links.activate(request.params.token);
      if (wantsJson(request)) return reply.code(200).send(activated);
      return sendPage(reply, 200, page(brand, 'Key activated', `<h1>Your key is ready</h1>\n<p>Your phone key is active. You can close this page.</p>`));
    } catch (error) {
      if (wantsJson(request) || !(error instanceof ApiError)) throw error;
      if (error.status === 410) return sendPage(reply, 410, unusable());
      return sendPage(
        reply,
        error.status,
        page(brand, 'Activation failed', `<h1>The key could not be activated</h1>\n<p>The door system refused it. Ask whoever issued your key for help.</p>`),
      );
    }
  });
}
