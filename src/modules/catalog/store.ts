// The SQL of the catalog. Every query takes the caller's location and filters by it.
import type { Queryable } from '../../platform/db/index.ts';
import { jsonPageSql, readJsonPage } from '../../platform/page-json.ts';
import type { Lock, OperatorLock, SecurityGroup } from './schemas.ts';

interface LockRow {
  id: number;
  name: string;
  serial_number: string | null;
  place: string;
  provider: string;
  online: boolean | null;
  gateway_id: number | null;
  security_groups: string[];
  location_id: number;
  location_name: string;
  location_path: number[];
}

export type ScopedLock = Lock & { locationPath: number[]; gatewayId: number | null };

const LOCK_SELECT = `
  SELECT k.id, k.name, k.serial_number, k.place, k.provider,
         CASE WHEN k.gateway_id IS NULL THEN NULL ELSE g.online END AS online, k.gateway_id,
         k.security_group_codes AS security_groups,
         l.id AS location_id, l.name AS location_name, l.path AS location_path
    FROM locks k
    JOIN locations l ON l.id = k.location_id
    LEFT JOIN gateways g ON g.id = k.gateway_id`;

function toLock(row: LockRow): ScopedLock {
  return {
    id: row.id,
    name: row.name,
    serial_number: row.serial_number,
    place: row.place,
    provider: row.provider,
    online: row.online,
    security_groups: row.security_groups,
    location: { id: row.location_id, name: row.location_name },
    locationPath: row.location_path.map(Number),
    gatewayId: row.gateway_id === null ? null : Number(row.gateway_id),
  };
}

/** The lock as the public API shows it. */
export function publicLock(lock: ScopedLock): Lock {
  const { locationPath: _path, gatewayId: _gateway, ...rest } = lock;
  return rest;
}

/** The lock as the operator API shows it: with its gateway. */
export function operatorLock(lock: ScopedLock): OperatorLock {
  return { ...publicLock(lock), gateway_id: lock.gatewayId };
}

/** One lock by id, whatever its location (the caller checks scope on locationPath). */
const FIND_LOCK = { name: 'catalog.findLock', text: `${LOCK_SELECT} WHERE k.id = $1` };
const LIST_LOCKS = {
  name: 'catalog.listLocks',
  text: `${LOCK_SELECT}
      WHERE l.path @> $1::bigint[] AND k.id > $2
      ORDER BY k.id
      LIMIT $3`,
};
/**
 * GET /v1/locks with the JSON made by PostgreSQL (page-json.ts): the Lock schema's properties in its order.
 * $1 the caller's location, then the filter's if any: the lock lies under both, and the filter at or below the
 * caller's (a filter naming a location above it gave the caller's own locks, telling which locations are its
 * ancestors; it gives none, as a location outside the scope does); $2 the cursor's id, $3 the page's limit plus one.
 */
const LOCKS_PAGE_JSON = {
  name: 'catalog.locksPageJson',
  text: jsonPageSql(
    `SELECT k.id AS key, row_to_json(item)::text AS item
       FROM locks k
       JOIN locations l ON l.id = k.location_id
       LEFT JOIN gateways g ON g.id = k.gateway_id
       CROSS JOIN LATERAL (
         SELECT k.id, k.name, k.serial_number, k.place, k.provider,
                CASE WHEN k.gateway_id IS NULL THEN NULL ELSE g.online END AS online,
                k.security_group_codes AS security_groups,
                (SELECT location FROM (SELECT l.id, l.name) AS location) AS location) AS item
      WHERE l.path @> $1::bigint[] AND k.id > $2
        AND array_position(l.path, ($1::bigint[])[cardinality($1::bigint[])]) >= array_position(l.path, ($1::bigint[])[1])
      ORDER BY k.id
      LIMIT $3`,
    '$3',
  ),
};
/**
 * The groups a caller at location $1 may give: those defined in its scope (for the people below it) and those
 * defined above it (they exist at its location too, as the keys' validation reads it); never a sibling's.
 */
const LIST_SECURITY_GROUPS = {
  name: 'catalog.listSecurityGroups',
  text: `SELECT sg.id, sg.code, sg.title, sg.description, sg.is_default
       FROM security_groups sg
       JOIN locations l ON l.id = sg.location_id
      WHERE (l.path @> ARRAY[$1]::bigint[] OR sg.location_id = ANY((SELECT path FROM locations WHERE id = $1)::bigint[]))
        AND sg.id > $2 AND ($3::boolean IS NULL OR sg.is_default = $3)
      ORDER BY sg.id
      LIMIT $4`,
};

export async function findLock(db: Queryable, id: number): Promise<ScopedLock | null> {
  const rows = await db.query<LockRow>(FIND_LOCK, [id]);
  return rows[0] ? toLock(rows[0]) : null;
}

/** Locks whose location lies under every id of `underLocations` (the caller's scope, plus a filter). */
export async function listLocks(
  db: Queryable,
  underLocations: number[],
  afterId: number | null,
  limit: number,
): Promise<ScopedLock[]> {
  const rows = await db.query<LockRow>(LIST_LOCKS, [underLocations, afterId ?? 0, limit]);
  return rows.map(toLock);
}

/** listLocks' page as the JSON GET /v1/locks sends. */
export async function locksPageJson(db: Queryable, underLocations: number[], afterId: number | null, limit: number): Promise<string> {
  return readJsonPage(db, LOCKS_PAGE_JSON, [underLocations, afterId ?? 0, limit + 1], { limit, key: 'number', tag: 'locks' });
}

export async function listSecurityGroups(
  db: Queryable,
  scopeLocationId: number,
  isDefault: boolean | undefined,
  afterId: number | null,
  limit: number,
): Promise<SecurityGroup[]> {
  return db.query<SecurityGroup>(LIST_SECURITY_GROUPS, [scopeLocationId, afterId ?? 0, isDefault ?? null, limit]);
}

/** Security-group codes usable at a location: those defined there or at a location above it. */
export async function groupCodesAt(db: Queryable, locationId: number): Promise<Set<string>> {
  const rows = await db.query<{ code: string }>(
    `SELECT sg.code FROM security_groups sg
      WHERE sg.location_id = ANY((SELECT path FROM locations WHERE id = $1)::bigint[])`,
    [locationId],
  );
  return new Set(rows.map((r) => r.code));
}
