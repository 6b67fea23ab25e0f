import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Id } from '../../platform/schemas.ts';
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
        operationId: 'unlockLock',
        tags: ['Locks'],
        summary: 'Open a remote lock',
        description:
          "Publishes an unlock to the lock's gateway and answers 202 with the command; its outcome reaches webhooks as `access.granted` or `unlock.failed`. A second unlock while one is `published` answers with that command. 10 a minute per API key and lock.",
        params: LockParams,
        response: {
          202: ref(LockCommandSchema),
          ...failures({ 403: ['lock_not_allowed'], 404: ['not_found'], 409: ['lock_not_remote', 'lock_offline'], 502: ['publish_failed'] }),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await unlock.unlock(callerOf(request), request.params.id, request.log)),
  );

  app.get(
    '/v1/locks/:id/commands/:command_id',
    {
      config: control,
      schema: {
        operationId: 'getLockCommand',
        tags: ['Locks'],
        summary: 'Read an unlock command',
        description: "The command's status; the lock must be on the API key's allowlist.",
        params: Type.Object({ id: Id(), command_id: Type.String({ format: 'uuid' }) }),
        response: { 200: ref(LockCommandSchema), ...failures({ 403: ['lock_not_allowed'], 404: ['not_found'] }) },
      },
    },
    async (request) => unlock.getCommand(callerOf(request), request.params.id, request.params.command_id),
  );
}

const Publish = named(
  'SandboxMqtt',
  Type.Object(
    { publish: Type.Union([Type.Literal('accept'), Type.Literal('fail')], { description: '`fail` makes every unlock publish fail as if the broker refused it' }) },
    { additionalProperties: false, description: 'How unlock publishes behave in the sandbox.' },
  ),
);

/** PUT /admin/v1/sandbox/mqtt (SANDBOX=true only). */
export function mqttSandboxRoutes(app: ApiInstance, unlock: UnlockService): void {
  app.put(
    '/admin/v1/sandbox/mqtt',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'setSandboxMqtt',
        tags: ['Sandbox'],
        summary: 'Make unlock publishes succeed or fail',
        description: 'With `fail`, every unlock answers `502 publish_failed` as if the broker refused it.',
        body: ref(Publish),
        response: { 200: ref(Publish), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request) => {
      await unlock.setSandboxPublish(request.body.publish);
      return { publish: request.body.publish };
    },
  );
}
