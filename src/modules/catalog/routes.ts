import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { sendSerialized } from '../../platform/page-cache.ts';
import { PageQuery, pageRequest } from '../../platform/pagination.ts';
import { Id } from '../../platform/schemas.ts';
import { Lock, LockListQuery, LockPage, SecurityGroupPage } from './schemas.ts';
import type { CatalogService } from './service.ts';

const IdParams = Type.Object({ id: Id() });

export function catalogRoutes(app: ApiInstance, catalog: CatalogService): void {
  app.get(
    '/v1/locks',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        operationId: 'listLocks',
        tags: ['Locks'],
        summary: 'List locks',
        description: "The locks of the API key's location and its departments, in id order.",
        querystring: LockListQuery,
        response: { 200: ref(LockPage) },
      },
    },
    async (request, reply) => sendSerialized(reply, await catalog.listLocksJson(callerOf(request), request.query)),
  );

  app.get(
    '/v1/locks/:id',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        operationId: 'getLock',
        tags: ['Locks'],
        summary: 'Get a lock',
        description: "One lock of the API key's scope; a lock elsewhere answers 404.",
        params: IdParams,
        response: { 200: ref(Lock), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => catalog.getLock(callerOf(request), request.params.id),
  );

  app.get(
    '/v1/security_groups',
    {
      config: { access: { kind: 'public', scopes: ['catalog:read'] } },
      schema: {
        operationId: 'listSecurityGroups',
        tags: ['Security groups'],
        summary: 'List security groups (access profiles)',
        description: "The security groups the API key may give: those defined at its location, above it and in its departments (never a sibling department's); their codes are what `POST /keys` takes.",
        querystring: Type.Object({ ...PageQuery, is_default: Type.Optional(Type.Boolean({ description: 'only default groups, or only the others' })) }),
        response: { 200: ref(SecurityGroupPage) },
      },
    },
    async (request) => catalog.listSecurityGroups(callerOf(request), pageRequest(request.query, 'security_groups'), request.query.is_default),
  );
}
