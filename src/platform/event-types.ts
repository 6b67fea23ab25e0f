// The names of the domain events, in a module with no imports: the service's schemas read them, and the
// console's browser bundle takes them from here too, so no list is kept twice.

/** The door activity a gateway reports and GET /events lists (unlock.failed is webhook-only). */
export const DOOR_EVENT_TYPES = ['access.granted', 'access.denied', 'door.closed', 'door.left_open'] as const;
export type DoorEventType = (typeof DOOR_EVENT_TYPES)[number];

/** Every event a webhook can subscribe to. */
export const EVENT_TYPES = [
  ...DOOR_EVENT_TYPES,
  'key.activated',
  'key.revoked',
  'key.issued',
  'unlock.failed',
  'lock.online',
  'lock.offline',
  'person.created',
  'person.updated',
  'person.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
