// The access log's shapes: the Event object of GET /events and of the access.* / door.* webhooks, and
// what other modules hand the log to write.
import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { MAX_REQUEST_LINE_LENGTH } from '../../platform/http.ts';
import { Id, Nullable } from '../../platform/schemas.ts';
import { LocationRef } from '../catalog/schemas.ts';

export { DOOR_EVENT_TYPES, type DoorEventType } from '../../platform/event-types.ts';

export const EventSchema = named(
  'Event',
  Type.Object(
    {
      id: Type.Integer({ description: 'ascending in order of receipt' }),
      type: Type.String({ description: 'access.granted, access.denied, door.closed or door.left_open' }),
      occurred_at: Type.String({ format: 'date-time' }),
      result: Type.Union([Type.Literal('success'), Type.Literal('denied')]),
      reason: Nullable(Type.String()),
      source: Type.String({ description: '`gateway` for door activity (decided at the door or asked of the service), `api` for remote unlocks by an API key, `key_holder` for a key holder opening a door from the phone' }),
      api_key: Nullable(Type.Object({ id: Type.Integer(), name: Type.String(), prefix: Type.String() })),
      lock: Type.Object({ id: Type.Integer(), name: Type.String(), place: Type.String() }),
      location: ref(LocationRef),
      person: Nullable(Type.Object({ id: Type.String(), name: Type.String(), email: Nullable(Type.String()) })),
      key: Nullable(Type.Object({ id: Type.Integer(), name: Type.String() })),
    },
    { description: 'An entry of the access log (and the `data` of the access.* and door.* webhooks).' },
  ),
);
/** The query of GET /v1/events (its page-cache key is derived from it: platform/page-cache.ts). */
export const EventQuery = Type.Object({
  ...PageQuery,
  since: Type.Optional(Type.String({ maxLength: 64, description: 'inclusive, compared with `occurred_at`; UTC unless an offset is given; not a date-time: 400' })),
  lock_id: Type.Optional(Id()),
  person_id: Type.Optional(Type.String({ format: 'uuid' })),
  // Any length a request line can carry: the door types spaced or repeated run past 200 characters, and an
  // unrecognised list is an empty page (spec), however long.
  type: Type.Optional(Type.String({ maxLength: MAX_REQUEST_LINE_LENGTH, description: 'comma-separated event types; an unrecognised list matches nothing' })),
});
export type EventQuery = Static<typeof EventQuery>;

export const EventPage = named('EventPage', Page(ref(EventSchema), 'A page of the access log.'));
/** The Event object of GET /events and of the access.* / door.* webhooks. */
export type AccessEvent = Static<typeof EventSchema>;

/**
 * The lock an access-log entry is about, with what the Event shows of its location and the account the
 * entry belongs to (callers read it with their own query: the columns are these).
 */
export interface AccessLogLock {
  id: number;
  name: string;
  place: string;
  location_id: number;
  location_name: string;
  account_id: number;
  /** The ids from the account's root down to the location; where known, this instance's pages at the end of the log grow with the entry. */
  location_path?: readonly number[];
}

/** One access-log entry to write (AccessLogWriter.record / recordBatch). */
export interface AccessEntry {
  gatewayId: number | null;
  gatewayEventId: string | null;
  type: string;
  occurredAt: Date;
  result: AccessEvent['result'];
  reason: string | null;
  source: string;
  apiKey: AccessEvent['api_key'];
  person: AccessEvent['person'];
  key: AccessEvent['key'];
}

/**
 * A condition on AccessLogWriter.recordBatch's write, part of the same statement: a data-modifying
 * statement (ending a lock command, say). The entries are written only if it affects a row, so the change
 * and its log entries happen together or not at all, in one round trip. Its SQL names its parameters
 * `param(1)`, `param(2)`, … for `params[0]`, `params[1]`, …; the log numbers them after its own.
 */
export interface WriteGuard {
  /** Names the prepared statement (one per kind of guard). */
  name: string;
  sql: (param: (n: number) => string) => string;
  params: readonly unknown[];
}
