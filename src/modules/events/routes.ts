import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { Id, errorResponses } from '../../platform/schemas.ts';
import type { AccessLogReader } from './reader.ts';
import { EventSchema } from './schemas.ts';

export function eventsRoutes(app: ApiInstance, accessLog: AccessLogReader): void {
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
