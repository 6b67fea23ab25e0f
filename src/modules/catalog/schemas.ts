import { Type, type Static } from '@sinclair/typebox';

export const LocationRef = Type.Object({ id: Type.Integer(), name: Type.String() });

export const Lock = Type.Object(
  {
    id: Type.Integer({ format: 'int64' }),
    name: Type.String(),
    serial_number: Type.Union([Type.String(), Type.Null()]),
    place: Type.String(),
    provider: Type.String({ description: 'kind of lock hardware/integration, e.g. sandbox' }),
    online: Type.Union([Type.Boolean(), Type.Null()], { description: 'null for a lock that is not remote' }),
    security_groups: Type.Array(Type.String()),
    location: LocationRef,
  },

);
export type Lock = Static<typeof Lock>;

export const SecurityGroup = Type.Object(
  {
    id: Type.Integer(),
    code: Type.String(),
    title: Type.String(),
    description: Type.String(),
    is_default: Type.Boolean(),
  },

);
export type SecurityGroup = Static<typeof SecurityGroup>;
