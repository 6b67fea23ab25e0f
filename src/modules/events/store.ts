// The SQL of the access log: the reads a batch of gateway events needs, the one statement that writes
// entries with their domain events (optionally under a caller's guard), and GET /events.
import type { PreparedSql, Queryable } from '../../platform/db/index.ts';
import { fanOutStatement } from '../webhooks/index.ts';
import type { AccessEntry, AccessEvent, AccessLogLock, DoorEventType, WriteGuard } from './schemas.ts';

/**
 * Everything a batch of door events needs to know, in one round trip whatever the gateways: the locks named
 * (with the gateway each is on), which (gateway, event id) pairs are already stored, the holders of the keys
 * named, and the last opening of each lock that has a door.* event in the batch. The repeats are found by one
 * probe of the (gateway, event id) index per event (a correlated EXISTS, kept a subplan by its OFFSET 0):
 * as a join, a batch of hundreds of events on a log the planner takes for small (tens of thousands of rows, or
 * grown since its last statistics) was answered by a hash join over the whole log, 4 ms a batch and growing
 * with the log (bench/RESULTS.md). Exported for its plan's test.
 */
export const BATCH_CONTEXT: PreparedSql = {
  anyValue: true, // see withAnyValuePlan
  name: 'accessLog.batchContext',
  text: `SELECT
    (SELECT coalesce(json_agg(x), '[]') FROM (
       SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id, l.path AS location_path, k.gateway_id
         FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = ANY($1::bigint[])) AS x) AS locks,
    (SELECT coalesce(json_agg(json_build_array(q.gateway_id, q.event_id)), '[]')
       FROM unnest($2::bigint[], $3::text[]) AS q (gateway_id, event_id)
      WHERE EXISTS (SELECT FROM access_events a WHERE a.gateway_id = q.gateway_id AND a.gateway_event_id = q.event_id OFFSET 0)) AS seen,
    (SELECT coalesce(json_agg(x), '[]') FROM (
       SELECT k.id AS key_id, k.name AS key_name, k.account_id, p.id AS person_id, p.name AS person_name, p.email AS person_email
         FROM keys k JOIN people p ON p.id = k.person_id WHERE k.id = ANY($4::bigint[])) AS x) AS holders,
    (SELECT coalesce(json_agg(json_build_object('lock_id', k.id, 'data', o.data)), '[]')
       FROM locks k CROSS JOIN LATERAL (SELECT coalesce(body::json, data::json) AS data FROM access_events
                                         WHERE lock_id = k.id AND type = 'access.granted' ORDER BY id DESC LIMIT 1) AS o
      WHERE k.id = ANY($5::bigint[])) AS openings`,
};

export interface KeyHolder {
  key_id: number;
  key_name: string;
  account_id: number;
  person_id: string;
  person_name: string;
  person_email: string | null;
}

/** A lock an event names, with the gateway it is on (an event from another gateway is not its). */
export type BatchLock = AccessLogLock & { gateway_id: number | null };

export interface BatchContext {
  locks: BatchLock[];
  /** [gateway id, event id] of the events already stored. */
  seen: Array<[number, string]>;
  holders: KeyHolder[];
  openings: Array<{ lock_id: number; data: AccessEvent }>;
}

/** What BATCH_CONTEXT asks about: the ids a batch of door events names. */
export interface BatchQuestion {
  lockIds: number[];
  /** The events, as (gateway, event id) pairs. */
  events: Array<{ gatewayId: number; eventId: string }>;
  keyIds: number[];
  /** The locks with a door.* event in the batch, whose last opening is wanted. */
  closedLockIds: number[];
}

export async function readBatchContext(db: Queryable, q: BatchQuestion): Promise<BatchContext> {
  const [context] = await db.query<BatchContext>(BATCH_CONTEXT, [
    q.lockIds,
    q.events.map((e) => e.gatewayId),
    q.events.map((e) => e.eventId),
    q.keyIds,
    q.closedLockIds,
  ]);
  return context as BatchContext;
}

/** The parameters of the entries' write ($1 to $11); a guard's are numbered after them. */
const RECORD_PARAMETERS = 11;
const guardParam = (n: number): string => `$${RECORD_PARAMETERS + n}`;

/** The write's statement per guard kind, built once, with the guard's SQL it was built from. */
const recordStatements = new Map<string, { guardSql: string; statement: PreparedSql }>();

function recordEntriesStatement(guard?: WriteGuard): PreparedSql {
  const name = guard ? `accessLog.record.${guard.name}` : 'accessLog.record';
  const guardSql = guard ? guard.sql(guardParam) : '';
  const built = recordStatements.get(name);
  if (built) {
    // A name prepares one text: two guards of one name would run one's SQL with the other's parameters.
    if (built.guardSql !== guardSql) throw new Error(`${name}: two guards share this name with different SQL`);
    return built.statement;
  }
  const statement = buildRecordEntriesStatement(name, guardSql);
  recordStatements.set(name, { guardSql, statement });
  return statement;
}

function buildRecordEntriesStatement(name: string, guardSql: string): PreparedSql {
  const guard = guardSql !== '';
  return withAnyValuePlan(fanOutStatement({
    name,
    ctes: `${guard ? `guard AS (${guardSql}),` : ''}
  drawn AS MATERIALIZED (
    SELECT n, nextval(pg_get_serial_sequence('access_events', 'id')) AS id
      FROM generate_series(1, ${guard ? '(SELECT CASE WHEN count(*) > 0 THEN cardinality($1::bigint[]) ELSE 0 END FROM guard)' : 'cardinality($1::bigint[])'}) AS n
  ),
  stored AS (
    INSERT INTO access_events (id, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, body)
    SELECT drawn.id, e.account_id, e.location_id, e.lock_id, e.gateway_id, e.gateway_event_id, e.type, e.occurred_at, e.person_id, e.key_id,
           ${EVENT_BODY_SQL('drawn.id', 'e.rest')}
      FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::timestamptz[], $8::uuid[], $9::bigint[], $10::text[])
           WITH ORDINALITY AS e (account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, rest, n)
      JOIN drawn ON drawn.n = e.n
    ON CONFLICT (gateway_id, gateway_event_id) DO NOTHING
    RETURNING id, account_id, location_id, person_id, type, body
  ),
  outgoing AS (
    SELECT type, account_id, location_id, person_id, body::jsonb AS data, $11::timestamptz AS occurred_at, id AS n FROM stored
  )`,
    answer: 'SELECT stored.id, drawn.n FROM stored JOIN drawn ON drawn.id = stored.id',
  }));
}

/** The access log's write and its batch's reads take arrays of whatever length: one plan serves every batch. */
const withAnyValuePlan = (sql: PreparedSql): PreparedSql => ({ ...sql, anyValue: true });

/** An entry to insert with the Event it stores (its id drawn by the statement). */
export interface EntryToInsert {
  lock: AccessLogLock;
  entry: AccessEntry;
  event: AccessEvent;
  /** The Event's JSON without its id (eventBody puts it first). */
  rest: string;
}

/**
 * The stored text of an Event: its id first, then the rest of its JSON (`rest`, an object with at least one member,
 * as JSON.stringify wrote it without id). The statement writes it with the id it draws (EVENT_BODY_SQL); the
 * service writes the same text for the pages it grows (tail-pages.ts), so a grown page is the one a read gives.
 */
export const eventBody = (id: number, rest: string): string => `{"id":${id},${rest.slice(1)}`;
const EVENT_BODY_SQL = (id: string, rest: string): string => `'{"id":' || ${id} || ',' || substr(${rest}, 2)`;

/** A stored Event as JSON text: body for rows written since migration 023, data's text for those before. */
const STORED_EVENT_TEXT = 'coalesce(e.body, e.data::text)';

/**
 * One statement: ids drawn in the order given (a materialized CTE over generate_series) and written into
 * each stored Event; what is stored goes out as domain events with their webhook deliveries, sent at
 * `emittedAt`. Returns the id of each entry stored, with its 1-based position (`n`) among `rows`.
 */
export async function insertEntries(
  tx: Queryable,
  rows: readonly EntryToInsert[],
  emittedAt: Date,
  guard?: WriteGuard,
): Promise<Array<{ id: number; n: number }>> {
  return tx.query<{ id: number; n: number }>(recordEntriesStatement(guard), [
    rows.map((r) => r.lock.account_id),
    rows.map((r) => r.lock.location_id),
    rows.map((r) => r.lock.id),
    rows.map((r) => r.entry.gatewayId),
    rows.map((r) => r.entry.gatewayEventId),
    rows.map((r) => r.entry.type),
    rows.map((r) => r.entry.occurredAt),
    rows.map((r) => r.entry.person?.id ?? null),
    rows.map((r) => r.entry.key?.id ?? null),
    rows.map((r) => r.rest),
    emittedAt,
    ...(guard?.params ?? []),
  ]);
}

export interface EventFilter {
  /** The caller's location: events of locks at it and below. */
  locationId: number;
  afterId: number;
  since: Date | null;
  lockId: number | null;
  personId: string | null;
  types: readonly DoorEventType[];
  /** Rows to read: the page's limit plus one, to tell whether there is a next page. */
  limit: number;
}

/**
 * Where a `since` page starts on the id order: from its cursor when the cursor's row is itself at or after
 * `since` (a later page of the same listing), else just before the least id of an event at or after
 * `since` (ids are in order of receipt and occurred_at is the gateway's clock, so the least id is searched
 * over the whole (occurred_at, id) range by an index-only scan; the CASE runs it only when needed).
 * Unnamed, so planned for its values: a generic plan cannot tell an hour's range from a year's.
 */
const SINCE_START = `SELECT CASE WHEN EXISTS (SELECT 1 FROM access_events WHERE id = $2 AND occurred_at >= $1) THEN $2
                 ELSE greatest($2, (SELECT min(id) - 1
                                      FROM (SELECT id FROM access_events WHERE occurred_at >= $1 OFFSET 0) AS s)) END AS start,
                 EXISTS (SELECT 1 FROM access_events WHERE occurred_at >= $1) AS any`;

/** Where the walk along the id order starts: after the cursor, or where SINCE_START says (null: nothing at or after `since`). */
async function walkStart(db: Queryable, f: EventFilter): Promise<number | null> {
  if (f.since === null) return f.afterId;
  const [row] = await db.query<{ start: string | number; any: boolean }>(SINCE_START, [f.since, f.afterId]);
  // No event at or after `since` at all: an empty page (no start to walk from).
  return row?.any ? Number(row.start) : null;
}

/**
 * Events in scope matching the filter, oldest first (keyset on id). With `since`, the walk along the id
 * order starts where SINCE_START says, and the occurred_at test is written so that no index serves it
 * (IS TRUE): the planner takes id and occurred_at for independent and would otherwise sort every event
 * since `since` by id on each page (31 ms for a day on 10 million events), or walk the id order from the
 * start (2.9 s). From that start matching rows come at once: 0.2–0.5 ms for an hour, a day or a week.
 * $2 is the start of the walk, $7 the page's limit plus one.
 */
const PAGE_ROWS = `SELECT e.id, ${STORED_EVENT_TEXT} AS text FROM access_events e
      WHERE e.location_id IN (SELECT id FROM locations WHERE path @> ARRAY[$1]::bigint[])
        AND e.id > $2
        AND ($3::timestamptz IS NULL OR (e.occurred_at >= $3) IS TRUE)
        AND ($4::bigint IS NULL OR e.lock_id = $4)
        AND ($5::uuid IS NULL OR e.person_id = $5)
        AND e.type = ANY($6::text[])
      ORDER BY e.id LIMIT $7`;

/** A page's Events as JSON text made by the database, and what the envelope needs of the rows read. */
export interface EventRowsJson {
  /** The first `limit - 1` rows' Events (the page), comma-separated JSON objects. */
  json: string;
  /** Rows read, at most `limit`: one more than the page means there is a next page. */
  read: number;
  /** The id of the page's last Event (null: an empty page). */
  lastId: number | null;
}

/** One row from `rows` (id and text, LIMIT `read`): the first `read - 1` rows' Events joined by commas, rows read, the page's last id. */
const pageAggregate = (rows: string, read: string): string =>
  `SELECT string_agg(page.text, ',' ORDER BY page.id) FILTER (WHERE page.n < ${read}) AS json,
          count(*)::int AS read,
          max(page.id) FILTER (WHERE page.n < ${read}) AS last_id
     FROM (SELECT rows.*, row_number() OVER (ORDER BY rows.id) AS n FROM (${rows}) AS rows) AS page`;

type PageRow = { json: string | null; read: number; last_id: string | number | null };
const toRowsJson = (row: PageRow | undefined): EventRowsJson => ({
  json: row?.json ?? '',
  read: row?.read ?? 0,
  lastId: row?.last_id === null || row?.last_id === undefined ? null : Number(row.last_id),
});

/**
 * A page of GET /events with the JSON joined by PostgreSQL: the stored Events are sent as they are stored, never
 * parsed into objects and serialized again here (the service's CPU goes on rows it only passes on). The stored
 * Event is exactly as the schema has it (AccessLogWriter writes nothing else).
 */
export async function listEventsJson(db: Queryable, f: EventFilter): Promise<EventRowsJson> {
  const start = await walkStart(db, f);
  if (start === null) return { json: '', read: 0, lastId: null };
  const [row] = await db.query<PageRow>(pageAggregate(PAGE_ROWS, '$7'), [f.locationId, start, f.since, f.lockId, f.personId, f.types, f.limit]);
  return toRowsJson(row);
}

/** A page of one door's events (lock_id, no since, no person): what listDoorPagesJson reads together. */
export interface DoorPage {
  lockId: number;
  afterId: number;
  /** Rows to read: the page's limit plus one. */
  limit: number;
}

/**
 * Pages of several doors' events in one statement, for callers of one scope asking for the same types: the door
 * pollers of a dashboard ask for 50 doors at once, and one statement for 50 pages at their doors' tails took 3.7–4.7 ms
 * where each page read alone took 0.8–1.1 ms (bench/RESULTS.md). Each page walks its door's (lock_id, id) index from its cursor, as
 * listEventsJson's statement does for one door, and stops at its limit. Unnamed, so planned for the scope given,
 * as PAGE_ROWS is: a plan made for any scope guesses the share of the log under it and may read a door's whole
 * tail and sort it. Returns one result per page, in the order given.
 */
export async function listDoorPagesJson(
  db: Queryable,
  scope: { locationId: number; types: readonly DoorEventType[] },
  pages: readonly DoorPage[],
): Promise<EventRowsJson[]> {
  const rows = await db.query<PageRow & { n: string | number }>(
    `SELECT q.n, p.json, p.read, p.last_id
       FROM unnest($2::bigint[], $3::bigint[], $4::int[]) WITH ORDINALITY AS q (lock_id, after_id, read, n)
       CROSS JOIN LATERAL (${pageAggregate(
         `SELECT e.id, ${STORED_EVENT_TEXT} AS text FROM access_events e
           WHERE e.lock_id = q.lock_id AND e.id > q.after_id
             AND e.location_id IN (SELECT id FROM locations WHERE path @> ARRAY[$1]::bigint[])
             AND e.type = ANY($5::text[])
           ORDER BY e.id LIMIT q.read`,
         'q.read',
       )}) AS p
      ORDER BY q.n`,
    [scope.locationId, pages.map((p) => p.lockId), pages.map((p) => p.afterId), pages.map((p) => p.limit), scope.types],
  );
  const byPosition = new Map(rows.map((row) => [Number(row.n), row]));
  return pages.map((_, i) => toRowsJson(byPosition.get(i + 1)));
}
