// The SQL of people. Reads take the caller's location and filter by it.
import type { Queryable } from '../../platform/db/index.ts';
import { readFilteredJsonPage } from '../../platform/page-json.ts';
import { emailKey } from './rules.ts';
import type { Person } from './schemas.ts';

export interface PersonRow {
  id: string;
  account_id: number;
  location_id: number;
  location_name: string;
  location_path: number[];
  name: string;
  email: string | null;
  phone: string | null;
  company_name: string | null;
  title: string | null;
  language: string | null;
  managed: boolean;
}

const SELECT = `
  SELECT p.id, p.account_id, p.location_id, l.name AS location_name, l.path AS location_path, p.name, p.email, p.phone,
         p.company_name, p.title, p.language, p.managed
    FROM people p JOIN locations l ON l.id = p.location_id`;

export function toPerson(row: PersonRow): Person {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    company_name: row.company_name,
    title: row.title,
    language: row.language,
    location: { id: row.location_id, name: row.location_name },
  };
}

/** A live person under `scopeLocationId`, or null. */
export async function findPerson(db: Queryable, scopeLocationId: number | null, id: string): Promise<PersonRow | null> {
  const rows = await db.query<PersonRow>(
    `${SELECT} WHERE p.id = $1 AND p.deleted_at IS NULL AND ($2::bigint IS NULL OR l.path @> ARRAY[$2]::bigint[])`,
    [id, scopeLocationId],
  );
  return rows[0] ?? null;
}

/**
 * The first live person under the scope with this phone or this e-mail (its emailKey). Stored addresses are
 * ASCII, so lower() of one is its emailKey; the other side is folded in emailKey already (the index stays used).
 */
export async function findDuplicate(
  db: Queryable,
  scopeLocationId: number,
  accountId: number,
  phone: string | null,
  email: string | null,
): Promise<PersonRow | null> {
  if (phone === null && email === null) return null;
  const rows = await db.query<PersonRow>(
    `${SELECT}
      WHERE p.account_id = $1 AND p.deleted_at IS NULL AND l.path @> ARRAY[$2]::bigint[]
        AND (p.phone = $3 OR lower(p.email) = $4)
      ORDER BY p.created_at, p.id
      LIMIT 1`,
    [accountId, scopeLocationId, phone, email === null ? null : emailKey(email)],
  );
  return rows[0] ?? null;
}

/** A page of GET /v1/people read into rows: the reference peoplePageJson is held to (test/platform/list-pages-json.test.ts). */
export async function listPeople(
  db: Queryable,
  scopeLocationId: number,
  filter: { email: string | null; phone: string | null },
  afterId: string | null,
  limit: number,
): Promise<PersonRow[]> {
  return db.query<PersonRow>(
    `${SELECT}
      WHERE p.deleted_at IS NULL AND l.path @> ARRAY[$1]::bigint[]
        AND ($2::text IS NULL OR lower(p.email) = $2)
        AND ($3::text IS NULL OR p.phone = $3)
        AND ($4::uuid IS NULL OR p.id > $4::uuid)
      ORDER BY p.id
      LIMIT $5`,
    [scopeLocationId, filter.email === null ? null : emailKey(filter.email), filter.phone, afterId, limit],
  );
}

/**
 * listPeople's page as the JSON GET /v1/people sends, made by PostgreSQL (page-json.ts): the Person schema's
 * properties in its order, one statement per combination of the filters given.
 */
export async function peoplePageJson(
  db: Queryable,
  scopeLocationId: number,
  filter: { email: string | null; phone: string | null },
  afterId: string | null,
  limit: number,
): Promise<string> {
  const conditions = [
    { sql: (p: string) => `l.path @> ARRAY[${p}]::bigint[]`, value: scopeLocationId },
    filter.email === null ? null : { sql: (p: string) => `lower(p.email) = ${p}`, value: emailKey(filter.email) },
    filter.phone === null ? null : { sql: (p: string) => `p.phone = ${p}`, value: filter.phone },
    afterId === null ? null : { sql: (p: string) => `p.id > ${p}::uuid`, value: afterId },
  ];
  return readFilteredJsonPage(
    db,
    { name: 'people.pageJson', conditions, limit, key: 'uuid', tag: 'people' },
    (where, read) => `SELECT p.id AS key, row_to_json(item)::text AS item
         FROM people p
         JOIN locations l ON l.id = p.location_id
         CROSS JOIN LATERAL (
           SELECT p.id, p.name, p.email, p.phone, p.company_name, p.title, p.language,
                  (SELECT location FROM (SELECT l.id, l.name) AS location) AS location) AS item
        WHERE p.deleted_at IS NULL AND ${where}
        ORDER BY p.id
        LIMIT ${read}`,
  );
}

/**
 * The operator's search in one account: `q` found in the name or e-mail (case-insensitive) or, when it
 * has digits, in the phone's digits. In id order, keyset-paged: no OFFSET, no whole-table read per page.
 */
/** Whether an account exists (an operator search of an unknown one answers 404, as the other lists do). */
export async function accountExists(db: Queryable, accountId: number): Promise<boolean> {
  return (await db.query('SELECT 1 FROM accounts WHERE id = $1', [accountId])).length > 0;
}

export async function searchPeople(db: Queryable, accountId: number, q: string | null, afterId: string | null, limit: number): Promise<PersonRow[]> {
  const digits = q?.replace(/\D/g, '') ?? '';
  return db.query<PersonRow>(
    `${SELECT}
      WHERE p.deleted_at IS NULL AND p.account_id = $1
        AND ($2::text IS NULL OR strpos(lower(p.name), lower($2)) > 0 OR strpos(lower(p.email), lower($2)) > 0
             OR ($3 <> '' AND strpos(p.phone, $3) > 0))
        AND ($4::uuid IS NULL OR p.id > $4::uuid)
      ORDER BY p.id
      LIMIT $5`,
    [accountId, q, digits, afterId, limit],
  );
}

export interface PersonValues {
  name: string;
  email: string | null;
  phone: string | null;
  company_name: string | null;
  title: string | null;
  language: string | null;
  location_id: number;
}

export async function insertPerson(
  db: Queryable,
  person: PersonValues & { id: string; account_id: number; managed: boolean },
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO people (id, account_id, location_id, name, email, phone, company_name, title, language, managed, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
    [person.id, person.account_id, person.location_id, person.name, person.email, person.phone, person.company_name, person.title, person.language, person.managed, now],
  );
}

export async function updatePerson(db: Queryable, id: string, values: PersonValues, now: Date): Promise<void> {
  await db.query(
    `UPDATE people SET name = $2, email = $3, phone = $4, company_name = $5, title = $6, language = $7, location_id = $8, updated_at = $9
      WHERE id = $1`,
    [id, values.name, values.email, values.phone, values.company_name, values.title, values.language, values.location_id, now],
  );
}

export async function softDeletePerson(db: Queryable, id: string, now: Date): Promise<boolean> {
  const rows = await db.query('UPDATE people SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL RETURNING id', [id, now]);
  return rows.length > 0;
}

/**
 * A deleted person's contact details go, last in the deletion's transaction: its own events (person.deleted,
 * key.revoked) still carry them, as the spec's payloads do. The name stays: keys and the access log name who held them.
 */
export async function forgetContactDetails(tx: Queryable, id: string): Promise<void> {
  await tx.query('UPDATE people SET email = NULL, phone = NULL, company_name = NULL, title = NULL WHERE id = $1', [id]);
}

/** A location with its account's locking system: where a person may be put. */
export async function findLocationWithAccount(
  db: Queryable,
  locationId: number,
): Promise<{ id: number; account_id: number; path: number[]; locking_system: string | null } | null> {
  const [row] = await db.query<{ id: number; account_id: number; path: number[]; locking_system: string | null }>(
    `SELECT l.id, l.account_id, l.path, a.locking_system FROM locations l JOIN accounts a ON a.id = l.account_id WHERE l.id = $1`,
    [locationId],
  );
  return row ?? null;
}

export async function findAccountLockingSystem(db: Queryable, accountId: number): Promise<string | null> {
  const [row] = await db.query<{ locking_system: string | null }>('SELECT locking_system FROM accounts WHERE id = $1', [accountId]);
  return row?.locking_system ?? null;
}

/** A transaction-scoped advisory lock on a text key (released at commit or rollback). */
export async function lockKey(tx: Queryable, key: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [key]);
}

/** The people deleted after `since` (an index on deleted_at: a few rows at most), for the webhooks' sweep (webhooks/person-data.ts). */
export async function peopleDeletedSince(db: Queryable, since: Date): Promise<string[]> {
  const rows = await db.query<{ id: string }>({ name: 'people.deletedSince', text: 'SELECT id FROM people WHERE deleted_at > $1' }, [since]);
  return rows.map((row) => row.id);
}
