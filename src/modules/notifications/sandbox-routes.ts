import { Type } from '@sinclair/typebox';
import type { Database } from '../../platform/db/index.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ErrorEnvelope } from '../../platform/schemas.ts';

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
      const rows = await db.query<{ id: number; channel: string; to_address: string; subject: string; body: string; link: string | null; sent_at: Date }>(
        `SELECT id, channel, to_address, subject, body, link, sent_at FROM sandbox_outbox
          WHERE ($1::text IS NULL OR to_address = $1) AND ($2::text IS NULL OR channel = $2)
          ORDER BY id DESC LIMIT 500`,
        [request.query.to ?? null, request.query.channel ?? null],
      );
      return {
        data: rows.map((r) => ({ id: r.id, channel: r.channel, to: r.to_address, subject: r.subject, body: r.body, link: r.link, sent_at: r.sent_at.toISOString() })),
      };
    },
  );
}
