import { Type } from '@sinclair/typebox';
import type { Database } from '../../platform/db/index.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ErrorEnvelope, Id } from '../../platform/schemas.ts';
import { configureSandbox } from './connector.ts';

const admin = { access: { kind: 'admin' as const } };
const Settings = Type.Object({
  account_id: Id(),
  mode: Type.Union([Type.Literal('accept'), Type.Literal('reject'), Type.Literal('hold')]),
  delay_ms: Type.Integer({ minimum: 0, maximum: 60_000 }),
});

/** PUT /admin/v1/sandbox/locking_system: how the simulator answers for one account (SANDBOX=true only). */
export function lockingSystemSandboxRoutes(app: ApiInstance, db: Database): void {
  app.put(
    '/admin/v1/sandbox/locking_system',
    {
      config: admin,
      schema: {
        hide: true,
        body: Type.Object(
          {
            account_id: Id(),
            mode: Type.Optional(Type.Union([Type.Literal('accept'), Type.Literal('reject'), Type.Literal('hold')], { default: 'accept' })),
            delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, default: 0 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Settings, 401: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request) => {
      const { account_id, mode = 'accept', delay_ms = 0 } = request.body;
      await configureSandbox(db, account_id, { mode, delay_ms });
      return { account_id, mode, delay_ms };
    },
  );
}
