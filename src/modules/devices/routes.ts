import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ErrorEnvelope, Id, errorResponses } from '../../platform/schemas.ts';
import { LockCommandSchema } from './schemas.ts';
import type { UnlockService } from './unlock.ts';

const control = { access: { kind: 'public' as const, scopes: ['locks:control' as const] } };
const LockParams = Type.Object({ id: Id() });

export function unlockRoutes(app: ApiInstance, unlock: UnlockService): void {
  app.post(
    '/v1/locks/:id/unlock',
    {
      config: control,
      schema: {
        tags: ['Locks'],
        summary: 'Open a remote lock',
        params: LockParams,
        response: { 202: LockCommandSchema, ...errorResponses, 409: ErrorEnvelope, 502: ErrorEnvelope },
      },
    },
    async (request, reply) => reply.code(202).send(await unlock.unlock(callerOf(request), request.params.id)),
  );

  app.get(
    '/v1/locks/:id/commands/:command_id',
    {
      config: control,
      schema: {
        tags: ['Locks'],
        summary: 'Read an unlock command',
        params: Type.Object({ id: Id(), command_id: Type.String({ format: 'uuid' }) }),
        response: { 200: LockCommandSchema, ...errorResponses },
      },
    },
    async (request) => unlock.getCommand(callerOf(request), request.params.id, request.params.command_id),
  );
}

/** PUT /admin/v1/sandbox/mqtt (SANDBOX=true only). */
export function mqttSandboxRoutes(app: ApiInstance, unlock: UnlockService): void {
  const Publish = Type.Object({ publish: Type.Union([Type.Literal('accept'), Type.Literal('fail')]) }, { additionalProperties: false });
  app.put(
    '/admin/v1/sandbox/mqtt',
    { config: { access: { kind: 'admin' } }, schema: { hide: true, body: Publish, response: { 200: Publish, 401: ErrorEnvelope, 422: ErrorEnvelope } } },
    async (request) => {
      await unlock.setSandboxPublish(request.body.publish);
      return { publish: request.body.publish };
    },
  );
}
