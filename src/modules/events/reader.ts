// Reading the access log: GET /events, the door activity of the locks in the caller's scope.
import type { Caller } from '../../platform/auth.ts';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { CoalescedCalls } from '../../platform/coalesced-calls.ts';
import { ROWS_CHANGED, type PageCache, type PageCaches } from '../../platform/page-cache.ts';
import { pageEnvelope } from '../../platform/page-json.ts';
import { clampLimit, decodeCursor, encodeCursor } from '../../platform/pagination.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { DOOR_EVENT_TYPES, EventQuery, type DoorEventType } from './schemas.ts';
import { listDoorPagesJson, listEventsJson, type EventFilter, type EventRowsJson } from './store.ts';
import { growTail, type AppendedEntry, type TailPage } from './tail-pages.ts';

/** Event pages kept per instance, by bytes of JSON (a full page of 50 is about 25 KB). */
const PAGE_CACHE_BYTES = 16 * 2 ** 20;
/** The net for a missed notification; short, as door activity is what clients poll for. */
const PAGE_CACHE_TTL_MS = 5_000;

const isDoorEventType = (type: string): type is DoorEventType => (DOOR_EVENT_TYPES as readonly string[]).includes(type);

/**
 * Reads of door pages running at once on server PostgreSQL, so that one account's long read does not hold every
 * other's (1, 2 and 4 gave the same figures on the live-site bench's 50 doors).
 */
const DOOR_READS_AT_ONCE = 2;
/** Pages in one read at most, so that one read stays short (50 pages of 10 rows at a door's tail: 3–5 ms). */
const DOOR_PAGES_PER_READ = 100;

/** A page of one door's events, with no since or person filter: what is read together with other doors'. */
const isDoorPage = (f: EventFilter): boolean => f.lockId !== null && f.since === null && f.personId === null;

/** Door pages asked for together: one statement per scope and list of types among them, each page's rows in order. */
async function readDoorPages(db: Database, filters: readonly EventFilter[]): Promise<EventRowsJson[]> {
  const groups = new Map<string, number[]>();
  filters.forEach((f, i) => {
    const group = `${f.locationId}:${f.types.join(',')}`;
    const positions = groups.get(group);
    if (positions) positions.push(i);
    else groups.set(group, [i]);
  });
  const results: EventRowsJson[] = [];
  await Promise.all(
    [...groups.values()].map(async (positions) => {
      const first = filters[positions[0] as number] as EventFilter;
      const pages = positions.map((i) => filters[i] as EventFilter).map((f) => ({ lockId: f.lockId as number, afterId: f.afterId, limit: f.limit }));
      const read = await listDoorPagesJson(db, { locationId: first.locationId, types: first.types }, pages);
      positions.forEach((position, k) => (results[position] = read[k] as EventRowsJson));
    }),
  );
  return results;
}

export class AccessLogReader {
  // Clients poll GET /events far more often than a door is used: pages are served from memory until a
  // notification says the account's log changed (see PageCache).
  private readonly pages: PageCache<typeof EventQuery, TailPage>;
  /**
   * Pages of one door each (lock_id, no since or person) asked for while such a read runs are read together: a
   * dashboard polling 50 doors costs a few statements, not 50 (listDoorPagesJson). Each page is read by a statement
   * begun after its request, as a page read alone would be.
   */
  private readonly doorPages: CoalescedCalls<EventFilter, EventRowsJson>;

  constructor(
    private readonly db: Database,
    caches: PageCaches,
  ) {
    // Only AccessLogWriter writes the log, and it tells these pages itself (appending) before its caller
    // answers; other instances' writes and deletions come as notifications. Other write requests leave them.
    this.pages = caches.create<typeof EventQuery, TailPage>({ query: EventQuery, maxBytes: PAGE_CACHE_BYTES, ttlMs: PAGE_CACHE_TTL_MS, changedByWriteRequests: false });
    this.doorPages = new CoalescedCalls((filters: EventFilter[]) => readDoorPages(db, filters), () => false, {
      // PGlite runs one statement at a time; PostgreSQL reads a few batches on its cores at once.
      maxAtOnce: db.engine === 'postgres' ? DOOR_READS_AT_ONCE : 1,
      maxItems: DOOR_PAGES_PER_READ,
    });
  }

  async start(): Promise<void> {
    await this.pages.follow(this.db, [{ channel: ROWS_CHANGED.accessLog }]);
  }

  /**
   * This instance is about to append entries to these accounts' logs; the function returned is given the
   * entries once committed (null: the insert failed). Its own next read must see them: pages at the end of a
   * listing are grown with them (tail-pages.ts) rather than read again; full pages they may join are dropped.
   */
  appending(accounts: readonly number[]): (entries: readonly AppendedEntry[] | null) => void {
    const finish = this.pages.appendingHere(accounts);
    return (entries) => {
      if (entries === null) return finish(null);
      const byAccount = new Map<number, AppendedEntry[]>();
      for (const entry of [...entries].sort((a, b) => a.id - b.id)) {
        const own = byAccount.get(entry.accountId) ?? [];
        own.push(entry);
        byAccount.set(entry.accountId, own);
      }
      finish(
        [...byAccount].map(([accountId, own]) => {
          const fromId = (own[0] as AppendedEntry).id;
          return { append: { accountId, fromId }, grow: (tail: TailPage) => growTail(tail, fromId, own) };
        }),
      );
    };
  }

  /**
   * GET /events as the JSON sent, from memory when this query was answered since the last change that may
   * alter it. The log only grows at its end (ids drawn at insert), so a full page stays valid when events
   * arrive: only appends at or below its last id, or the end of the log, drop it, and the end of the log
   * grows with what this instance appends. Read, the page's Events come as JSON text from the database
   * (listEventsJson); only the envelope is written here.
   */
  async listJson(caller: Caller, asked: EventQuery): Promise<Buffer> {
    // A UUID in upper case names the same person to the database; as text it would not match the entries a
    // tail page grows with (their person ids are the database's, lower case), and it would be a page of its own.
    const query = asked.person_id === undefined ? asked : { ...asked, person_id: asked.person_id.toLowerCase() };
    return this.pages.page(caller, query, async () => {
      const filter = this.filter(caller, query);
      if (!filter) return { json: pageEnvelope('', null), tail: { filter: null, json: '', count: 0, lastRowId: null } };
      const rows = isDoorPage(filter) ? ((await this.doorPages.call([filter]))[0] as EventRowsJson) : await listEventsJson(this.db, filter);
      if (rows.read > filter.limit - 1 && rows.lastId !== null) return { json: pageEnvelope(rows.json, encodeCursor(rows.lastId, 'events')), lastId: rows.lastId };
      return { json: pageEnvelope(rows.json, null), tail: { filter, json: rows.json, count: rows.read, lastRowId: rows.lastId } };
    });
  }

  /**
   * What GET /events reads: locks in the caller's scope, oldest first, the four door types only (unlock.failed
   * is webhook-only), one row more than the page to tell whether another follows. Null: a page that is empty
   * whatever the log holds (a type list naming no door type).
   */
  private filter(caller: Caller, query: EventQuery): EventFilter | null {
    const limit = clampLimit(query.limit);
    const afterId = decodeCursor(query.cursor, 'number', 'events');
    let since: Date | null = null;
    if (query.since !== undefined) {
      since = parseClientTimestamp(query.since);
      if (!since) throw errors.invalidRequest('The query parameter since is not an ISO 8601 date-time.');
    }
    let types: DoorEventType[] = [...DOOR_EVENT_TYPES];
    if (query.type !== undefined) {
      types = query.type.split(',').map((t) => t.trim()).filter(isDoorEventType);
      if (types.length === 0) return null; // an unrecognised list matches nothing
    }
    return {
      locationId: caller.locationId,
      afterId: afterId ?? 0,
      since,
      lockId: query.lock_id ?? null,
      personId: query.person_id ?? null,
      types,
      limit: limit + 1,
    };
  }
}
