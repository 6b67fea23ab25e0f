// The SQL of access decisions: an account's catalog as the decision reads it, keys by credential, and each
// gateway's versioned access list (entries, removals, what the gateway applied, key changes waiting for it).
import type { Queryable } from '../../platform/db/index.ts';
import type { AccountFacts, GroupFacts, LockFacts } from './resolve.ts';
import { timeZoneAt, groupAt } from './resolve.ts';
import { progressAfterPart, type RebuildProgress } from './rebuild-progress.ts';
import type { TimeWindow } from './types.ts';

const LOCATIONS = {
  name: 'access.locations',
  text: 'SELECT id, path, time_zone FROM locations WHERE account_id = $1',
};
const GROUPS = {
  name: 'access.groups',
  text: `SELECT sg.id, sg.code, sg.location_id, sg.windows
           FROM security_groups sg JOIN locations l ON l.id = sg.location_id
          WHERE l.account_id = $1`,
};
const LOCKS = {
  name: 'access.locks',
  text: `SELECT k.id, k.gateway_id, k.location_id, k.security_group_codes
           FROM locks k JOIN locations l ON l.id = k.location_id
          WHERE l.account_id = $1`,
};

/** Locations, security groups and locks of an account, resolved (three statements). */
export async function loadAccountFacts(db: Queryable, accountId: number): Promise<AccountFacts> {
  const locations = await db.query<{ id: number; path: number[]; time_zone: string | null }>(LOCATIONS, [accountId]);
  const groups = await db.query<{ id: number; code: string; location_id: number; windows: TimeWindow[] | null }>(GROUPS, [accountId]);
  const locks = await db.query<{ id: number; gateway_id: number | null; location_id: number; security_group_codes: string[] }>(LOCKS, [accountId]);
  const zones = new Map(locations.map((l) => [Number(l.id), l.time_zone]));
  const paths = new Map(locations.map((l) => [Number(l.id), l.path.map(Number)]));
  const groupsByCode = new Map<string, GroupFacts[]>();
  for (const g of groups) {
    const facts: GroupFacts = { id: Number(g.id), code: g.code, locationId: Number(g.location_id), windows: g.windows };
    const list = groupsByCode.get(g.code);
    if (list) list.push(facts);
    else groupsByCode.set(g.code, [facts]);
  }
  const lockFacts = new Map<number, LockFacts>();
  for (const lock of locks) {
    const path = paths.get(Number(lock.location_id)) ?? [];
    const resolved = lock.security_group_codes.flatMap((code) => groupAt(groupsByCode, path, code) ?? []);
    lockFacts.set(Number(lock.id), {
      id: Number(lock.id),
      gatewayId: lock.gateway_id === null ? null : Number(lock.gateway_id),
      timeZone: timeZoneAt(zones, path),
      groups: resolved,
    });
  }
  return { accountId, groupsByCode, locks: lockFacts };
}

export interface GatewayAccount {
  accountId: number;
  offlineAccessSeconds: number;
}

export async function gatewayAccount(db: Queryable, gatewayId: number): Promise<GatewayAccount | null> {
  const [row] = await db.query<{ account_id: number; offline_access_seconds: number }>(
    {
      name: 'access.gatewayAccount',
      text: `SELECT l.account_id, a.offline_access_seconds
               FROM gateways g JOIN locations l ON l.id = g.location_id JOIN accounts a ON a.id = l.account_id
              WHERE g.id = $1`,
    },
    [gatewayId],
  );
  return row ? { accountId: Number(row.account_id), offlineAccessSeconds: row.offline_access_seconds } : null;
}

/** A key as the decision and the list builder read it, with its person's location path. */
export interface AccessKeyRow {
  id: number;
  state: string;
  starts_at: Date;
  expires_at: Date | null;
  security_groups: string[];
  person_path: number[];
}

/** What a lookup by credential reads, and from where: follows SELECT or SELECT DISTINCT ON. */
const KEY_BY_CREDENTIAL = `k.credential_hash, k.id, k.state, k.starts_at, k.expires_at, k.security_groups, l.path AS person_path
               FROM keys k JOIN people p ON p.id = k.person_id AND p.deleted_at IS NULL JOIN locations l ON l.id = p.location_id`;

/**
 * The live keys presenting the credentials whose lookup hashes are `hashes`, in one account, by hash; a hash
 * that matches none is absent. A returned key keeps its credential until it is given out again: it is found
 * (and refused as `no_access`) unless a key in use has the credential now. Two statements whatever the number
 * of hashes (the swipes of a busy moment are looked up together: credential-cache.ts): the keys in use, found
 * through the unique index keys_credential (whose predicate the first repeats, so the planner can use it: one
 * statement ordering returned keys last cannot, and read every live key of the account, about 20 ms at 30,000
 * keys); then, only for the hashes still unmatched, the newest returned key of each.
 */
export async function keysByCredential(db: Queryable, accountId: number, hashes: readonly string[]): Promise<Map<string, AccessKeyRow>> {
  const found = new Map<string, AccessKeyRow>();
  const keep = (rows: Array<AccessKeyRow & { credential_hash: string }>) => {
    for (const { credential_hash: hash, ...row } of rows) found.set(hash, row);
  };
  keep(
    await db.query<AccessKeyRow & { credential_hash: string }>(
      {
        name: 'access.keysByCredential',
        text: `SELECT ${KEY_BY_CREDENTIAL}
                WHERE k.account_id = $1 AND k.credential_hash = ANY($2::text[]) AND k.credential_hash IS NOT NULL
                  AND k.revoked_at IS NULL AND k.state <> 'returned'`,
      },
      [accountId, hashes],
    ),
  );
  const unmatched = hashes.filter((hash) => !found.has(hash));
  if (unmatched.length === 0) return found;
  keep(
    await db.query<AccessKeyRow & { credential_hash: string }>(
      {
        name: 'access.returnedKeysByCredential',
        text: `SELECT DISTINCT ON (k.credential_hash) ${KEY_BY_CREDENTIAL}
                WHERE k.account_id = $1 AND k.credential_hash = ANY($2::text[]) AND k.revoked_at IS NULL AND k.state = 'returned'
                ORDER BY k.credential_hash, k.id DESC`,
      },
      [accountId, unmatched],
    ),
  );
  return found;
}

export type ListKeyRow = AccessKeyRow & { credential_box: string };

/**
 * The keys that may be on an account's gateway lists: with a credential, not revoked, in a state that opens,
 * not expired at `now`, of a person not deleted (a deletion revokes their keys; this holds even for a key it
 * missed); `keyIds` null: all of them.
 */
export async function keysForLists(db: Queryable, accountId: number, keyIds: number[] | null, now: Date): Promise<ListKeyRow[]> {
  return db.query<ListKeyRow>(
    `SELECT k.id, k.state, k.starts_at, k.expires_at, k.security_groups, l.path AS person_path, k.credential_box
       FROM keys k JOIN people p ON p.id = k.person_id AND p.deleted_at IS NULL JOIN locations l ON l.id = p.location_id
      WHERE k.account_id = $1 AND k.credential_box IS NOT NULL AND k.revoked_at IS NULL
        AND k.state IN ('handed_over', 'sent') AND (k.expires_at IS NULL OR k.expires_at > $2)
        AND ($3::bigint[] IS NULL OR k.id = ANY($3::bigint[]))`,
    [accountId, now, keyIds],
  );
}

export interface ListGatewayRow {
  id: number;
  access_secret_box: string | null;
}

/** The account's gateways, each row locked: one list change per gateway at a time, versions in commit order. */
export async function lockAccountGateways(tx: Queryable, accountId: number): Promise<ListGatewayRow[]> {
  return tx.query<ListGatewayRow>(
    `SELECT g.id, g.access_secret_box FROM gateways g JOIN locations l ON l.id = g.location_id
      WHERE l.account_id = $1 ORDER BY g.id FOR UPDATE OF g`,
    [accountId],
  );
}

export async function currentEntries(db: Queryable, gatewayIds: number[], keyIds: number[] | null): Promise<Array<{ gateway_id: number; key_id: number; entry: string | null }>> {
  return db.query(
    `SELECT gateway_id, key_id, entry FROM gateway_access_entries
      WHERE gateway_id = ANY($1::bigint[]) AND ($2::bigint[] IS NULL OR key_id = ANY($2::bigint[]))`,
    [gatewayIds, keyIds],
  );
}

/** The gateway's next list version (its row is locked by lockAccountGateways). */
export async function bumpListVersion(tx: Queryable, gatewayId: number): Promise<number> {
  const [row] = await tx.query<{ v: string }>(
    'UPDATE gateways SET access_list_version = access_list_version + 1 WHERE id = $1 RETURNING access_list_version AS v',
    [gatewayId],
  );
  return Number((row as { v: string }).v);
}

/** Entries (null: a removal) written under one version. */
export async function writeEntries(tx: Queryable, gatewayId: number, version: number, changes: Array<{ keyId: number; entry: string | null }>): Promise<void> {
  await tx.query(
    `INSERT INTO gateway_access_entries (gateway_id, key_id, version, entry)
     SELECT $1, t.key_id, $2, t.entry FROM unnest($3::bigint[], $4::text[]) AS t (key_id, entry)
     ON CONFLICT (gateway_id, key_id) DO UPDATE SET version = EXCLUDED.version, entry = EXCLUDED.entry`,
    [gatewayId, version, changes.map((c) => c.keyId), changes.map((c) => c.entry)],
  );
}

/** Key changes that wait for the gateway to apply `version`. */
export async function markPending(tx: Queryable, gatewayId: number, version: number, keyIds: number[]): Promise<void> {
  if (keyIds.length === 0) return;
  await tx.query(
    `INSERT INTO gateway_access_pending (key_id, gateway_id, version) SELECT k, $1, $2 FROM unnest($3::bigint[]) AS k
     ON CONFLICT (key_id, gateway_id) DO UPDATE SET version = EXCLUDED.version`,
    [gatewayId, version, keyIds],
  );
}

/** The gateways whose list has not yet applied the key's last change, in id order. */
export async function gatewaysPendingFor(db: Queryable, keyId: number): Promise<number[]> {
  const rows = await db.query<{ gateway_id: number }>('SELECT gateway_id FROM gateway_access_pending WHERE key_id = $1 ORDER BY gateway_id', [keyId]);
  return rows.map((row) => Number(row.gateway_id));
}

/** Of these keys, those no gateway change waits for any more. */
export async function keysNotPending(db: Queryable, keyIds: number[]): Promise<number[]> {
  if (keyIds.length === 0) return [];
  const rows = await db.query<{ id: number }>(
    `SELECT k AS id FROM unnest($1::bigint[]) AS k WHERE NOT EXISTS (SELECT 1 FROM gateway_access_pending p WHERE p.key_id = k)`,
    [keyIds],
  );
  return rows.map((row) => Number(row.id));
}

/**
 * The gateway applied `version`: what waited for it no longer does, and removals it has applied are forgotten
 * (a gateway older than that gets the whole list). Returns the keys whose wait ended. A version the service
 * never made is ignored.
 */
export async function recordApplied(tx: Queryable, gatewayId: number, version: number): Promise<number[]> {
  const updated = await tx.query(
    `UPDATE gateways SET access_applied_version = $2, access_pruned_version = GREATEST(access_pruned_version, $2)
      WHERE id = $1 AND $2 <= access_list_version RETURNING id`,
    [gatewayId, version],
  );
  if (updated.length === 0) return [];
  await tx.query('DELETE FROM gateway_access_entries WHERE gateway_id = $1 AND entry IS NULL AND version <= $2', [gatewayId, version]);
  const done = await tx.query<{ key_id: number }>(
    'DELETE FROM gateway_access_pending WHERE gateway_id = $1 AND version <= $2 RETURNING key_id',
    [gatewayId, version],
  );
  return keysNotPending(tx, [...new Set(done.map((row) => Number(row.key_id)))]);
}

export interface ListState {
  listVersion: number;
  appliedVersion: number;
  prunedVersion: number;
  hasSecret: boolean;
  offlineAccessSeconds: number;
}

export async function listState(db: Queryable, gatewayId: number): Promise<ListState | null> {
  const [row] = await db.query<{ access_list_version: string; access_applied_version: string; access_pruned_version: string; has_secret: boolean; offline_access_seconds: number }>(
    {
      name: 'access.listState',
      text: `SELECT g.access_list_version, g.access_applied_version, g.access_pruned_version, g.access_secret_box IS NOT NULL AS has_secret, a.offline_access_seconds
               FROM gateways g JOIN locations l ON l.id = g.location_id JOIN accounts a ON a.id = l.account_id
              WHERE g.id = $1`,
    },
    [gatewayId],
  );
  if (!row) return null;
  return {
    listVersion: Number(row.access_list_version),
    appliedVersion: Number(row.access_applied_version),
    prunedVersion: Number(row.access_pruned_version),
    hasSecret: row.has_secret,
    offlineAccessSeconds: row.offline_access_seconds,
  };
}

/** Entries and removals after `version`, in version order. */
export async function entriesSince(db: Queryable, gatewayId: number, version: number): Promise<Array<{ key_id: number; entry: string | null }>> {
  return db.query(
    { name: 'access.entriesSince', text: 'SELECT key_id, entry FROM gateway_access_entries WHERE gateway_id = $1 AND version > $2 ORDER BY version, key_id' },
    [gatewayId, version],
  );
}

/** Every entry of the gateway's list (no removals). */
export async function fullList(db: Queryable, gatewayId: number): Promise<string[]> {
  const rows = await db.query<{ entry: string }>(
    'SELECT entry FROM gateway_access_entries WHERE gateway_id = $1 AND entry IS NOT NULL ORDER BY key_id',
    [gatewayId],
  );
  return rows.map((row) => row.entry);
}

/**
 * A new list secret: every entry of the old one is forgotten, and a copy made under it is replaced whole. Key changes
 * waiting for the gateway now wait for its first list under the new secret (dropped, they never ended: such a key
 * stayed `sent` for good).
 */
export async function replaceListSecret(tx: Queryable, gatewayId: number, secretBox: string): Promise<void> {
  await tx.query('DELETE FROM gateway_access_entries WHERE gateway_id = $1', [gatewayId]);
  await tx.query(
    'UPDATE gateway_access_pending SET version = (SELECT access_list_version + 1 FROM gateways WHERE id = $1) WHERE gateway_id = $1',
    [gatewayId],
  );
  await tx.query(
    `UPDATE gateways SET access_secret_box = $2, access_list_version = access_list_version + 1,
            access_pruned_version = access_list_version + 1 WHERE id = $1`,
    [gatewayId, secretBox],
  );
}

/** What the gateway last said of its copy (its presence). */
export async function recordListExpired(db: Queryable, gatewayId: number, expired: boolean): Promise<void> {
  await db.query('UPDATE gateways SET access_list_expired = $2 WHERE id = $1 AND access_list_expired <> $2', [gatewayId, expired]);
}

/** Gateways whose list moved past what they applied: the job pushes the difference again. */
export async function laggingGateways(db: Queryable): Promise<number[]> {
  const rows = await db.query<{ id: number }>(
    `SELECT id FROM gateways WHERE online AND access_applied_version > 0 AND access_applied_version < access_list_version
        AND access_secret_box IS NOT NULL`,
  );
  return rows.map((row) => Number(row.id));
}

/**
 * What a sync of version $2 is answered with, from the gateway's row: `full` (no version, one the removals kept
 * no longer reach, or one ahead of the service: the whole list, as gateway-sync.ts sends it), else the version
 * (the changes since it). The claim is keyed on it, so asking with another version never buys another whole list.
 */
const SYNC_ANSWER = `CASE WHEN $2::bigint = 0 OR $2::bigint < access_pruned_version OR $2::bigint > access_list_version
                         THEN 'full' ELSE $2::text END`;

/**
 * Claims the answer to a gateway's `access/sync` for `version`: true for the first instance to ask, false for
 * the others that received the same message, until `staleBefore` (the gateway may ask again later). Every
 * version that would get the whole list is one claim: at most one whole list per gateway until `staleBefore`.
 */
export async function claimSync(db: Queryable, gatewayId: number, version: number, now: Date, staleBefore: Date): Promise<boolean> {
  const rows = await db.query(
    `UPDATE gateways SET access_sync_claim = ${SYNC_ANSWER}, access_sync_claimed_at = $3
      WHERE id = $1 AND (access_sync_claim IS DISTINCT FROM ${SYNC_ANSWER} OR access_sync_claimed_at < $4) RETURNING id`,
    [gatewayId, String(version), now, staleBefore],
  );
  return rows.length > 0;
}

// ---- whole-account rebuilds (rebuilds.ts) ------------------------------------------------------------------

/**
 * Asks for a whole-account rebuild. One already running is not started over: it goes on, and round again up to
 * where it stands now (rebuild-progress.ts).
 */
export async function requestRebuild(tx: Queryable, accountId: number, now: Date): Promise<void> {
  await tx.query(
    `INSERT INTO access_rebuilds (account_id, requested_at) VALUES ($1, $2)
     ON CONFLICT (account_id) DO UPDATE SET requested_at = EXCLUDED.requested_at, generation = access_rebuilds.generation + 1,
                                            round_until_key_id = access_rebuilds.last_built_key_id, wrapped = false`,
    [accountId, now],
  );
}

export async function waitingRebuilds(db: Queryable): Promise<number[]> {
  const rows = await db.query<{ account_id: number }>('SELECT account_id FROM access_rebuilds ORDER BY requested_at LIMIT 100');
  return rows.map((row) => Number(row.account_id));
}

/** The advisory-lock space of rebuild parts: one part of an account at a time, across instances. */
const REBUILD_LOCK = 727275;

interface RebuildRow {
  generation: string;
  last_built_key_id: string;
  round_until_key_id: string;
  wrapped: boolean;
}

const REBUILD_COLUMNS = 'generation, last_built_key_id, round_until_key_id, wrapped';

function toProgress(row: RebuildRow): RebuildProgress {
  return { generation: String(row.generation), afterKeyId: Number(row.last_built_key_id), untilKeyId: Number(row.round_until_key_id), wrapped: row.wrapped };
}

/**
 * The account's rebuild, if one is asked for and no other transaction (instance) is building a part of it right
 * now. The request's row is not locked while the part is built (a change asking again must not wait for it, nor
 * deadlock with it on the gateways' rows): recordRebuildPart reads it again at the end.
 */
export async function claimRebuild(tx: Queryable, accountId: number): Promise<RebuildProgress | null> {
  const [lock] = await tx.query<{ mine: boolean }>('SELECT pg_try_advisory_xact_lock($1, $2::int) AS mine', [REBUILD_LOCK, accountId]);
  if (!lock?.mine) return null;
  const [row] = await tx.query<RebuildRow>(`SELECT ${REBUILD_COLUMNS} FROM access_rebuilds WHERE account_id = $1`, [accountId]);
  return row ? toProgress(row) : null;
}

/** The ids of the account's next `size` keys after `afterKeyId` (up to `untilKeyId` when given), whatever their state. */
export async function nextKeyIds(tx: Queryable, accountId: number, afterKeyId: number, untilKeyId: number | null, size: number): Promise<number[]> {
  const keys = await tx.query<{ id: string }>(
    'SELECT id FROM keys WHERE account_id = $1 AND id > $2 AND ($3::bigint IS NULL OR id <= $3) ORDER BY id LIMIT $4',
    [accountId, afterKeyId, untilKeyId, size],
  );
  return keys.map((key) => Number(key.id));
}

/** Records what a part built: the rebuild moves on, or ends (rebuild-progress.ts decides from the row as it is now). */
export async function recordRebuildPart(tx: Queryable, accountId: number, claimed: RebuildProgress, builtKeyIds: readonly number[], size: number): Promise<'built' | 'done'> {
  const [row] = await tx.query<RebuildRow>(`SELECT ${REBUILD_COLUMNS} FROM access_rebuilds WHERE account_id = $1 FOR UPDATE`, [accountId]);
  if (!row) return 'done'; // the account is gone
  const next = progressAfterPart(claimed, toProgress(row), builtKeyIds, size);
  if (next === 'done') {
    await tx.query('DELETE FROM access_rebuilds WHERE account_id = $1', [accountId]);
    return 'done';
  }
  await tx.query('UPDATE access_rebuilds SET last_built_key_id = $2, round_until_key_id = $3, wrapped = $4 WHERE account_id = $1', [accountId, next.afterKeyId, next.untilKeyId, next.wrapped]);
  return 'built';
}
