import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page } from '../../platform/pagination.ts';
import { Id, Name as NameSchema, SingleLine } from '../../platform/schemas.ts';
import { FORM } from '../../platform/validation.ts';
import { SCOPES } from '../../platform/scopes.ts';
import { ClientTimestamp } from '../../platform/time.ts';
import { TimeZone, Windows } from '../access/schemas.ts';

const Name = NameSchema();
const RowId = Id();

export const AccountFields = {
  name: Name,
  reseller: Type.Boolean({ default: false }),
  sms_enabled: Type.Boolean({ default: true }),
  phone_key_allowance: Type.Union([Type.Integer({ minimum: 0, maximum: 2_147_483_647 }), Type.Null()], {
    default: null,
    description: 'invitations the account may send; null = unlimited',
  }),
  locking_system: Type.Union([Type.Literal('sandbox'), Type.Literal('uhppote'), Type.Null()], {
    default: null,
    description: 'null = no sync; "sandbox" = the built-in simulator; "uhppote" = UHPPOTE controllers (README "Real controllers")',
  }),
  offline_access_seconds: Type.Integer({
    minimum: 60,
    maximum: 7_776_000,
    default: 604_800,
    description: "how long a gateway may decide from its copy of the access list without hearing from the service (fail secure after)",
  }),
};

export const AccountCreate = named('AccountCreate', Type.Object(
  {
    name: AccountFields.name,
    reseller: Type.Optional(AccountFields.reseller),
    sms_enabled: Type.Optional(AccountFields.sms_enabled),
    phone_key_allowance: Type.Optional(AccountFields.phone_key_allowance),
    locking_system: Type.Optional(AccountFields.locking_system),
    offline_access_seconds: Type.Optional(AccountFields.offline_access_seconds),
  },
  { additionalProperties: false },
));
export type AccountCreate = Static<typeof AccountCreate>;

export const AccountUpdate = named('AccountUpdate', Type.Partial(Type.Object(AccountFields), { additionalProperties: false, minProperties: 1 }));
export type AccountUpdate = Static<typeof AccountUpdate>;

export const Account = named('Account', Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  reseller: Type.Boolean(),
  sms_enabled: Type.Boolean(),
  phone_key_allowance: Type.Union([Type.Integer(), Type.Null()]),
  locking_system: Type.Union([Type.String(), Type.Null()]),
  offline_access_seconds: Type.Integer(),
  root_location: Type.Object({ id: Type.Integer(), name: Type.String() }),
}));
export type Account = Static<typeof Account>;

const OwnTimeZone = Type.Union([TimeZone, Type.Null()], { description: "an IANA time-zone name; null: the parent's (UTC at a root without one)" });
export const LocationCreate = named('LocationCreate', Type.Object({ parent_id: RowId, name: Name, time_zone: Type.Optional(OwnTimeZone) }, { additionalProperties: false }));
export type LocationCreate = Static<typeof LocationCreate>;
export const LocationUpdate = named('LocationUpdate', Type.Object({ name: Type.Optional(Name), time_zone: Type.Optional(OwnTimeZone) }, { additionalProperties: false, minProperties: 1 }));
export type LocationUpdate = Static<typeof LocationUpdate>;
export const Location = named('Location', Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  parent_id: Type.Union([Type.Integer(), Type.Null()]),
  account_id: Type.Integer(),
  time_zone: Type.Union([Type.String(), Type.Null()], { description: "its own; null: the parent's" }),
  effective_time_zone: Type.String({ description: 'the one its doors read windows in: its own or the nearest above it, UTC when none is set' }),
}));
export type Location = Static<typeof Location>;

export const UserCreate = named('UserCreate', Type.Object(
  { account_id: RowId, name: Name, email: Type.String({ format: 'email', maxLength: 254 }) },
  { additionalProperties: false },
));
export type UserCreate = Static<typeof UserCreate>;
export const User = named('User', Type.Object({ id: Type.Integer(), account_id: Type.Integer(), name: Type.String(), email: Type.String() }));
export type User = Static<typeof User>;

export const ApiKeyCreate = named('ApiKeyCreate', Type.Object(
  {
    location_id: RowId,
    name: Name,
    scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { uniqueItems: true }),
    lock_allowlist: Type.Optional(Type.Array(RowId, { uniqueItems: true, maxItems: 10_000 })),
    expires_at: Type.Optional(ClientTimestamp('default: now + 1 year; at most 2 years ahead')),
    created_by_user_id: Type.Optional(Type.Union([RowId, Type.Null()])),
  },
  { additionalProperties: false },
));
export type ApiKeyCreate = Static<typeof ApiKeyCreate>;

export const ApiKey = named('ApiKey', Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String(),
  location_id: Type.Integer(),
  scopes: Type.Array(Type.String()),
  lock_allowlist: Type.Array(Type.Integer()),
  expires_at: Type.String({ format: 'date-time' }),
  created_at: Type.String({ format: 'date-time' }),
  revoked_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  created_by_user_id: Type.Union([Type.Integer(), Type.Null()]),
}));
export type ApiKey = Static<typeof ApiKey>;
export const ApiKeyWithToken = named('ApiKeyCreated', Type.Composite([ApiKey, Type.Object({ token: Type.String() })]));

export const SecurityGroupCreate = named('SecurityGroupCreate', Type.Object(
  {
    location_id: RowId,
    code: SingleLine({ minLength: 1, maxLength: 64, pattern: '^\\S+$', [FORM]: 'one word, without spaces or line breaks' }),
    title: Name,
    description: Type.Optional(Type.String({ maxLength: 2000, default: '' })),
    is_default: Type.Optional(Type.Boolean({ default: false })),
    windows: Type.Optional(Windows),
  },
  { additionalProperties: false },
));
export type SecurityGroupCreate = Static<typeof SecurityGroupCreate>;

export const SecurityGroupUpdate = named('SecurityGroupUpdate', Type.Object(
  {
    title: Type.Optional(Name),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    is_default: Type.Optional(Type.Boolean()),
    windows: Type.Optional(Windows),
  },
  { additionalProperties: false, minProperties: 1 },
));
export type SecurityGroupUpdate = Static<typeof SecurityGroupUpdate>;

/** A security group as the operator sees it: the public fields, where it is defined and its windows. */
export const OperatorSecurityGroup = named('OperatorSecurityGroup', Type.Object({
  id: Type.Integer(),
  code: Type.String(),
  title: Type.String(),
  description: Type.String(),
  is_default: Type.Boolean(),
  location_id: Type.Integer(),
  windows: Windows,
}));
export type OperatorSecurityGroup = Static<typeof OperatorSecurityGroup>;
export const OperatorSecurityGroupPage = named('OperatorSecurityGroupPage', Page(ref(OperatorSecurityGroup), 'A page of security groups.'));

export const GatewayCreate = named('GatewayCreate', Type.Object({ location_id: RowId, name: Name }, { additionalProperties: false }));
export type GatewayCreate = Static<typeof GatewayCreate>;
const GatewayMqttFields = {
  url: Type.String(),
  client_id: Type.String(),
  username: Type.String(),
  topic_prefix: Type.String(),
};
/** A gateway with its MQTT credentials: the answer of create and of rotate_password, the only ones with the password. */
export const Gateway = named('Gateway', Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  location_id: Type.Integer(),
  mqtt: Type.Object({ ...GatewayMqttFields, password: Type.String({ description: 'shown only in this answer' }) }),
}));
export type Gateway = Static<typeof Gateway>;
/** A gateway as listed: connection state and last contact, never the password. */
export const GatewaySummary = named('GatewaySummary', Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  location_id: Type.Integer(),
  account_id: Type.Integer({ description: 'the account of its location' }),
  mqtt: Type.Object(GatewayMqttFields),
  online: Type.Boolean(),
  last_seen_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_refused_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description:
      'the last login as this gateway the broker refused: a wrong password (an old one after a rotation) or a client id that is not its user name. Recorded by the embedded broker and by MQTT_HTTP_AUTH_SECRET\'s authentication; a broker checking passwords itself (dynamic security) never tells the service',
  }),
  created_at: Type.String({ format: 'date-time' }),
  access_list: Type.Object(
    {
      enabled: Type.Boolean({ description: 'false for a gateway made before access lists: rotate its password to give it one' }),
      version: Type.Integer({ description: 'the version of its list the service holds' }),
      applied_version: Type.Integer({ description: 'the version the gateway last said it applied' }),
      expired: Type.Boolean({ description: 'the gateway said its copy is past its offline limit (it grants nothing from it)' }),
      rebuilding: Type.Boolean({
        description: "the account's lists are being built again after a change to a security group, a lock, a time zone or a list secret (a few thousand keys per step, pushed as each step commits)",
      }),
    },
    { description: "the gateway's copy of the access list (README \"How a door decides\")" },
  ),
}));
export type GatewaySummary = Static<typeof GatewaySummary>;

export const LockCreate = named('LockCreate', Type.Object(
  {
    location_id: RowId,
    name: Name,
    place: Type.Optional(SingleLine({ maxLength: 200, default: '' })),
    serial_number: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Null()], { default: null })),
    provider: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'sandbox' })),
    gateway_id: Type.Optional(Type.Union([RowId, Type.Null()], { default: null })),
    security_groups: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true, default: [] })),
  },
  { additionalProperties: false },
));
export type LockCreate = Static<typeof LockCreate>;

export const ApiKeyPage = named('ApiKeyPage', Page(ref(ApiKey), 'A page of API keys.'));
export const GatewayPage = named('GatewayPage', Page(ref(GatewaySummary), 'A page of gateways.'));

export const LockUpdate = named('LockUpdate', Type.Object(
  {
    name: Type.Optional(Name),
    place: Type.Optional(SingleLine({ maxLength: 200 })),
    gateway_id: Type.Optional(Type.Union([RowId, Type.Null()], { description: 'null: not remote any more' })),
    security_groups: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true, description: 'codes; replaces the list' })),
  },
  { additionalProperties: false, minProperties: 1 },
));
export type LockUpdate = Static<typeof LockUpdate>;

export const Overview = named('Overview', Type.Object({
  accounts: Type.Integer(),
  gateways: Type.Object({ online: Type.Integer(), offline: Type.Integer() }),
  locks_offline: Type.Integer({ description: 'remote locks whose gateway is offline' }),
  webhooks: Type.Object({
    failing: Type.Integer({ description: 'active subscriptions with failing_since set' }),
    paused: Type.Integer(),
  }),
  deliveries_pending: Type.Integer(),
}));
export type Overview = Static<typeof Overview>;

export const AccountPage = named('AccountPage', Page(ref(Account), 'A page of accounts.'));
export const LocationPage = named('LocationPage', Page(ref(Location), 'A page of locations, a parent before its children.'));
export const UserPage = named('UserPage', Page(ref(User), 'A page of dashboard users.'));
