// The Lock command object of POST /locks/{id}/unlock and GET /locks/{id}/commands/{command_id}.
import { Type, type Static } from '@sinclair/typebox';
import { named } from '../../platform/openapi-schemas.ts';
import { Nullable } from '../../platform/schemas.ts';

const Timestamp = Type.String({ format: 'date-time' });

export const LockCommandSchema = named(
  'LockCommand',
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      lock_id: Type.Integer(),
      status: Type.Union([Type.Literal('published'), Type.Literal('confirmed'), Type.Literal('timed_out'), Type.Literal('failed')]),
      requested_at: Timestamp,
      published_at: Nullable(Timestamp),
      confirmed_at: Nullable(Timestamp),
      timeout_seconds: Type.Integer({ description: 'seconds before an unanswered command becomes `timed_out`' }),
      error: Nullable(
        Type.Object(
          { code: Type.String({ description: 'publish_failed, device_missing, device_error or timed_out' }), message: Type.String() },
          { description: 'why the command failed' },
        ),
      ),
    },
    { description: 'A remote unlock and how far it got.' },
  ),
);
export type LockCommand = Static<typeof LockCommandSchema>;
