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

/** Cursors are opaque to clients: base64url of the last row's sort key. */
export function encodeCursor(key: string | number): string {
  return Buffer.from(JSON.stringify([key])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function decodeCursor<K extends 'number' | 'uuid'>(
  cursor: string | undefined,
  kind: K,
): (K extends 'number' ? number : string) | null {
  if (cursor === undefined || cursor === '') return null;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    const key: unknown = Array.isArray(parsed) && parsed.length === 1 ? parsed[0] : undefined;
    // The key must be one the database can take (a safe integer id, a uuid): a forged one is a 400.
    if (kind === 'number' ? Number.isSafeInteger(key) : typeof key === 'string' && UUID.test(key)) {
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

export function pageRequest(query: PageQueryValues): PageRequest {
  return { limit: clampLimit(query.limit), afterId: decodeCursor(query.cursor, 'number') };
}

/** Rows were fetched with LIMIT limit + 1: the extra row says there is a next page. */
export function toPage<T>(rows: T[], limit: number, keyOf: (row: T) => string | number): PageOf<T> {
  if (rows.length <= limit) return { data: rows, next_cursor: null };
  const data = rows.slice(0, limit);
  return { data, next_cursor: encodeCursor(keyOf(data[data.length - 1] as T)) };
}
