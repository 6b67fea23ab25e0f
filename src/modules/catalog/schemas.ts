import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { Id } from '../../platform/schemas.ts';

export const LocationRef = named(
  'LocationRef',
  Type.Object({ id: Type.Integer(), name: Type.String() }, { description: 'A location or department, as other resources name it.' }),
);

export const Lock = named(
  'Lock',
  Type.Object(
    {
      id: Type.Integer({ format: 'int64' }),
      name: Type.String(),
      serial_number: Type.Union([Type.String(), Type.Null()]),
      place: Type.String(),
      provider: Type.String({ description: 'kind of lock hardware/integration, e.g. sandbox' }),
      online: Type.Union([Type.Boolean(), Type.Null()], { description: 'null for a lock that is not remote' }),
      security_groups: Type.Array(Type.String(), { description: 'security group codes' }),
      location: ref(LocationRef),
    },
    { description: 'A lock (door) in the API key\'s scope.' },
  ),
);
export type Lock = Static<typeof Lock>;

/** The operator's view of a lock: the public fields and the gateway it is on, which the operator sets. */
export const OperatorLock = named(
  'OperatorLock',
  Type.Object(
    {
      ...Lock.properties,
      gateway_id: Type.Union([Type.Integer({ format: 'int64' }), Type.Null()], { description: 'the gateway it is on (a remote lock), or null' }),
    },
    { description: 'A lock as the public API shows it, with the gateway it is on.' },
  ),
);
export type OperatorLock = Static<typeof OperatorLock>;

export const SecurityGroup = named(
  'SecurityGroup',
  Type.Object(
    {
      id: Type.Integer(),
      code: Type.String({ description: 'the value passed in `security_groups` of key requests' }),
      title: Type.String(),
      description: Type.String(),
      is_default: Type.Boolean(),
    },
    { description: 'A security group (access profile): the doors a key with it opens.' },
  ),
);
export type SecurityGroup = Static<typeof SecurityGroup>;

export const LockPage = named('LockPage', Page(ref(Lock), 'A page of locks.'));
export const OperatorLockPage = named('OperatorLockPage', Page(ref(OperatorLock), 'A page of locks, with their gateways.'));

/** The query of GET /v1/locks (its page-cache key is derived from it: platform/page-cache.ts). */
export const LockListQuery = Type.Object({
  ...PageQuery,
  location_id: Type.Optional(
    Id({ description: 'only locks at this location and its descendants (inside the key scope); another location gives an empty page' }),
  ),
});
export type LockListQuery = Static<typeof LockListQuery>;
export const SecurityGroupPage = named('SecurityGroupPage', Page(ref(SecurityGroup), 'A page of security groups.'));
