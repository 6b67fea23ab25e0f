// The SQL of operator provisioning: accounts, locations, dashboard users, API keys, security groups,
// locks and gateways. The operator sees every account, so these queries take no caller scope.
import type { Queryable } from '../../platform/db/index.ts';
import type {
  Account,
  AccountCreate,
  AccountUpdate,
  ApiKey,
  GatewaySummary,
  Location,
  OperatorSecurityGroup,
  Overview,
  SecurityGroupCreate,
  SecurityGroupUpdate,
  User,
} from './schemas.ts';

/** A location with its path of ids from the account's root down to itself. */
export type LocationRow = Location & { path: number[] };

/** An API key as stored: the answer's fields, with its times as dates. */
export type ApiKeyRow = Omit<ApiKey, 'expires_at' | 'created_at' | 'revoked_at'> & { expires_at: Date; created_at: Date; revoked_at: Date | null };

/** A gateway as stored: the listed fields, with its broker user name and its times as dates. */
export type GatewayRow = Pick<GatewaySummary, 'id' | 'name' | 'location_id' | 'online'> & {
  account_id: number | string;
  mqtt_username: string;
  last_seen_at: Date | null;
  last_refused_at: Date | null;
  created_at: Date;
  list_enabled: boolean;
  access_list_version: string;
  access_applied_version: string;
  access_list_expired: boolean;
  list_rebuilding: boolean;
};

const ACCOUNT_FIELDS = ['name', 'reseller', 'sms_enabled', 'phone_key_allowance', 'locking_system', 'offline_access_seconds'] as const;

const API_KEY_COLUMNS = 'id, name, prefix, location_id, scopes, lock_allowlist, expires_at, created_at, revoked_at, created_by_user_id';

const GATEWAY_SELECT = `SELECT id, name, location_id, (SELECT account_id FROM locations WHERE id = gateways.location_id) AS account_id,
         mqtt_username, online, last_seen_at, last_refused_at, created_at,
         access_secret_box IS NOT NULL AS list_enabled, access_list_version, access_applied_version, access_list_expired,
         EXISTS (SELECT 1 FROM access_rebuilds r JOIN locations l ON l.account_id = r.account_id WHERE l.id = gateways.location_id) AS list_rebuilding
    FROM (SELECT * FROM gateways WHERE kind = 'mqtt') AS gateways`; // controllers are seen at /admin/v1/controllers

// ---- accounts -----------------------------------------------------------------------------------

/** A new account with the contract's defaults for the fields not sent; its id. */
export async function insertAccount(tx: Queryable, body: AccountCreate, now: Date): Promise<number> {
  const [row] = await tx.query<{ id: number }>(
    `INSERT INTO accounts (name, reseller, sms_enabled, phone_key_allowance, locking_system, offline_access_seconds, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
    [body.name, body.reseller ?? false, body.sms_enabled ?? true, body.phone_key_allowance ?? null, body.locking_system ?? null, body.offline_access_seconds ?? 604_800, now],
  );
  return (row as { id: number }).id;
}

/** Changes only the fields sent (at least one); false when there is no such account. */
export async function updateAccount(tx: Queryable, id: number, changes: AccountUpdate): Promise<boolean> {
  const sets: string[] = [];
  const params: unknown[] = [];
  for (const field of ACCOUNT_FIELDS) {
    if (changes[field] === undefined) continue;
    params.push(changes[field]);
    sets.push(`${field} = $${params.length}`);
  }
  params.push(id);
  const rows = await tx.query(`UPDATE accounts SET ${sets.join(', ')} WHERE id = $${params.length} RETURNING id`, params);
  return rows.length > 0;
}

/** An account with its root location, or null. */
export async function findAccount(db: Queryable, id: number): Promise<Account | null> {
  const rows = await db.query<Omit<Account, 'root_location'> & { root_id: number; root_name: string }>(
    `SELECT a.id, a.name, a.reseller, a.sms_enabled, a.phone_key_allowance, a.locking_system, a.offline_access_seconds,
            l.id AS root_id, l.name AS root_name
       FROM accounts a JOIN locations l ON l.account_id = a.id AND l.parent_id IS NULL
      WHERE a.id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) return null;
  const { root_id, root_name, ...account } = row;
  return { ...account, root_location: { id: root_id, name: root_name } };
}

/** Accounts after `afterId` in id order; `q`: the name contains it, case-insensitive. */
export async function listAccounts(db: Queryable, q: string | null, afterId: number | null, limit: number): Promise<Account[]> {
  const rows = await db.query<Omit<Account, 'root_location'> & { root_id: number; root_name: string }>(
    `SELECT a.id, a.name, a.reseller, a.sms_enabled, a.phone_key_allowance, a.locking_system, a.offline_access_seconds,
            l.id AS root_id, l.name AS root_name
       FROM accounts a JOIN locations l ON l.account_id = a.id AND l.parent_id IS NULL
      WHERE a.id > $1 AND ($2::text IS NULL OR strpos(lower(a.name), lower($2)) > 0)
      ORDER BY a.id LIMIT $3`,
    [afterId ?? 0, q, limit],
  );
  return rows.map(({ root_id, root_name, ...account }) => ({ ...account, root_location: { id: root_id, name: root_name } }));
}

export async function accountExists(db: Queryable, id: number): Promise<boolean> {
  const rows = await db.query('SELECT id FROM accounts WHERE id = $1', [id]);
  return rows.length > 0;
}

// ---- locations and dashboard users --------------------------------------------------------------

/** A location under `parentId` (null: the account's root); its path is its parent's plus its own id. */
export async function insertLocation(
  tx: Queryable,
  location: { accountId: number; parentId: number | null; name: string; parentPath: number[]; timeZone?: string | null },
  now: Date,
): Promise<number> {
  const [row] = await tx.query<{ id: number }>(
    `INSERT INTO locations (account_id, parent_id, name, path, time_zone, created_at)
     VALUES ($1, $2, $3, '{}', $4, $5) RETURNING id`,
    [location.accountId, location.parentId, location.name, location.timeZone ?? null, now],
  );
  const id = (row as { id: number }).id;
  await tx.query('UPDATE locations SET path = $1::bigint[] WHERE id = $2', [[...location.parentPath, id], id]);
  return id;
}

/** Its own time zone, and the one its doors read: the nearest set on its path, UTC when none is. */
const LOCATION_SELECT = `SELECT l.id, l.account_id, l.parent_id, l.name, l.path, l.time_zone,
         COALESCE((SELECT a.time_zone FROM locations a, unnest(l.path) WITH ORDINALITY AS p (id, n)
                    WHERE a.id = p.id AND a.time_zone IS NOT NULL ORDER BY p.n DESC LIMIT 1), 'UTC') AS effective_time_zone
    FROM locations l`;

export async function findLocation(db: Queryable, id: number): Promise<LocationRow | null> {
  const rows = await db.query<LocationRow>(`${LOCATION_SELECT} WHERE l.id = $1`, [id]);
  const row = rows[0];
  return row ? { ...row, path: row.path.map(Number) } : null;
}

/** The account's locations after `afterId` in id order (a parent always before its children). */
export async function listLocations(db: Queryable, accountId: number, afterId: number | null, limit: number): Promise<Location[]> {
  const rows = await db.query<LocationRow>(`${LOCATION_SELECT} WHERE l.account_id = $1 AND l.id > $2 ORDER BY l.id LIMIT $3`, [accountId, afterId ?? 0, limit]);
  return rows.map(({ path: _path, ...location }) => location);
}

/** Changes the fields sent of a location. */
export async function updateLocation(tx: Queryable, id: number, changes: { name?: string | undefined; time_zone?: string | null | undefined }): Promise<void> {
  await tx.query(
    `UPDATE locations SET name = CASE WHEN $2 THEN $3 ELSE name END, time_zone = CASE WHEN $4 THEN $5 ELSE time_zone END WHERE id = $1`,
    [id, changes.name !== undefined, changes.name ?? null, changes.time_zone !== undefined, changes.time_zone ?? null],
  );
}

export async function listUsers(db: Queryable, accountId: number, afterId: number | null, limit: number): Promise<User[]> {
  return db.query<User>(
    `SELECT id, account_id, name, email FROM dashboard_users WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`,
    [accountId, afterId ?? 0, limit],
  );
}

export async function insertUser(db: Queryable, user: Omit<User, 'id'>, now: Date): Promise<User> {
  const [row] = await db.query<User>(
    `INSERT INTO dashboard_users (account_id, name, email, created_at) VALUES ($1, $2, $3, $4)
     RETURNING id, account_id, name, email`,
    [user.account_id, user.name, user.email, now],
  );
  return row as User;
}

export async function userInAccount(db: Queryable, userId: number, accountId: number): Promise<boolean> {
  const rows = await db.query('SELECT id FROM dashboard_users WHERE id = $1 AND account_id = $2', [userId, accountId]);
  return rows.length > 0;
}

// ---- API keys -----------------------------------------------------------------------------------

/** The ids among `lockIds` of locks at `locationId` or a location under it. */
export async function locksUnder(db: Queryable, lockIds: number[], locationId: number): Promise<Set<number>> {
  const rows = await db.query<{ id: number }>(
    `SELECT k.id FROM locks k JOIN locations l ON l.id = k.location_id
      WHERE k.id = ANY($1::bigint[]) AND l.path @> ARRAY[$2]::bigint[]`,
    [lockIds, locationId],
  );
  return new Set(rows.map((r) => r.id));
}

export async function insertApiKey(
  db: Queryable,
  key: Pick<ApiKeyRow, 'location_id' | 'name' | 'prefix' | 'scopes' | 'lock_allowlist' | 'expires_at' | 'created_by_user_id'> & { tokenHash: string },
  now: Date,
): Promise<ApiKeyRow> {
  const [row] = await db.query<ApiKeyRow>(
    `INSERT INTO api_keys (location_id, name, token_hash, prefix, scopes, lock_allowlist, expires_at, created_by_user_id, created_at)
     VALUES ($1, $2, $3, $4, $5::text[], $6::bigint[], $7, $8, $9)
     RETURNING ${API_KEY_COLUMNS}`,
    [key.location_id, key.name, key.tokenHash, key.prefix, key.scopes, key.lock_allowlist, key.expires_at, key.created_by_user_id, now],
  );
  return row as ApiKeyRow;
}

/** Which rows a list of keys or gateways takes: one location's, one account's, or (neither) every one. */
export interface OwnerFilter {
  locationId?: number | undefined;
  accountId?: number | undefined;
}

const OWNED_BY = `($1::bigint IS NULL OR location_id = $1)
        AND ($2::bigint IS NULL OR location_id IN (SELECT id FROM locations WHERE account_id = $2))`;

/** Keys after `afterId` in id order, of the filter's location or account. */
export async function listApiKeys(db: Queryable, owner: OwnerFilter, afterId: number | null, limit: number): Promise<ApiKeyRow[]> {
  return db.query<ApiKeyRow>(
    `SELECT ${API_KEY_COLUMNS}
       FROM api_keys
      WHERE ${OWNED_BY} AND id > $3
      ORDER BY id LIMIT $4`,
    [owner.locationId ?? null, owner.accountId ?? null, afterId ?? 0, limit],
  );
}

/** Sets revoked_at unless already set; false when there is no such key. */
export async function revokeApiKey(tx: Queryable, id: number, now: Date): Promise<boolean> {
  const rows = await tx.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING id', [id, now]);
  return rows.length > 0;
}

// ---- security groups and locks ------------------------------------------------------------------

const GROUP_COLUMNS = 'id, code, title, description, is_default, location_id, windows';

/** The new group, or null when its code is taken at that location. */
export async function insertSecurityGroup(db: Queryable, group: SecurityGroupCreate, now: Date): Promise<OperatorSecurityGroup | null> {
  const rows = await db.query<OperatorSecurityGroup>(
    `INSERT INTO security_groups (location_id, code, title, description, is_default, windows, created_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
     ON CONFLICT (location_id, code) DO NOTHING
     RETURNING ${GROUP_COLUMNS}`,
    [group.location_id, group.code, group.title, group.description ?? '', group.is_default ?? false, group.windows ? JSON.stringify(group.windows) : null, now],
  );
  return rows[0] ?? null;
}

/** The new lock's id. */
export async function insertLock(
  tx: Queryable,
  lock: { locationId: number; name: string; place: string; serialNumber: string | null; provider: string; gatewayId: number | null; groupCodes: string[] },
  now: Date,
): Promise<number> {
  const [row] = await tx.query<{ id: number }>(
    `INSERT INTO locks (location_id, name, place, serial_number, provider, gateway_id, security_group_codes, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::text[], $8) RETURNING id`,
    [lock.locationId, lock.name, lock.place, lock.serialNumber, lock.provider, lock.gatewayId, lock.groupCodes, now],
  );
  return (row as { id: number }).id;
}

/** The lock's location (for the checks of a change), or null. */
export async function lockLocation(db: Queryable, lockId: number): Promise<number | null> {
  const [row] = await db.query<{ location_id: number }>('SELECT location_id FROM locks WHERE id = $1', [lockId]);
  return row ? Number(row.location_id) : null;
}

/** Changes only the fields given. */
export async function updateLock(
  tx: Queryable,
  id: number,
  changes: { name?: string | undefined; place?: string | undefined; gatewayId?: number | null | undefined; groupCodes?: string[] | undefined },
): Promise<void> {
  await tx.query(
    `UPDATE locks SET name = COALESCE($2, name), place = COALESCE($3, place),
            gateway_id = CASE WHEN $4 THEN $5::bigint ELSE gateway_id END,
            security_group_codes = COALESCE($6::text[], security_group_codes)
      WHERE id = $1`,
    [id, changes.name ?? null, changes.place ?? null, changes.gatewayId !== undefined, changes.gatewayId ?? null, changes.groupCodes ?? null],
  );
}

// ---- gateways (presence is written by the devices module) ----------------------------------------

/** An id drawn from the table's sequence, for a gateway whose broker account is made before its row. */
export async function reserveGatewayId(db: Queryable): Promise<number> {
  const [reserved] = await db.query<{ id: number | string }>("SELECT nextval(pg_get_serial_sequence('gateways', 'id')) AS id");
  return Number((reserved as { id: number | string }).id);
}

export async function insertGateway(
  db: Queryable,
  gateway: { id: number; locationId: number; name: string; username: string; passwordHash: string },
  now: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO gateways (id, location_id, name, mqtt_username, password_hash, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [gateway.id, gateway.locationId, gateway.name, gateway.username, gateway.passwordHash, now],
  );
}

/** Gateways after `afterId` in id order, of the filter's location or account. */
/** Gateways after `afterId` in id order, of the filter's location or account, and in the state `online` (null: any). */
export async function listGateways(db: Queryable, owner: OwnerFilter, online: boolean | null, afterId: number | null, limit: number): Promise<GatewayRow[]> {
  return db.query<GatewayRow>(
    `${GATEWAY_SELECT}
      WHERE ${OWNED_BY} AND id > $3 AND ($5::boolean IS NULL OR online = $5)
      ORDER BY id LIMIT $4`,
    [owner.locationId ?? null, owner.accountId ?? null, afterId ?? 0, limit, online],
  );
}

export async function findGateway(db: Queryable, id: number): Promise<GatewayRow | null> {
  const [row] = await db.query<GatewayRow>(`${GATEWAY_SELECT} WHERE id = $1`, [id]);
  return row ?? null;
}

/** The gateway, its row locked until the end of the transaction (one rotation or deletion at a time). */
export async function lockGateway(tx: Queryable, id: number): Promise<GatewayRow | null> {
  const [row] = await tx.query<GatewayRow>(`${GATEWAY_SELECT} WHERE id = $1 FOR UPDATE`, [id]);
  return row ?? null;
}

export async function setGatewayPasswordHash(tx: Queryable, id: number, passwordHash: string): Promise<void> {
  await tx.query('UPDATE gateways SET password_hash = $2 WHERE id = $1', [id, passwordHash]);
}

/** Whether locks are on the gateway, and whether the access log or lock commands refer to it. */
export async function gatewayUse(tx: Queryable, id: number): Promise<{ locks: boolean; history: boolean }> {
  const [use] = await tx.query<{ locks: boolean; history: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM locks WHERE gateway_id = $1) AS locks,
            EXISTS (SELECT 1 FROM access_events WHERE gateway_id = $1) OR EXISTS (SELECT 1 FROM lock_commands WHERE gateway_id = $1) AS history`,
    [id],
  );
  return { locks: use?.locks ?? false, history: use?.history ?? false };
}

export async function deleteGateway(tx: Queryable, id: number): Promise<void> {
  await tx.query('DELETE FROM gateways WHERE id = $1', [id]);
}

/** The root location of an account, or null when there is no such account. */
export async function accountRoot(db: Queryable, accountId: number): Promise<number | null> {
  const [row] = await db.query<{ id: number }>('SELECT id FROM locations WHERE account_id = $1 AND parent_id IS NULL', [accountId]);
  return row ? Number(row.id) : null;
}

/** How many UHPPOTE controllers an account has. */
export async function controllersOfAccount(db: Queryable, accountId: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM gateways g JOIN locations l ON l.id = g.location_id WHERE l.account_id = $1 AND g.kind = 'uhppote'",
    [accountId],
  );
  return Number(row?.n ?? 0);
}

export async function lockingSystemOfAccount(db: Queryable, accountId: number): Promise<string | null> {
  const [row] = await db.query<{ locking_system: string | null }>('SELECT locking_system FROM accounts WHERE id = $1', [accountId]);
  return row?.locking_system ?? null;
}

/** Whether a lock joining or leaving `gatewayId` (or leaving the gateway `lockId` is on) would touch a UHPPOTE controller. */
export async function touchesController(db: Queryable, lockId: number | null, gatewayId: number | null): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM gateways g WHERE g.kind = 'uhppote'
        AND (g.id = $2 OR g.id = (SELECT gateway_id FROM locks WHERE id = $1))`,
    [lockId, gatewayId],
  );
  return rows.length > 0;
}

export async function gatewayInAccount(db: Queryable, gatewayId: number, accountId: number): Promise<boolean> {
  const rows = await db.query(
    'SELECT g.id FROM gateways g JOIN locations l ON l.id = g.location_id WHERE g.id = $1 AND l.account_id = $2',
    [gatewayId, accountId],
  );
  return rows.length > 0;
}

// ---- overview -----------------------------------------------------------------------------------

/** What an operator checks first, in one round trip; each count rides an index or a small table. */
export async function overviewCounts(db: Queryable): Promise<Overview> {
  const [row] = await db.query<Record<string, string | number>>(
    `SELECT (SELECT count(*) FROM accounts) AS accounts,
            (SELECT count(*) FROM gateways WHERE online) AS gateways_online,
            (SELECT count(*) FROM gateways WHERE NOT online) AS gateways_offline,
            (SELECT count(*) FROM locks k JOIN gateways g ON g.id = k.gateway_id WHERE NOT g.online) AS locks_offline,
            (SELECT count(*) FROM webhook_subscriptions WHERE status = 'active' AND failing_since IS NOT NULL) AS webhooks_failing,
            (SELECT count(*) FROM webhook_subscriptions WHERE status = 'paused') AS webhooks_paused,
            (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS deliveries_pending`,
  );
  const n = (name: string): number => Number(row?.[name] ?? 0);
  return {
    accounts: n('accounts'),
    gateways: { online: n('gateways_online'), offline: n('gateways_offline') },
    locks_offline: n('locks_offline'),
    webhooks: { failing: n('webhooks_failing'), paused: n('webhooks_paused') },
    deliveries_pending: n('deliveries_pending'),
  };
}

/** A security group with its location's account, or null. */
export async function findSecurityGroup(db: Queryable, id: number): Promise<(OperatorSecurityGroup & { account_id: number }) | null> {
  const [row] = await db.query<OperatorSecurityGroup & { account_id: number }>(
    `SELECT sg.id, sg.code, sg.title, sg.description, sg.is_default, sg.location_id, sg.windows, l.account_id
       FROM security_groups sg JOIN locations l ON l.id = sg.location_id WHERE sg.id = $1`,
    [id],
  );
  return row ?? null;
}

/** Changes the fields sent of a group. */
export async function updateSecurityGroup(tx: Queryable, id: number, changes: SecurityGroupUpdate): Promise<void> {
  await tx.query(
    `UPDATE security_groups SET title = COALESCE($2, title), description = COALESCE($3, description), is_default = COALESCE($4, is_default),
            windows = CASE WHEN $5 THEN $6::jsonb ELSE windows END
      WHERE id = $1`,
    [id, changes.title ?? null, changes.description ?? null, changes.is_default ?? null, changes.windows !== undefined, changes.windows ? JSON.stringify(changes.windows) : null],
  );
}

/** The account's security groups after `afterId` in id order. */
export async function listAccountSecurityGroups(db: Queryable, accountId: number, afterId: number | null, limit: number): Promise<OperatorSecurityGroup[]> {
  return db.query<OperatorSecurityGroup>(
    `SELECT sg.id, sg.code, sg.title, sg.description, sg.is_default, sg.location_id, sg.windows
       FROM security_groups sg JOIN locations l ON l.id = sg.location_id
      WHERE l.account_id = $1 AND sg.id > $2 ORDER BY sg.id LIMIT $3`,
    [accountId, afterId ?? 0, limit],
  );
}

/** A gateway's access-list secret (sealed), set with its password. */
export async function setGatewayAccessSecret(db: Queryable, id: number, sealed: string): Promise<void> {
  await db.query('UPDATE gateways SET access_secret_box = $2 WHERE id = $1', [id, sealed]);
}

/** The account a gateway is in. */
export async function gatewayAccountId(db: Queryable, id: number): Promise<number | null> {
  const [row] = await db.query<{ account_id: number }>('SELECT l.account_id FROM gateways g JOIN locations l ON l.id = g.location_id WHERE g.id = $1', [id]);
  return row ? Number(row.account_id) : null;
}
