import { Type } from '@sinclair/typebox';
import type { ApiInstance } from '../../platform/fastify.ts';
import { ErrorEnvelope } from '../../platform/schemas.ts';
import type { SandboxService } from './service.ts';

const admin = { access: { kind: 'admin' as const } };
const hidden = { hide: true, tags: ['Sandbox'] };
const Now = Type.Object({ now: Type.String({ format: 'date-time' }) });
const errorsOf = { 401: ErrorEnvelope, 422: ErrorEnvelope };

/** Registered only with SANDBOX=true; without it every sandbox path answers 404. */
export function sandboxRoutes(app: ApiInstance, sandbox: SandboxService): void {
  app.get('/admin/v1/sandbox/clock', { config: admin, schema: { ...hidden, response: { 200: Now, ...errorsOf } } }, async () => ({
    now: sandbox.now().toISOString(),
  }));

  app.post(
    '/admin/v1/sandbox/clock/advance',
    {
      config: admin,
      schema: {
        ...hidden,
        body: Type.Object(
          { seconds: Type.Number({ minimum: 0, maximum: 10 * 365 * 86_400, description: 'how far to move the clock' }) },
          { additionalProperties: false },
        ),
        response: { 200: Now, ...errorsOf },
      },
    },
    async (request) => ({ now: (await sandbox.advance(request.body.seconds)).toISOString() }),
  );
}
