// The SQL of the devices module: lock commands (remote unlock), gateway presence and gateway credentials
// (mosquitto-dynsec.ts keeps its one query). Queries that take the caller's location filter by it.
import type { Queryable } from '../../platform/db/index.ts';
import type { AccessEvent, AccessLogLock, WriteGuard } from '../events/index.ts';
import type { LockCommand } from './schemas.ts';

// ---- Lock commands ----

export interface CommandRow {
  id: string;
  account_id: number;
  lock_id: number;
  gateway_id: number;
  api_key_id: number;
  status: LockCommand['status'];
  requested_at: Date;
  published_at: Date | null;
  confirmed_at: Date | null;
  timeout_seconds: number;
  expires_at: Date;
  error: LockCommand['error'];
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function toCommand(row: CommandRow): LockCommand {
  return {
    id: row.id,
    lock_id: row.lock_id,
    status: row.status,
    requested_at: row.requested_at.toISOString(),
    published_at: iso(row.published_at),
    confirmed_at: iso(row.confirmed_at),
    timeout_seconds: row.timeout_seconds,
    error: row.error,
  };
}

const CREATE_COMMAND = {
  name: 'lockCommands.create',
  text: `WITH target AS (
    SELECT k.id, k.gateway_id, l.account_id, g.online, g.kind
      FROM locks k JOIN locations l ON l.id = k.location_id LEFT JOIN gateways g ON g.id = k.gateway_id
     WHERE k.id = $3 AND l.path @> ARRAY[$7]::bigint[]
  ), created AS (
    INSERT INTO lock_commands (id, account_id, lock_id, gateway_id, api_key_id, status, requested_at, published_at, timeout_seconds, expires_at)
    SELECT $1, target.account_id, target.id, target.gateway_id, $2, 'published', $4, $4, $5, $6 FROM target
     WHERE target.gateway_id IS NOT NULL AND target.online
    ON CONFLICT (lock_id) WHERE status = 'published' DO NOTHING RETURNING *
  )
  SELECT target.gateway_id AS lock_gateway_id, target.online AS gateway_online, target.kind AS gateway_kind, created.* FROM target LEFT JOIN created ON true`,
};

/** What CREATE_COMMAND found: the lock's gateway and whether it is online, and the command if one was created. */
export type CommandAttempt = Partial<CommandRow> & { lock_gateway_id: number | null; gateway_online: boolean | null; gateway_kind: 'mqtt' | 'uhppote' | null };

/**
 * One statement finds the lock in the caller's scope and, when its gateway is online, creates the command
 * unless one is in flight. Undefined when the lock is not in scope (or not there).
 */
export async function tryCreateCommand(
  db: Queryable,
  c: { id: string; apiKeyId: number; lockId: number; now: Date; timeoutSeconds: number; expiresAt: Date; locationId: number },
): Promise<CommandAttempt | undefined> {
  const [attempt] = await db.query<CommandAttempt>(CREATE_COMMAND, [c.id, c.apiKeyId, c.lockId, c.now, c.timeoutSeconds, c.expiresAt, c.locationId]);
  return attempt;
}

const IN_FLIGHT_COMMAND = { name: 'lockCommands.inFlight', text: `SELECT * FROM lock_commands WHERE lock_id = $1 AND status = 'published'` };

export async function findInFlightCommand(db: Queryable, lockId: number): Promise<CommandRow | undefined> {
  const [row] = await db.query<CommandRow>(IN_FLIGHT_COMMAND, [lockId]);
  return row;
}

const GET_COMMAND = {
  name: 'lockCommands.get',
  text: `SELECT c.* FROM lock_commands c JOIN locks k ON k.id = c.lock_id JOIN locations l ON l.id = k.location_id
  WHERE c.id = $1 AND c.lock_id = $2 AND l.path @> ARRAY[$3]::bigint[]`,
};

/** The command of that lock, when the lock is in the scope of `locationId`. */
export async function findCommand(db: Queryable, commandId: string, lockId: number, locationId: number): Promise<CommandRow | undefined> {
  const [row] = await db.query<CommandRow>(GET_COMMAND, [commandId, lockId, locationId]);
  return row;
}

/** Published commands past their expiry, at most `limit`. */
export async function expiredCommands(db: Queryable, now: Date, limit: number): Promise<CommandRow[]> {
  return db.query<CommandRow>(`SELECT * FROM lock_commands WHERE status = 'published' AND expires_at <= $1 LIMIT $2`, [now, limit]);
}

/** What the outcome of a published command names: its lock and the API key that asked. */
const COMMAND_OUTCOME_CONTEXT = {
  name: 'lockCommands.outcomeContext',
  text: `SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id,
         CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('id', a.id, 'name', a.name, 'prefix', a.prefix) END AS api_key,
         c.requested_at,
         CASE WHEN hk.id IS NULL THEN NULL ELSE json_build_object('id', hk.id, 'name', hk.name) END AS holder_key,
         CASE WHEN hp.id IS NULL THEN NULL ELSE json_build_object('id', hp.id, 'name', hp.name, 'email', hp.email) END AS holder_person
    FROM lock_commands c JOIN locks k ON k.id = c.lock_id JOIN locations l ON l.id = k.location_id
    LEFT JOIN api_keys a ON a.id = c.api_key_id
    LEFT JOIN keys hk ON hk.id = c.key_id LEFT JOIN people hp ON hp.id = hk.person_id
   WHERE c.id = $1 AND c.gateway_id = $2 AND c.status = 'published'`,
};

/** A published command of the gateway with its lock and API key; undefined when unknown or finished. */
export async function commandOutcomeContext(
  db: Queryable,
  commandId: string,
  gatewayId: number,
): Promise<OutcomeContext | undefined> {
  const [context] = await db.query<OutcomeContext>(COMMAND_OUTCOME_CONTEXT, [commandId, gatewayId]);
  return context;
}

type OutcomeContext = AccessLogLock & {
  api_key: AccessEvent['api_key'];
  requested_at: Date;
  holder_key: AccessEvent['key'];
  holder_person: AccessEvent['person'];
};

const CREATE_KEY_COMMAND = {
  name: 'lockCommands.createForKey',
  text: `WITH holder AS (
    SELECT kk.account_id, (kk.xmin::text || ':' || pp.xmin::text) = $7 AS unchanged
      FROM keys kk JOIN people pp ON pp.id = kk.person_id WHERE kk.id = $2
       FOR SHARE OF kk, pp
  ), target AS (
    SELECT k.id, k.gateway_id, l.account_id, g.online, g.kind, holder.unchanged
      FROM locks k JOIN locations l ON l.id = k.location_id JOIN holder ON holder.account_id = l.account_id LEFT JOIN gateways g ON g.id = k.gateway_id
     WHERE k.id = $3
  ), created AS (
    INSERT INTO lock_commands (id, account_id, lock_id, gateway_id, key_id, status, requested_at, published_at, timeout_seconds, expires_at)
    SELECT $1, target.account_id, target.id, target.gateway_id, $2, 'published', $4, $4, $5, $6 FROM target
     WHERE target.gateway_id IS NOT NULL AND target.online AND target.unchanged
    ON CONFLICT (lock_id) WHERE status = 'published' DO NOTHING RETURNING *
  )
  SELECT target.gateway_id AS lock_gateway_id, target.online AS gateway_online, target.kind AS gateway_kind, target.unchanged AS key_unchanged, created.*
    FROM target LEFT JOIN created ON true`,
};

/**
 * CREATE_COMMAND for a key holder's unlock: the lock in the key's account, the command naming the key. Created only
 * while the key and its person are as the decision read them (`keyVersion`, their rows' xmin): a revocation, a
 * change of groups or a deletion committed after the decision creates nothing (key_unchanged false), and the caller
 * decides again. Without it a tap decided just before a revocation opened the door after the revocation was answered.
 * FOR SHARE waits for a change under way (a revocation goes on in its transaction after its UPDATE: lists, events),
 * then reads the row it committed; without it the statement's snapshot saw the row before it.
 */
export async function tryCreateKeyCommand(
  db: Queryable,
  c: { id: string; keyId: number; keyVersion: string; lockId: number; now: Date; timeoutSeconds: number; expiresAt: Date },
): Promise<(CommandAttempt & { key_unchanged: boolean }) | undefined> {
  const [attempt] = await db.query<CommandAttempt & { key_unchanged: boolean }>(CREATE_KEY_COMMAND, [c.id, c.keyId, c.lockId, c.now, c.timeoutSeconds, c.expiresAt, c.keyVersion]);
  return attempt;
}

/** A key holder's command by its id (never an API key's). */
export async function findKeyCommand(db: Queryable, commandId: string): Promise<CommandRow | undefined> {
  const [row] = await db.query<CommandRow>({ name: 'lockCommands.getForKey', text: 'SELECT * FROM lock_commands WHERE id = $1 AND key_id IS NOT NULL' }, [commandId]);
  return row;
}

/**
 * Ends a published command of the gateway: the guard of its outcome's access-log write, so that the
 * command ends and the outcome is recorded together, or neither when it has ended meanwhile.
 */
export function endCommandGuard(commandId: string, gatewayId: number, status: LockCommand['status'], error: LockCommand['error'], now: Date): WriteGuard {
  return {
    name: 'endCommand',
    sql: (param) =>
      `UPDATE lock_commands SET status = ${param(3)}, error = ${param(4)}::jsonb, confirmed_at = CASE WHEN ${param(3)} = 'confirmed' THEN ${param(5)}::timestamptz ELSE NULL END
        WHERE id = ${param(1)} AND gateway_id = ${param(2)} AND status = 'published' RETURNING id`,
    params: [commandId, gatewayId, status, error === null ? null : JSON.stringify(error), now],
  };
}

/** A lock as an unlock sees it: the access-log fields, its location's path and its gateway's presence. */
export interface UnlockLock extends AccessLogLock {
  gateway_id: number | null;
  online: boolean | null;
  path: number[];
}

const FIND_LOCK = {
  name: 'lockCommands.lock',
  text: `SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id, l.path, k.gateway_id,
        CASE WHEN k.gateway_id IS NULL THEN NULL ELSE g.online END AS online
   FROM locks k JOIN locations l ON l.id = k.location_id LEFT JOIN gateways g ON g.id = k.gateway_id
  WHERE k.id = $1`,
};

/** The lock, whatever the caller's scope (the caller tells 404 from 403 with it). */
export async function findUnlockLock(db: Queryable, lockId: number): Promise<UnlockLock | undefined> {
  const [lock] = await db.query<UnlockLock>(FIND_LOCK, [lockId]);
  return lock;
}

const SANDBOX_PUBLISH_KEY = 'sandbox_mqtt_publish';

export async function sandboxPublishMode(db: Queryable): Promise<string | null> {
  const [row] = await db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [SANDBOX_PUBLISH_KEY]);
  return row?.value ?? null;
}

export async function setSandboxPublishMode(db: Queryable, mode: 'accept' | 'fail'): Promise<void> {
  await db.query(`INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, [SANDBOX_PUBLISH_KEY, mode]);
}

// ---- Gateway presence ----

/** Gateways the store holds online, by id. */
export async function onlineGatewayIds(db: Queryable): Promise<number[]> {
  // MQTT gateways only: a UHPPOTE controller's presence comes from its polls, not from broker connections.
  return (await db.query<{ id: number }>("SELECT id FROM gateways WHERE online AND kind = 'mqtt' ORDER BY id")).map((r) => Number(r.id));
}

/** How many MQTT gateways the store holds online (latchkey_gateways_connected with MQTT_URL). */
export async function onlineGatewayCount(db: Queryable): Promise<number> {
  const [row] = await db.query<{ n: number }>({ name: 'gateways.onlineCount', text: "SELECT count(*)::int AS n FROM gateways WHERE online AND kind = 'mqtt'" });
  return row?.n ?? 0;
}

/** Online gateways without contact since `cutoff`. */
export async function quietGatewayIds(db: Queryable, cutoff: Date): Promise<number[]> {
  return (await db.query<{ id: number }>('SELECT id FROM gateways WHERE online AND (last_seen_at IS NULL OR last_seen_at < $1)', [cutoff])).map((r) => r.id);
}

/** Records contact; the gateway's stored state, undefined when it is gone. */
export async function touchGateway(db: Queryable, gatewayId: number, now: Date): Promise<{ online: boolean } | undefined> {
  const [row] = await db.query<{ online: boolean }>('UPDATE gateways SET last_seen_at = $2 WHERE id = $1 RETURNING online', [gatewayId, now]);
  return row;
}

/** A login as the gateway was refused at `at` (a later write of an earlier time, from another instance, changes nothing). */
export async function recordRefusedLogin(db: Queryable, gatewayId: number, at: Date): Promise<void> {
  await db.query('UPDATE gateways SET last_refused_at = $2 WHERE id = $1 AND (last_refused_at IS NULL OR last_refused_at < $2)', [gatewayId, at]);
}

/** Sets the gateway's state (contact too when online); false when it was in that state already. */
export async function setGatewayOnline(tx: Queryable, gatewayId: number, online: boolean, now: Date): Promise<boolean> {
  const rows = await tx.query(
    `UPDATE gateways SET online = $2, last_seen_at = CASE WHEN $2 THEN $3 ELSE last_seen_at END
      WHERE id = $1 AND online IS DISTINCT FROM $2 RETURNING id`,
    [gatewayId, online, now],
  );
  return rows.length > 0;
}

/** The gateway's locks with the fields lock.online / lock.offline show (those of an access-log entry's lock). */
export async function locksOfGateway(tx: Queryable, gatewayId: number): Promise<AccessLogLock[]> {
  return tx.query<AccessLogLock>(
    `SELECT k.id, k.name, k.place, k.location_id, l.account_id, l.name AS location_name
       FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.gateway_id = $1 ORDER BY k.id`,
    [gatewayId],
  );
}

// ---- Gateway credentials ----

/** The gateway that logs in with this user name, with its password hash. */
export async function gatewayByUsername(db: Queryable, username: string): Promise<{ id: number; password_hash: string } | undefined> {
  const [row] = await db.query<{ id: number; password_hash: string }>('SELECT id, password_hash FROM gateways WHERE mqtt_username = $1', [username]);
  return row;
}

/** The password hash of the gateway, when it has that user name. */
export async function gatewayPasswordHash(db: Queryable, gatewayId: number, username: string): Promise<string | undefined> {
  const [row] = await db.query<{ password_hash: string }>('SELECT password_hash FROM gateways WHERE id = $1 AND mqtt_username = $2', [gatewayId, username]);
  return row?.password_hash;
}

/** Whether an MQTT gateway with this id exists (a UHPPOTE controller's id is no broker user's). */
export async function gatewayExists(db: Queryable, gatewayId: number): Promise<boolean> {
  return (await db.query("SELECT 1 FROM gateways WHERE id = $1 AND kind = 'mqtt'", [gatewayId])).length > 0;
}

/** Every MQTT gateway's id, in order (the broker accounts to check at start-up). */
export async function allGatewayIds(db: Queryable): Promise<number[]> {
  return (await db.query<{ id: number }>("SELECT id FROM gateways WHERE kind = 'mqtt' ORDER BY id")).map((row) => Number(row.id));
}
