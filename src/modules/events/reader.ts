// Reading the access log: GET /events, the door activity of the locks in the caller's scope.
import type { Caller } from '../../platform/auth.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { DOOR_EVENT_TYPES, type AccessEvent, type DoorEventType } from './schemas.ts';
import { listEvents } from './store.ts';

export interface EventQuery {
  limit?: number;
  cursor?: string;
  since?: string;
  lock_id?: number;
  person_id?: string;
  type?: string;
}

const isDoorEventType = (type: string): type is DoorEventType => (DOOR_EVENT_TYPES as readonly string[]).includes(type);

export class AccessLogReader {
  constructor(private readonly db: Queryable) {}

  /** GET /events: locks in the caller's scope, oldest first, the four door types only (unlock.failed is webhook-only). */
  async list(caller: Caller, query: EventQuery): Promise<PageOf<AccessEvent>> {
    const limit = clampLimit(query.limit);
    const afterId = decodeCursor(query.cursor, 'number');
    let since: Date | null = null;
    if (query.since !== undefined) {
      since = parseClientTimestamp(query.since);
      if (!since) throw errors.invalidRequest('The query parameter since is not an ISO 8601 date-time.');
    }
    let types: DoorEventType[] = [...DOOR_EVENT_TYPES];
    if (query.type !== undefined) {
      types = query.type.split(',').map((t) => t.trim()).filter(isDoorEventType);
      if (types.length === 0) return { data: [], next_cursor: null }; // an unrecognised list matches nothing
    }
    const events = await listEvents(this.db, {
      locationId: caller.locationId,
      afterId: afterId ?? 0,
      since,
      lockId: query.lock_id ?? null,
      personId: query.person_id ?? null,
      types,
      limit: limit + 1,
    });
    return toPage(events, limit, (e) => e.id);
  }
}
