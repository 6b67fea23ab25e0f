import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { sendSerialized } from '../../platform/page-cache.ts';
import type { AccessLogReader } from './reader.ts';
import { EventPage, EventQuery } from './schemas.ts';

export function eventsRoutes(app: ApiInstance, accessLog: AccessLogReader): void {
  app.get(
    '/v1/events',
    {
      config: { access: { kind: 'public', scopes: ['events:read'] } },
      schema: {
        operationId: 'listEvents',
        tags: ['Events'],
        summary: 'The access log of the locks in scope, oldest first',
        description:
          'Door activity only (`access.granted`, `access.denied`, `door.closed`, `door.left_open`), in order of receipt. Poll it, or replay a webhook gap with `since`.',
        querystring: EventQuery,
        response: { 200: ref(EventPage) },
      },
    },
    async (request, reply) => sendSerialized(reply, await accessLog.listJson(callerOf(request), request.query)),
  );
}
