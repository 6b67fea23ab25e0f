// The SQL of keys (invitations: invitation-store.ts). Scope follows the person: a key is in a caller's
// scope when its person's location is.
import type { Queryable } from '../../platform/db/index.ts';
import { isoMilliseconds, readFilteredJsonPage } from '../../platform/page-json.ts';
import type { EmbeddedKey, Key } from './schemas.ts';

/** A key as read: the fields a Key shows as they are (schemas.ts), its times as Dates, and its person. */
export interface KeyRow extends Pick<Key, 'id' | 'person_id' | 'invitation_id' | 'type' | 'name' | 'state' | 'security_groups'> {
  account_id: number;
  person_name: string;
  person_email: string | null;
  person_location_id: number;
  starts_at: Date;
  expires_at: Date | null;
  managed_in_locking_system: boolean;
  /** The credential, encrypted (secret box); null: the key presents none at a reader. */
  credential_box: string | null;
}

const KEY_SELECT = `
  SELECT k.id, k.account_id, k.person_id, p.name AS person_name, p.email AS person_email, p.location_id AS person_location_id,
         k.invitation_id, k.type, k.name, k.state, k.security_groups, k.starts_at, k.expires_at, k.managed_in_locking_system,
         k.credential_box
    FROM keys k
    JOIN people p ON p.id = k.person_id
    JOIN locations l ON l.id = p.location_id`;

export function toEmbeddedKey(row: KeyRow): EmbeddedKey {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    state: row.state,
    person_id: row.person_id,
    security_groups: row.security_groups,
    starts_at: row.starts_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
  };
}

export function toKey(row: KeyRow): Key {
  return { ...toEmbeddedKey(row), invitation_id: row.invitation_id };
}

/** A live (not revoked) key under the scope; scope null: any. */
export async function findKey(db: Queryable, scopeLocationId: number | null, id: number): Promise<KeyRow | null> {
  const rows = await db.query<KeyRow>(
    `${KEY_SELECT} WHERE k.id = $1 AND k.revoked_at IS NULL AND ($2::bigint IS NULL OR l.path @> ARRAY[$2]::bigint[])`,
    [id, scopeLocationId],
  );
  return rows[0] ?? null;
}

/**
 * A live key, its row locked until the transaction ends: a change decided on a row read before (validated,
 * written to the locking system) is made only to the key as it is now, never to one revoked or returned meanwhile.
 */
export async function lockLiveKey(tx: Queryable, id: number): Promise<KeyRow | null> {
  const rows = await tx.query<KeyRow>(`${KEY_SELECT} WHERE k.id = $1 AND k.revoked_at IS NULL FOR UPDATE OF k`, [id]);
  return rows[0] ?? null;
}

/** A page of GET /v1/keys read into rows: the reference keysPageJson is held to (test/platform/list-pages-json.test.ts). */
export async function listKeys(
  db: Queryable,
  scopeLocationId: number,
  filter: { personId: string | null; state: string | null; securityGroup: string | null },
  afterId: number | null,
  limit: number,
): Promise<KeyRow[]> {
  return db.query<KeyRow>(
    `${KEY_SELECT}
      WHERE k.revoked_at IS NULL AND l.path @> ARRAY[$1]::bigint[] AND k.id > $2
        AND ($3::uuid IS NULL OR k.person_id = $3::uuid)
        AND ($4::text IS NULL OR k.state = $4)
        AND ($5::text IS NULL OR $5 = ANY(k.security_groups))
      ORDER BY k.id LIMIT $6`,
    [scopeLocationId, afterId ?? 0, filter.personId, filter.state, filter.securityGroup, limit],
  );
}

/**
 * listKeys' page as the JSON GET /v1/keys sends, made by PostgreSQL (page-json.ts): the Key schema's properties
 * in its order, one statement per combination of the filters given.
 */
export async function keysPageJson(
  db: Queryable,
  scopeLocationId: number,
  filter: { personId: string | null; state: string | null; securityGroup: string | null },
  afterId: number | null,
  limit: number,
): Promise<string> {
  const conditions = [
    { sql: (p: string) => `l.path @> ARRAY[${p}]::bigint[]`, value: scopeLocationId },
    afterId === null ? null : { sql: (p: string) => `k.id > ${p}`, value: afterId },
    filter.personId === null ? null : { sql: (p: string) => `k.person_id = ${p}::uuid`, value: filter.personId },
    filter.state === null ? null : { sql: (p: string) => `k.state = ${p}`, value: filter.state },
    filter.securityGroup === null ? null : { sql: (p: string) => `${p} = ANY(k.security_groups)`, value: filter.securityGroup },
  ];
  return readFilteredJsonPage(
    db,
    { name: 'keys.pageJson', conditions, limit, key: 'number', tag: 'keys' },
    (where, read) => `SELECT k.id AS key, row_to_json(item)::text AS item
         FROM keys k
         JOIN people p ON p.id = k.person_id
         JOIN locations l ON l.id = p.location_id
         CROSS JOIN LATERAL (
           SELECT k.id, k.name, k.type, k.state, k.person_id, k.security_groups,
                  ${isoMilliseconds('k.starts_at')} AS starts_at, ${isoMilliseconds('k.expires_at')} AS expires_at,
                  k.invitation_id) AS item
        WHERE k.revoked_at IS NULL AND ${where}
        ORDER BY k.id
        LIMIT ${read}`,
  );
}

/** Every live key of a person, whatever the scope. */
export async function liveKeysOfPerson(db: Queryable, personId: string): Promise<KeyRow[]> {
  return db.query<KeyRow>(`${KEY_SELECT} WHERE k.person_id = $1 AND k.revoked_at IS NULL ORDER BY k.id`, [personId]);
}

export async function keysOfPerson(db: Queryable, scopeLocationId: number, personId: string): Promise<EmbeddedKey[]> {
  const rows = await db.query<KeyRow>(
    `${KEY_SELECT} WHERE k.person_id = $1 AND k.revoked_at IS NULL AND l.path @> ARRAY[$2]::bigint[] ORDER BY k.id`,
    [personId, scopeLocationId],
  );
  return rows.map(toEmbeddedKey);
}

export interface NewKey {
  accountId: number;
  personId: string;
  invitationId: number | null;
  type: string;
  name: string;
  groups: string[];
  startsAt: Date;
  expiresAt: Date | null;
  managed: boolean;
  credential: StoredCredential | null;
}

/** A credential as stored: its lookup HMAC and the credential encrypted. */
export interface StoredCredential {
  hash: string;
  box: string;
}

/**
 * Whether the person is not deleted, their row held (FOR SHARE) until the transaction ends: a deletion (an UPDATE of
 * the row, which revokes their keys) then waits for this transaction and revokes what it made, or came first.
 */
export async function holdLivePerson(tx: Queryable, personId: string): Promise<boolean> {
  return (await tx.query('SELECT 1 FROM people WHERE id = $1 AND deleted_at IS NULL FOR SHARE', [personId])).length > 0;
}

/** A key that is handed over from the start; returns its id. */
export async function insertKey(db: Queryable, key: NewKey, now: Date): Promise<number> {
  const [row] = await db.query<{ id: number }>(
    `INSERT INTO keys (account_id, person_id, invitation_id, type, name, state, security_groups, starts_at, expires_at, managed_in_locking_system,
                       credential_hash, credential_box, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'handed_over', $6::text[], $7, $8, $9, $10, $11, $12, $12) RETURNING id`,
    [key.accountId, key.personId, key.invitationId, key.type, key.name, key.groups, key.startsAt, key.expiresAt, key.managed,
      key.credential?.hash ?? null, key.credential?.box ?? null, now],
  );
  return (row as { id: number }).id;
}

/** The live key of the account (in use: not returned) presenting this credential, other than `exceptId`. */
export async function keyWithCredential(db: Queryable, accountId: number, hash: string, exceptId: number | null): Promise<number | null> {
  const [row] = await db.query<{ id: number }>(
    `SELECT id FROM keys WHERE account_id = $1 AND credential_hash = $2 AND revoked_at IS NULL AND state <> 'returned' AND id <> $3 LIMIT 1`,
    [accountId, hash, exceptId ?? 0],
  );
  return row ? Number(row.id) : null;
}

/** A new credential (null: none); the key waits in `state` for the gateways when it changes what they hold. */
export async function setKeyCredential(db: Queryable, id: number, credential: StoredCredential | null, state: Key['state'], now: Date): Promise<void> {
  await db.query('UPDATE keys SET credential_hash = $2, credential_box = $3, state = $4, updated_at = $5 WHERE id = $1', [
    id, credential?.hash ?? null, credential?.box ?? null, state, now,
  ]);
}

/** Keys whose change every gateway applied: `sent` → `handed_over` where no external locking system confirms. */
export async function confirmAppliedKeys(db: Queryable, keyIds: number[], now: Date): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    `UPDATE keys k SET state = 'handed_over', updated_at = $2
       FROM accounts a
      WHERE k.id = ANY($1::bigint[]) AND a.id = k.account_id AND a.locking_system IS NULL AND k.state = 'sent' AND k.revoked_at IS NULL
      RETURNING k.id`,
    [keyIds, now],
  );
  return rows.map((row) => Number(row.id));
}

export async function updateKey(
  db: Queryable,
  id: number,
  values: { name: string; groups: string[]; startsAt: Date; expiresAt: Date | null; state: Key['state'] },
  now: Date,
): Promise<void> {
  await db.query(
    `UPDATE keys SET name = $2, security_groups = $3::text[], starts_at = $4, expires_at = $5, state = $6, updated_at = $7 WHERE id = $1`,
    [id, values.name, values.groups, values.startsAt, values.expiresAt, values.state, now],
  );
}

/** Revokes a live key: it expires now and reads `returned`. False when it was revoked already. */
export async function markKeyRevoked(db: Queryable, id: number, now: Date): Promise<boolean> {
  const rows = await db.query(
    `UPDATE keys SET revoked_at = $2, expires_at = $2, state = 'returned', updated_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id`,
    [id, now],
  );
  return rows.length > 0;
}

/** A key the operator took back: it stays listed, `returned`. */
export async function markKeyReturned(db: Queryable, id: number, now: Date): Promise<void> {
  await db.query(`UPDATE keys SET state = 'returned', updated_at = $2 WHERE id = $1`, [id, now]);
}

/** Every live key of the account whose change the locking system held (`sent`) becomes `handed_over`; their ids. */
export async function confirmHeldKeys(db: Queryable, accountId: number, now: Date): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    `UPDATE keys SET state = 'handed_over', updated_at = $2 WHERE account_id = $1 AND state = 'sent' AND revoked_at IS NULL RETURNING id`,
    [accountId, now],
  );
  return rows.map((row) => row.id);
}

/** Keys whose held change an external locking system has now confirmed: `sent` → `handed_over`. */
export async function confirmLockingSystemKeys(db: Queryable, keyIds: number[], now: Date): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    `UPDATE keys k SET state = 'handed_over', updated_at = $2
       FROM accounts a
      WHERE k.id = ANY($1::bigint[]) AND a.id = k.account_id AND a.locking_system IS NOT NULL AND k.state = 'sent' AND k.revoked_at IS NULL
      RETURNING k.id`,
    [keyIds, now],
  );
  return rows.map((row) => Number(row.id));
}

/** What the keys area needs of an account. */
export interface AccountRow {
  id: number;
  sms_enabled: boolean;
  locking_system: string | null;
}

export async function findAccount(db: Queryable, id: number): Promise<AccountRow | null> {
  const [row] = await db.query<AccountRow>('SELECT id, sms_enabled, locking_system FROM accounts WHERE id = $1', [id]);
  return row ?? null;
}
