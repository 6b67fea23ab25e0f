import { Type } from '@sinclair/typebox';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import type { SandboxService } from './service.ts';

const admin = { access: { kind: 'admin' as const } };
const tags = ['Sandbox'];
const Now = named('SandboxClock', Type.Object({ now: Type.String({ format: 'date-time' }) }, { description: 'The sandbox clock.' }));
const Advance = named(
  'SandboxClockAdvance',
  Type.Object(
    { seconds: Type.Number({ minimum: 0, maximum: 10 * 365 * 86_400, description: 'how far to move the clock' }) },
    { additionalProperties: false, description: 'How far to move the sandbox clock.' },
  ),
);

/** Registered only with SANDBOX=true; without it every sandbox path answers 404. */
export function sandboxRoutes(app: ApiInstance, sandbox: SandboxService): void {
  app.get(
    '/admin/v1/sandbox/clock',
    { config: admin, schema: { operationId: 'getSandboxClock', tags, summary: 'Read the sandbox clock', description: 'The time every rule of the service reads.', response: { 200: ref(Now) } } },
    async () => ({ now: sandbox.now().toISOString() }),
  );

  app.post(
    '/admin/v1/sandbox/clock/advance',
    {
      config: admin,
      schema: {
        operationId: 'advanceSandboxClock',
        tags,
        summary: 'Move the sandbox clock forward',
        description: 'Answers once every piece of work that became due has run: webhook attempts, time-outs, expiry, presence, auto-pause, purges.',
        body: ref(Advance),
        response: { 200: ref(Now), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request) => ({ now: (await sandbox.advance(request.body.seconds)).toISOString() }),
  );
}
