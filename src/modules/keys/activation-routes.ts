// Setup links: GET /activate/{token} serves a small, accessible page; POST activates.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import type { ActivationService } from './activation.ts';

const TokenParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 128 }) });
/** Activation takes no body (the page's form posts an empty one): nothing larger is read from anyone. */
const ACTIVATE_BODY_LIMIT = 4 * 1024;

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

const day = (date: Date) => date.toISOString().slice(0, 10);

function page(brand: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · ${escape(brand)}</title>
<style>
  body { font: 18px/1.5 system-ui, sans-serif; margin: 0; padding: 2rem 1rem; color: #1a1a1a; background: #f6f6f4; }
  main { max-width: 32rem; margin: 0 auto; background: #fff; padding: 2rem; border-radius: 12px; }
  h1 { font-size: 1.6rem; margin-top: 0; }
  dt { font-weight: 600; } dd { margin: 0 0 .75rem 0; }
  button { font: inherit; font-weight: 600; padding: .8rem 1.5rem; border: 0; border-radius: 8px; background: #0b57d0; color: #fff; width: 100%; cursor: pointer; }
  button:focus-visible { outline: 3px solid #1a1a1a; outline-offset: 3px; }
</style>
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
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('referrer-policy', 'no-referrer')
    // Never framed: a page that activates a key on one click is a clickjacking target.
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
    .send(html);
}

const wantsJson = (request: FastifyRequest) => (request.headers.accept ?? '').includes('application/json');

export function activationRoutes(app: ApiInstance, links: ActivationService, brand: string): void {
  const unusable = () =>
    page(brand, 'Link not usable', `<h1>This link can no longer be used</h1>
<p>It was cancelled, has expired or was already used. Ask whoever issued your key to send a new link.</p>`);

  app.get('/activate/:token', { config: { access: { kind: 'open' } }, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
    const link = await links.describeLink(request.params.token);
    if (!link) return sendPage(reply, 410, unusable());
    const { invitation, opens } = link;
    return sendPage(
      reply,
      200,
      page(
        brand,
        'Activate your phone key',
        `<h1>Activate your phone key</h1>
<p>Hello ${escape(invitation.person_name)}, a phone key has been issued to you.</p>
<dl>
  <dt>Key</dt><dd>${escape(invitation.name)}</dd>
  <dt>Opens</dt><dd>${opens.length > 0 ? opens.map(escape).join(', ') : 'no doors yet; they can be added later'}</dd>
  <dt>Valid</dt><dd>from ${day(invitation.starts_at)}${invitation.key_expires_at ? ` until ${day(invitation.key_expires_at)}` : ''}</dd>
  <dt>This link works until</dt><dd>${day(invitation.expires_at)}, once</dd>
</dl>
<form method="post">
  <button type="submit">Activate my key</button>
</form>`,
      ),
    );
  });

  app.post('/activate/:token', { config: { access: { kind: 'open' } }, bodyLimit: ACTIVATE_BODY_LIMIT, schema: { hide: true, params: TokenParams } }, async (request, reply) => {
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
