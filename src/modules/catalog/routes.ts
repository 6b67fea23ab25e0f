import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery, pageRequest } from '../../platform/pagination.ts';
import { Id, errorResponses } from '../../platform/schemas.ts';
import { Lock, SecurityGroup } from './schemas.ts';
import type { CatalogService } from './service.ts';

const IdParams = Type.Object({ id: Id() });

export function catalogRoutes(app: ApiInstance, catalog: CatalogService): void {
  app.get(
    '/v1/locks',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        tags: ['Locks'],
        summary: 'List locks',
        querystring: Type.Object({
          ...PageQuery,
          location_id: Type.Optional(
            Id({ description: 'only locks at this location and its descendants (inside the key scope)' }),
          ),
        }),
        response: { 200: Page(Lock), ...errorResponses },
      },
    },
    async (request) => catalog.listLocks(callerOf(request), pageRequest(request.query), request.query.location_id),
  );

  app.get(
    '/v1/locks/:id',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        tags: ['Locks'],
        summary: 'Get a lock',
        params: IdParams,
        response: { 200: Lock, ...errorResponses },
      },
    },
    async (request) => catalog.getLock(callerOf(request), request.params.id),
  );

  app.get(
    '/v1/security_groups',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        tags: ['Security groups'],
        summary: 'List security groups (access profiles)',
        querystring: Type.Object({ ...PageQuery, is_default: Type.Optional(Type.Boolean()) }),
        response: { 200: Page(SecurityGroup), ...errorResponses },
      },
    },
    async (request) => catalog.listSecurityGroups(callerOf(request), pageRequest(request.query), request.query.is_default),
  );
}
