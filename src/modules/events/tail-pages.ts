// The end of the access log, grown in memory. A page at the end of a listing (no next page yet) is what a
// poller re-reads until it fills, as the spec tells clients to poll; when every door event dropped it, nearly
// every poll on a busy site read the database (bench/RESULTS.md, a live site). Entries this instance
// appends are added to such pages instead, by the rules GET /events reads with (store.ts PAGE_ROWS) and
// with the text stored for each Event (store.ts eventBody), so the page is the one a read would give.
// Entries other instances append still drop the pages they may join: their notification says only where
// they start (migration 019).
import type { ProducedPage } from '../../platform/page-cache.ts';
import { pageEnvelope } from '../../platform/page-json.ts';
import type { EventFilter } from './store.ts';

/** An entry this instance appended and committed, with the columns GET /events filters on. */
export interface AppendedEntry {
  id: number;
  accountId: number;
  /** The ids from the account's root down to the lock's location (departments never move); null: not known, no page is grown. */
  locationPath: readonly number[] | null;
  lockId: number;
  personId: string | null;
  type: string;
  /** occurred_at, in milliseconds (the stored timestamp has no finer part: it was written from a Date). */
  occurredAt: number;
  /** The Event's JSON as stored (store.ts eventBody). */
  json: string;
}

/** What a kept end-of-listing page holds to be grown: its filter (null: it matches nothing) and its rows as sent. */
export interface TailPage {
  filter: EventFilter | null;
  /** The page's Events, comma-separated JSON as sent. */
  json: string;
  count: number;
  /** The id of the page's last Event; null when the page is empty. */
  lastRowId: number | null;
}

/** Whether an appended entry is a row PAGE_ROWS reads for `filter` (scope, cursor, since, lock, person, type). */
function matchesFilter(filter: EventFilter, entry: AppendedEntry): boolean {
  return (
    entry.id > filter.afterId &&
    (entry.locationPath as readonly number[]).includes(filter.locationId) &&
    (filter.since === null || entry.occurredAt >= filter.since.getTime()) &&
    (filter.lockId === null || entry.lockId === filter.lockId) &&
    (filter.personId === null || entry.personId === filter.personId) &&
    (filter.types as readonly string[]).includes(entry.type)
  );
}

/**
 * The page `tail` becomes once `entries` (one account's, ids ascending, the least `fromId`) are committed:
 * 'unchanged' when none of them is its, the page with those that are, or 'drop' when growing cannot be right:
 * an entry at or below the page's last row (the page was read after they were committed, or they interleave), a
 * scope not known, or more entries than the page has room for (a full page and its next_cursor come from a read).
 */
export function growTail(tail: TailPage, fromId: number, entries: readonly AppendedEntry[]): ProducedPage<TailPage> | 'unchanged' | 'drop' {
  const { filter } = tail;
  if (filter === null) return 'unchanged';
  if (tail.lastRowId !== null && fromId <= tail.lastRowId) return 'drop';
  if (entries.some((e) => e.locationPath === null)) return 'drop';
  const joining = entries.filter((e) => matchesFilter(filter, e));
  if (joining.length === 0) return 'unchanged';
  const limit = filter.limit - 1;
  // More rows than the page holds: it fills, and only a read may say so. A next_cursor moves the poller past
  // every id up to it, and an entry another instance committed before these, its notification still on the way,
  // would be behind it for good; the read that replaces the page sees every entry committed before it.
  if (tail.count + joining.length > limit) return 'drop';
  const json = [tail.json, ...joining.map((e) => e.json)].filter((part) => part !== '').join(',');
  const lastRowId = (joining[joining.length - 1] as AppendedEntry).id;
  return { json: pageEnvelope(json, null), tail: { filter, json, count: tail.count + joining.length, lastRowId } };
}
