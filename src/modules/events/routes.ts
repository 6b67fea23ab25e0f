import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { Id, Nullable, errorResponses } from '../../platform/schemas.ts';
import type { AccessLog } from './access-log.ts';


export const EventSchema = Type.Object({
  id: Type.Integer({ description: 'ascending in order of receipt' }),
  type: Type.String({ description: 'access.granted, access.denied, door.closed or door.left_open' }),
  occurred_at: Type.String({ format: 'date-time' }),
  result: Type.Union([Type.Literal('success'), Type.Literal('denied')]),
  reason: Nullable(Type.String()),
  source: Type.String({ description: '`gateway` for door activity, `api` for remote unlocks' }),
  api_key: Nullable(Type.Object({ id: Type.Integer(), name: Type.String(), prefix: Type.String() })),
  lock: Type.Object({ id: Type.Integer(), name: Type.String(), place: Type.String() }),
  location: Type.Object({ id: Type.Integer(), name: Type.String() }),
  person: Nullable(Type.Object({ id: Type.String(), name: Type.String(), email: Nullable(Type.String()) })),
  key: Nullable(Type.Object({ id: Type.Integer(), name: Type.String() })),
});

export function eventsRoutes(app: ApiInstance, accessLog: AccessLog): void {
  app.get(
    '/v1/events',
    {
      config: { access: { kind: 'public', scopes: ['events:read'] } },
      schema: {
        tags: ['Events'],
        summary: 'The access log of the locks in scope, oldest first',
        querystring: Type.Object({
          ...PageQuery,
          since: Type.Optional(Type.String({ maxLength: 64, description: 'inclusive; UTC unless an offset is given' })),
          lock_id: Type.Optional(Id()),
          person_id: Type.Optional(Type.String({ format: 'uuid' })),
          type: Type.Optional(Type.String({ maxLength: 200, description: 'comma-separated event types; an unrecognised list matches nothing' })),
        }),
        response: { 200: Page(EventSchema), ...errorResponses },
      },
    },
    async (request) => accessLog.list(callerOf(request), request.query),
  );
}
