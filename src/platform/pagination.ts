// Keyset pagination for every list: `WHERE id > $after ORDER BY id LIMIT n + 1`, never OFFSET.
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { errors } from './errors.ts';

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/** `limit` and `cursor` of every list endpoint. A non-integer limit is a malformed query (400). */
export const PageQuery = {
  limit: Type.Optional(Type.Integer({ description: '1 to 200, default 50; out-of-range values are clamped' })),
  cursor: Type.Optional(Type.String({ description: 'opaque; pass back next_cursor verbatim', maxLength: 512 })),
};
/** The validated `limit` and `cursor` of a list's query. */
export type PageQueryValues = Static<TObject<typeof PageQuery>>;

/** The page envelope of every list (spec: Page envelope). */
export const Page = <T extends TSchema>(item: T, description = 'A page of the list.') =>
  Type.Object(
    { data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'opaque; null on the last page' }) },
    { description },
  );

export type PageOf<T> = { data: T[]; next_cursor: string | null };

export function clampLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(1, limit));
}

/**
 * The list a cursor belongs to, written into it, so that a cursor one list handed out is refused by every other
 * (README, API notes: "A `cursor` that this endpoint did not hand out answers `400 invalid_request`"). Short:
 * a cursor travels in the URL of every next page. Operator lists have tags of their own (`op.`).
 */
export type CursorTag =
  | 'locks'
  | 'security_groups'
  | 'people'
  | 'keys'
  | 'invitations'
  | 'events'
  | 'webhooks'
  | 'deliveries'
  | 'op.accounts'
  | 'op.locations'
  | 'op.users'
  | 'op.api_keys'
  | 'op.security_groups'
  | 'op.gateways'
  | 'op.locks'
  | 'op.people'
  | 'op.controllers';

/** Cursors are opaque to clients: base64url of the list's tag and the last row's sort key. */
export function encodeCursor(key: string | number, tag: CursorTag): string {
  return Buffer.from(JSON.stringify([tag, key])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The key a cursor of list `tag` holds; null without a cursor. 400 invalid_request for anything else: a cursor
 * of another list, one that is not base64url of `[tag, key]`, or a key no row can have (an id below 1, not a
 * safe integer, not a uuid).
 */
export function decodeCursor<K extends 'number' | 'uuid'>(
  cursor: string | undefined,
  kind: K,
  tag: CursorTag,
): (K extends 'number' ? number : string) | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const key: unknown = Array.isArray(parsed) && parsed.length === 2 && parsed[0] === tag ? parsed[1] : undefined;
    // The key must be one the database can take (a safe integer id, a uuid): a forged one is a 400.
    if (kind === 'number' ? Number.isSafeInteger(key) && (key as number) >= 1 : typeof key === 'string' && UUID.test(key)) {
      return key as K extends 'number' ? number : string;
    }
  } catch {
    // fall through
  }
  throw errors.invalidRequest('The query parameter cursor is not a cursor this endpoint returned.');
}

export interface PageRequest {
  limit: number;
  afterId: number | null;
}

export function pageRequest(query: PageQueryValues, tag: CursorTag): PageRequest {
  return { limit: clampLimit(query.limit), afterId: decodeCursor(query.cursor, 'number', tag) };
}

/** Rows were fetched with LIMIT limit + 1: the extra row says there is a next page. */
export function toPage<T>(rows: T[], limit: number, keyOf: (row: T) => string | number, tag: CursorTag): PageOf<T> {
  if (rows.length <= limit) return { data: rows, next_cursor: null };
  const data = rows.slice(0, limit);
  return { data, next_cursor: encodeCursor(keyOf(data[data.length - 1] as T), tag) };
}
