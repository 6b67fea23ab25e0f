// The Lock command object of POST /locks/{id}/unlock and GET /locks/{id}/commands/{command_id}.
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from '../../platform/schemas.ts';

const Timestamp = Type.String({ format: 'date-time' });

export const LockCommandSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  lock_id: Type.Integer(),
  status: Type.Union([Type.Literal('published'), Type.Literal('confirmed'), Type.Literal('timed_out'), Type.Literal('failed')]),
  requested_at: Timestamp,
  published_at: Nullable(Timestamp),
  confirmed_at: Nullable(Timestamp),
  timeout_seconds: Type.Integer(),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
});
export type LockCommand = Static<typeof LockCommandSchema>;
