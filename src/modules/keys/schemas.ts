import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../platform/pagination.ts';
import { ClientTimestamp } from '../../platform/time.ts';
import { Nullable } from '../../platform/schemas.ts';

const Timestamp = Type.String({ format: 'date-time' });
/** Where a setup link goes. */
export const Channel = Type.Union([Type.Literal('sms'), Type.Literal('email'), Type.Literal('both')]);
export type Channel = Static<typeof Channel>;
// No minimum (the spec sets none): a key may be issued without groups and given them later by PATCH.
const GroupCodes = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 100, uniqueItems: true });

export const INVITATION_STATES = ['pending', 'activated', 'expired', 'cancelled'] as const;

const keyFields = {
  id: Type.Integer({ format: 'int64' }),
  name: Type.String(),
  type: Type.String({ description: '`digital` for phone keys; `card` and `fob` for physical ones' }),
  state: Type.Union([Type.Literal('planning'), Type.Literal('sent'), Type.Literal('handed_over'), Type.Literal('returned'), Type.Literal('other')]),
  person_id: Type.String({ format: 'uuid' }),
  security_groups: Type.Array(Type.String()),
  starts_at: Timestamp,
  expires_at: Nullable(Timestamp),
};

export const Key = Type.Object({ ...keyFields, invitation_id: Type.Union([Type.Integer(), Type.Null()]) });
export type Key = Static<typeof Key>;
/** A key inside a Person: no invitation_id. */
export const EmbeddedKey = Type.Object(keyFields);
export type EmbeddedKey = Static<typeof EmbeddedKey>;

export const KeyListQuery = Type.Object({
  ...PageQuery,
  person_id: Type.Optional(Type.String({ format: 'uuid' })),
  state: Type.Optional(Type.String({ maxLength: 32, description: 'an unrecognised state matches nothing' })),
  security_group: Type.Optional(Type.String({ maxLength: 64, description: 'a security group code' })),
});
export type KeyListQuery = Static<typeof KeyListQuery>;

export const KeyCreate = Type.Object(
  {
    person_id: Type.String({ format: 'uuid' }),
    security_groups: GroupCodes,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S', default: 'Phone key' })),
    starts_at: Type.Optional(ClientTimestamp('default: now')),
    expires_at: Type.Optional(ClientTimestamp('default: no expiry')),
    channel: Type.Optional(Type.Union(Channel.anyOf, { default: 'sms' })),
  },
  { additionalProperties: false },
);
export type KeyCreate = Static<typeof KeyCreate>;

export const KeyUpdate = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' })),
    security_groups: Type.Optional(GroupCodes),
    starts_at: Type.Optional(ClientTimestamp()),
    expires_at: Type.Optional(Type.Union([ClientTimestamp(), Type.Null()], { description: 'null removes the expiry' })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type KeyUpdate = Static<typeof KeyUpdate>;

export const InvitationCreated = Type.Object({
  invitation_id: Type.Integer(),
  person_id: Type.String({ format: 'uuid' }),
  security_groups: Type.Array(Type.String()),
  state: Type.Literal('sent'),
  sent: Type.Object({ email: Type.Boolean(), sms: Type.Boolean() }),
});
export type InvitationCreated = Static<typeof InvitationCreated>;

export const Invitation = Type.Object({
  id: Type.Integer({ format: 'int64' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('activated'), Type.Literal('expired'), Type.Literal('cancelled')]),
  person_id: Type.String({ format: 'uuid' }),
  key_id: Type.Union([Type.Integer(), Type.Null()]),
  name: Type.String(),
  security_groups: Type.Array(Type.String()),
  starts_at: Timestamp,
  expires_at: Timestamp,
  sent: Type.Object({ email_at: Nullable(Timestamp), sms_at: Nullable(Timestamp) }),
  created_at: Timestamp,
});
export type Invitation = Static<typeof Invitation>;

export const InvitationListQuery = Type.Object({
  ...PageQuery,
  person_id: Type.Optional(Type.String({ format: 'uuid' })),
  state: Type.Optional(Type.String({ maxLength: 32, description: 'pending, activated, expired or cancelled; anything else answers 422' })),
});
export type InvitationListQuery = Static<typeof InvitationListQuery>;

export const ResendBody = Type.Union([Type.Object({ channel: Type.Optional(Type.Union(Channel.anyOf, { default: 'sms' })) }, { additionalProperties: false }), Type.Null()]);

export const OperatorKeyCreate = Type.Object(
  {
    person_id: Type.String({ format: 'uuid' }),
    type: Type.Union([Type.Literal('digital'), Type.Literal('card'), Type.Literal('fob')]),
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    security_groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { uniqueItems: true, maxItems: 100 })),
    starts_at: Type.Optional(ClientTimestamp('default: now')),
    expires_at: Type.Optional(Type.Union([ClientTimestamp(), Type.Null()])),
    managed_in_locking_system: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export type OperatorKeyCreate = Static<typeof OperatorKeyCreate>;
