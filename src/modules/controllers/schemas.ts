// The shapes of the operator API's UHPPOTE controllers (/admin/v1/controllers).
import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page } from '../../platform/pagination.ts';
import { Id, Name } from '../../platform/schemas.ts';

const RowId = Id();
const Timestamp = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const DoorLocks = Type.Array(
  Type.Object({ door: Type.Integer({ minimum: 1, maximum: 4 }), lock_id: RowId }, { additionalProperties: false }),
  { maxItems: 4, description: "which lock each door of the board is; a lock's windows must be read in the controller's time zone" },
);
const Address = Type.String({ format: 'ipv4', description: 'the IPv4 address the board answers at (fixed: set one on the board or reserve it in DHCP)' });

export const ControllerCreate = named(
  'ControllerCreate',
  Type.Object(
    {
      location_id: RowId,
      name: Name(),
      serial_number: Type.Integer({ minimum: 1, maximum: 4_294_967_295, description: "the board's serial number (printed on it; uhppote-cli get-devices)" }),
      address: Address,
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, default: 60000 })),
      transport: Type.Optional(Type.Union([Type.Literal('udp'), Type.Literal('tcp')], { default: 'udp', description: 'tcp on boards whose firmware takes it' })),
      doors: Type.Optional(Type.Union([Type.Literal(1), Type.Literal(2), Type.Literal(4)], { default: 4 })),
      door_locks: Type.Optional(DoorLocks),
    },
    { additionalProperties: false },
  ),
);
export type ControllerCreate = Static<typeof ControllerCreate>;

export const ControllerUpdate = named(
  'ControllerUpdate',
  Type.Object(
    {
      name: Type.Optional(Name()),
      address: Type.Optional(Address),
      port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
      transport: Type.Optional(Type.Union([Type.Literal('udp'), Type.Literal('tcp')])),
      door_locks: Type.Optional(DoorLocks),
    },
    { additionalProperties: false },
  ),
);
export type ControllerUpdate = Static<typeof ControllerUpdate>;

export const Reconciliation = named(
  'ControllerReconciliation',
  Type.Object(
    {
      at: Type.String({ format: 'date-time' }),
      cards_on_controller: Type.Integer(),
      added: Type.Array(Type.Object({ key_id: Type.Integer(), reason: Type.String() })),
      changed: Type.Array(Type.Object({ key_id: Type.Integer(), reason: Type.String() })),
      removed: Type.Array(
        Type.Object({ card: Type.String({ description: 'the card number masked: its last three digits' }), key_id: Type.Union([Type.Integer(), Type.Null()]), reason: Type.String() }),
      ),
      profiles_rewritten: Type.Array(Type.Integer(), { description: 'time profiles the board did not hold as written (cleared or changed by hand), written again' }),
      problems: Type.Array(Type.String()),
    },
    { description: "What a reconciliation found on the board and repaired." },
  ),
);

export const Controller = named(
  'Controller',
  Type.Object({
    id: Type.Integer({ description: 'also its gateway id (access-log entries and locks name it as their gateway)' }),
    account_id: Type.Integer(),
    location_id: Type.Integer(),
    name: Type.String(),
    serial_number: Type.Integer(),
    address: Type.String(),
    port: Type.Integer(),
    transport: Type.Union([Type.Literal('udp'), Type.Literal('tcp')]),
    doors: Type.Integer(),
    door_locks: Type.Array(Type.Object({ door: Type.Integer(), lock_id: Type.Integer() })),
    time_zone: Type.String({ description: "the wall clock the board is kept on (its location's time zone)" }),
    online: Type.Boolean({ description: 'it answered its last poll' }),
    last_seen_at: Timestamp,
    clock_set_at: Timestamp,
    listener_set_at: Timestamp,
    last_error: Type.Union([Type.String(), Type.Null()]),
    reconciliation: Type.Union([ref(Reconciliation), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
  }),
);
export type Controller = Static<typeof Controller>;

export const ControllerPage = named('ControllerPage', Page(ref(Controller), 'A page of controllers.'));
