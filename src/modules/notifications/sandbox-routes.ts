import { Type } from '@sinclair/typebox';
import type { Database } from '../../platform/db/index.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ErrorEnvelope } from '../../platform/schemas.ts';
import { listOutbox } from './store.ts';

const OutboxEntry = Type.Object({
  id: Type.Integer(),
  channel: Type.String(),
  to: Type.String(),
  subject: Type.String(),
  body: Type.String(),
  link: Type.Union([Type.String(), Type.Null()]),
  sent_at: Type.String({ format: 'date-time' }),
});

/** GET /admin/v1/sandbox/outbox: every SMS and e-mail the sandbox "sent", newest first. */
export function outboxSandboxRoutes(app: ApiInstance, db: Database): void {
  app.get(
    '/admin/v1/sandbox/outbox',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        hide: true,
        querystring: Type.Object({
          to: Type.Optional(Type.String({ maxLength: 254 })),
          channel: Type.Optional(Type.Union([Type.Literal('sms'), Type.Literal('email')])),
        }),
        response: { 200: Type.Object({ data: Type.Array(OutboxEntry) }), 400: ErrorEnvelope, 401: ErrorEnvelope },
      },
    },
    async (request) => {
      const rows = await listOutbox(db, { to: request.query.to ?? null, channel: request.query.channel ?? null });
      return {
        data: rows.map((r) => ({ id: r.id, channel: r.channel, to: r.to_address, subject: r.subject, body: r.body, link: r.link, sent_at: r.sent_at.toISOString() })),
      };
    },
  );
}
