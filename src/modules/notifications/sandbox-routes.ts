import { Type } from '@sinclair/typebox';
import type { Database } from '../../platform/db/index.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { listOutbox } from './store.ts';

const OutboxMessage = named(
  'SandboxOutboxMessage',
  Type.Object(
    {
      id: Type.Integer(),
      channel: Type.String({ description: '`sms` or `email`' }),
      to: Type.String({ description: 'E.164 phone of an SMS, address of an e-mail' }),
      subject: Type.String(),
      body: Type.String(),
      link: Type.Union([Type.String(), Type.Null()], { description: 'the setup link it carried' }),
      sent_at: Type.String({ format: 'date-time' }),
    },
    { description: 'An SMS or e-mail the sandbox "sent".' },
  ),
);
const Outbox = named('SandboxOutbox', Type.Object({ data: Type.Array(ref(OutboxMessage)) }, { description: 'Every message, newest first.' }));

/** GET /admin/v1/sandbox/outbox: every SMS and e-mail the sandbox "sent", newest first. */
export function outboxSandboxRoutes(app: ApiInstance, db: Database): void {
  app.get(
    '/admin/v1/sandbox/outbox',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'listSandboxOutbox',
        tags: ['Sandbox'],
        summary: 'Read the sandbox outbox',
        description: 'Every SMS and e-mail the service sent in the sandbox instead of sending it, newest first.',
        querystring: Type.Object({
          to: Type.Optional(Type.String({ maxLength: 254, description: 'exact phone (E.164) or e-mail' })),
          channel: Type.Optional(Type.Union([Type.Literal('sms'), Type.Literal('email')])),
        }),
        response: { 200: ref(Outbox) },
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
