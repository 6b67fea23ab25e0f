// Pages of a list whose items' JSON PostgreSQL writes (row_to_json): the service sends the text as it comes,
// never parsing rows into objects to serialize them again. row_to_json writes compact JSON with the columns in
// the order selected and strings escaped as JSON.stringify escapes them, so a statement that selects the
// schema's properties in the schema's order gives the bytes the route's serializer gave (each list's test
// holds the two side by side). Timestamps are written with ISO_MILLISECONDS, as Date.toISOString writes them.
import type { Queryable, Sql } from './db/index.ts';
import { encodeCursor, type CursorTag } from './pagination.ts';

/** A timestamptz column as Date.toISOString writes it (milliseconds, truncated, and Z), for row_to_json. */
export const isoMilliseconds = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The statement that reads a page: `rows` selects `key` (the keyset column it is ordered by) and `item` (the
 * item's JSON text) with LIMIT `readParam`, the page's limit plus one; this aggregates them into one row: the
 * page's items joined by commas, how many rows were read, and the key of the page's last item.
 */
export function jsonPageSql(rows: string, readParam: string): string {
  return `SELECT string_agg(page.item, ',' ORDER BY page.n) FILTER (WHERE page.n < ${readParam}) AS items,
                 count(*)::int AS read,
                 string_agg(page.key::text, '') FILTER (WHERE page.n = ${readParam} - 1) AS last_key
            FROM (SELECT r.key, r.item, row_number() OVER (ORDER BY r.key) AS n FROM (${rows}) AS r) AS page`;
}

/**
 * Runs a jsonPageSql statement and writes the page envelope around its items, as the Page schema has it:
 * `next_cursor` (the last item's key) when more rows were read than the page holds.
 */
export async function readJsonPage(
  db: Queryable,
  sql: Sql,
  params: readonly unknown[],
  page: { limit: number; key: 'number' | 'uuid'; tag: CursorTag },
): Promise<string> {
  const [row] = await db.query<{ items: string | null; read: number; last_key: string | null }>(sql, params);
  const more = (row?.read ?? 0) > page.limit && row?.last_key != null;
  return pageEnvelope(row?.items ?? '', more ? encodeCursor(page.key === 'number' ? Number(row.last_key) : (row.last_key as string), page.tag) : null);
}

/** A page as the Page schema has it, around its items' JSON (comma-separated); `nextCursor`: encodeCursor of the key the next page starts after. */
export const pageEnvelope = (items: string, nextCursor: string | null): string =>
  `{"data":[${items}],"next_cursor":${nextCursor === null ? 'null' : JSON.stringify(nextCursor)}}`;

/** A filter of a list: its condition on its parameter (`$n`) and its value; null where the query does not filter on it. */
export type Condition = { sql: (param: string) => string; value: unknown } | null;

const shapedTexts = new Map<string, string>();

/**
 * A page of a list filtered on what the query gives, as readJsonPage writes it. `rows(where, read)` is the
 * statement's rows as jsonPageSql takes them: `where` holds only the conditions present (numbered from $1), `read`
 * is the parameter of the page's limit plus one. Each combination of filters is a statement text of its own, kept
 * once built, and stays unnamed, planned for its values at each call: prepared, server PostgreSQL would switch to
 * a plan made for any value after five calls, and that plan read 300,000 people in parallel for 2.6 s where the
 * plan for the values took 1 ms (bench/RESULTS.md, plans made for any value). Without `$n IS NULL OR …`
 * branches, each shape is still planned on what it filters.
 */
export async function readFilteredJsonPage(
  db: Queryable,
  list: { name: string; conditions: readonly Condition[]; limit: number; key: 'number' | 'uuid'; tag: CursorTag },
  rows: (where: string, read: string) => string,
): Promise<string> {
  const present = list.conditions.filter((c): c is NonNullable<Condition> => c !== null);
  const shape = `${list.name}.${list.conditions.map((c) => (c ? '1' : '0')).join('')}`;
  let sql = shapedTexts.get(shape);
  if (sql === undefined) {
    const where = present.map((c, i) => c.sql(`$${i + 1}`)).join(' AND ');
    const read = `$${present.length + 1}`;
    sql = jsonPageSql(rows(where === '' ? 'true' : where, read), read);
    shapedTexts.set(shape, sql);
  }
  return readJsonPage(db, sql, [...present.map((c) => c.value), list.limit + 1], list);
}
