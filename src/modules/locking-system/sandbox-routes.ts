import { Type } from '@sinclair/typebox';
import type { Database } from '../../platform/db/index.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Id } from '../../platform/schemas.ts';
import { configureSandbox } from './connector.ts';

const admin = { access: { kind: 'admin' as const } };
const Mode = (options: object = {}) =>
  Type.Union([Type.Literal('accept'), Type.Literal('reject'), Type.Literal('hold')], {
    description: '`accept`: writes succeed; `reject`: every write is refused (409 lockingsystem_rejected); `hold`: key changes stay `sent`',
    ...options,
  });
const Settings = named(
  'SandboxLockingSystem',
  Type.Object(
    { account_id: Id(), mode: Mode(), delay_ms: Type.Integer({ minimum: 0, maximum: 60_000 }) },
    { description: 'How the locking-system simulator answers for an account.' },
  ),
);
const SettingsUpdate = named(
  'SandboxLockingSystemUpdate',
  Type.Object(
    {
      account_id: Id(),
      mode: Type.Optional(Mode({ default: 'accept' })),
      delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'real-time wait before every write answers' })),
    },
    { additionalProperties: false, description: 'How the locking-system simulator should answer for an account.' },
  ),
);

/** PUT /admin/v1/sandbox/locking_system: how the simulator answers for one account (SANDBOX=true only). */
export function lockingSystemSandboxRoutes(app: ApiInstance, db: Database): void {
  app.put(
    '/admin/v1/sandbox/locking_system',
    {
      config: admin,
      schema: {
        operationId: 'setSandboxLockingSystem',
        tags: ['Sandbox'],
        summary: 'Set how the locking-system simulator answers',
        description: "For one account: accept, reject or hold its writes, optionally after a delay.",
        body: ref(SettingsUpdate),
        response: { 200: ref(Settings), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request) => {
      const { account_id, mode = 'accept', delay_ms = 0 } = request.body;
      await configureSandbox(db, account_id, { mode, delay_ms });
      return { account_id, mode, delay_ms };
    },
  );
}
