import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { ClientTimestamp } from '../../platform/time.ts';
import { MAX_REQUEST_LINE_LENGTH } from '../../platform/http.ts';
import { Name, Nullable } from '../../platform/schemas.ts';

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

export const Key = named(
  'Key',
  Type.Object(
    { ...keyFields, invitation_id: Type.Union([Type.Integer(), Type.Null()], { description: 'the invitation it came from, if any' }) },
    { description: 'An access grant: a phone key, card or fob.' },
  ),
);
export type Key = Static<typeof Key>;
/** A key inside a Person: no invitation_id. */
export const EmbeddedKey = named('PersonKey', Type.Object(keyFields, { description: 'A key as a person read shows it (no `invitation_id`).' }));
export type EmbeddedKey = Static<typeof EmbeddedKey>;

export const KeyListQuery = Type.Object({
  ...PageQuery,
  person_id: Type.Optional(Type.String({ format: 'uuid' })),
  // Any length a request line can carry: an unrecognised state is an empty page (spec), however long.
  state: Type.Optional(Type.String({ maxLength: MAX_REQUEST_LINE_LENGTH, description: 'an unrecognised state matches nothing' })),
  security_group: Type.Optional(Type.String({ maxLength: 64, description: 'a security group code' })),
});
export type KeyListQuery = Static<typeof KeyListQuery>;

export const KeyCreate = named(
  'KeyCreate',
  Type.Object(
    {
      person_id: Type.String({ format: 'uuid' }),
      security_groups: GroupCodes,
      name: Type.Optional(Name({ default: 'Phone key' })),
      starts_at: Type.Optional(ClientTimestamp('default: now')),
      expires_at: Type.Optional(ClientTimestamp('default: no expiry')),
      channel: Type.Optional(Type.Union(Channel.anyOf, { default: 'sms', description: 'where the setup link goes' })),
    },
    { additionalProperties: false, description: 'A key to issue: the person gets a setup link by SMS, e-mail or both.' },
  ),
);
export type KeyCreate = Static<typeof KeyCreate>;

export const KeyUpdate = named(
  'KeyUpdate',
  Type.Object(
    {
      name: Type.Optional(Name()),
      security_groups: Type.Optional(GroupCodes),
      starts_at: Type.Optional(ClientTimestamp()),
      expires_at: Type.Optional(Type.Union([ClientTimestamp(), Type.Null()], { description: 'null removes the expiry' })),
    },
    { additionalProperties: false, minProperties: 1, description: 'At least one field; only the fields sent change.' },
  ),
);
export type KeyUpdate = Static<typeof KeyUpdate>;

export const InvitationCreated = named(
  'InvitationCreated',
  Type.Object(
    {
      invitation_id: Type.Integer(),
      person_id: Type.String({ format: 'uuid' }),
      security_groups: Type.Array(Type.String()),
      state: Type.Literal('sent'),
      sent: Type.Object({ email: Type.Boolean(), sms: Type.Boolean() }, { description: 'the channels the setup link was sent on' }),
    },
    { description: 'The answer to `POST /keys`: the invitation made; the key appears once the person activates the link.' },
  ),
);
export type InvitationCreated = Static<typeof InvitationCreated>;

export const Invitation = named(
  'Invitation',
  Type.Object(
    {
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
    },
    { description: 'A setup link sent to a person, and what became of it.' },
  ),
);
export type Invitation = Static<typeof Invitation>;

export const InvitationListQuery = Type.Object({
  ...PageQuery,
  person_id: Type.Optional(Type.String({ format: 'uuid' })),
  state: Type.Optional(Type.String({ maxLength: 32, description: 'pending, activated, expired or cancelled; anything else answers 422' })),
});
export type InvitationListQuery = Static<typeof InvitationListQuery>;

export const InvitationResend = named(
  'InvitationResend',
  Type.Object(
    { channel: Type.Optional(Type.Union(Channel.anyOf, { default: 'sms', description: 'where the new setup link goes' })) },
    { additionalProperties: false, description: 'The optional body of a resend.' },
  ),
);
/** The body of a resend may be left out (spec: Invitation resend body, optional). */
export const ResendBody = Type.Union([ref(InvitationResend), Type.Null()]);

export const KeyPage = named('KeyPage', Page(ref(Key), 'A page of keys.'));
export const InvitationPage = named('InvitationPage', Page(ref(Invitation), 'A page of invitations.'));

const CredentialInput = Type.String({
  minLength: 1,
  maxLength: 100,
  description:
    'what the card or fob presents at a reader: `wiegand26:<facility>:<card>`, `wiegand34:<facility>:<card>` or `uid:<hex>` (README "Credentials"); unique among the keys of the account in use. A phone key gets one of its own.',
  examples: ['wiegand26:12:34567', 'uid:04A1B2C3D4E5F6'],
});

/** A key as the operator sees it: the public fields and its credential, normalised. */
export const OperatorKey = named(
  'OperatorKey',
  Type.Composite([
    Key,
    Type.Object({
      credential: Type.Union([Type.String(), Type.Null()], { description: 'normalised; null: the key presents none' }),
      waiting_for_gateways: Type.Array(Type.Integer(), {
        description: "the gateways that have not yet applied the key's last change, in id order: a key reads `sent` until none is left (or, on an account with a locking system, until that system confirms)",
      }),
    }),
  ]),
);
export type OperatorKey = Static<typeof OperatorKey>;

export const OperatorKeyUpdate = named(
  'OperatorKeyUpdate',
  Type.Object(
    { credential: Type.Union([CredentialInput, Type.Null()]) },
    { additionalProperties: false, description: 'A new credential (null: none). The key is `sent` until the gateways holding it have applied the change.' },
  ),
);
export type OperatorKeyUpdate = Static<typeof OperatorKeyUpdate>;

export const OperatorKeyCreate = named(
  'OperatorKeyCreate',
  Type.Object(
    {
      person_id: Type.String({ format: 'uuid' }),
      type: Type.Union([Type.Literal('digital'), Type.Literal('card'), Type.Literal('fob')]),
      name: Name(),
      security_groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { uniqueItems: true, maxItems: 100 })),
      starts_at: Type.Optional(ClientTimestamp('default: now')),
      expires_at: Type.Optional(Type.Union([ClientTimestamp(), Type.Null()])),
      managed_in_locking_system: Type.Optional(Type.Boolean({ default: false, description: 'a physical fob managed in the locking system (only `name` can change)' })),
      credential: Type.Optional(Type.Union([CredentialInput, Type.Null()])),
    },
    { additionalProperties: false, description: 'A key handed over in the dashboard: it is `handed_over` at once.' },
  ),
);
export type OperatorKeyCreate = Static<typeof OperatorKeyCreate>;
