// The SQL of UHPPOTE controllers: the controllers (gateways of kind 'uhppote') and their doors, the time
// profiles and card records written to each, the event index read, and the leases of whoever polls a board.
import type { Queryable } from '../../platform/db/index.ts';

export interface ControllerRow {
  gateway_id: number;
  account_id: number;
  location_id: number;
  name: string;
  serial_number: number;
  host: string;
  port: number;
  transport: 'udp' | 'tcp';
  doors: number;
  online: boolean;
  last_seen_at: Date | null;
  last_event_index: number | null;
  clock_set_at: Date | null;
  listener_set_at: Date | null;
  reconciled_at: Date | null;
  last_reconciliation: unknown;
  last_error: string | null;
  /** A card write the board did not answer (the writes waiting are tried again when it next answers a poll). */
  missed_write_at: Date | null;
  created_at: Date;
  /** The locks on its doors. */
  door_locks: Array<{ door: number; lock_id: number }>;
  /** The wall clock it keeps: its location's time zone (or the nearest above; UTC). */
  time_zone: string;
}

const CONTROLLER_SELECT = `SELECT c.gateway_id, l.account_id, g.location_id, g.name, c.serial_number, c.host, c.port, c.transport, c.doors,
       g.online, g.last_seen_at, c.last_event_index, c.clock_set_at, c.listener_set_at, c.reconciled_at, c.last_reconciliation,
       c.last_error, c.missed_write_at, g.created_at,
       (SELECT coalesce(json_agg(json_build_object('door', d.door, 'lock_id', d.lock_id) ORDER BY d.door), '[]')
          FROM uhppote_doors d WHERE d.gateway_id = c.gateway_id) AS door_locks,
       coalesce((SELECT z.time_zone FROM locations z WHERE z.id = ANY(l.path) AND z.time_zone IS NOT NULL
                  ORDER BY array_position(l.path, z.id) DESC LIMIT 1), 'UTC') AS time_zone
  FROM uhppote_controllers c JOIN gateways g ON g.id = c.gateway_id JOIN locations l ON l.id = g.location_id`;

const toRow = (row: ControllerRow): ControllerRow => ({
  ...row,
  gateway_id: Number(row.gateway_id),
  account_id: Number(row.account_id),
  location_id: Number(row.location_id),
  serial_number: Number(row.serial_number),
  last_event_index: row.last_event_index === null ? null : Number(row.last_event_index),
  door_locks: row.door_locks.map((d) => ({ door: Number(d.door), lock_id: Number(d.lock_id) })),
});

export async function findController(db: Queryable, gatewayId: number): Promise<ControllerRow | null> {
  const [row] = await db.query<ControllerRow>(`${CONTROLLER_SELECT} WHERE c.gateway_id = $1`, [gatewayId]);
  return row ? toRow(row) : null;
}

export async function findControllerBySerial(db: Queryable, serial: number): Promise<ControllerRow | null> {
  const [row] = await db.query<ControllerRow>(`${CONTROLLER_SELECT} WHERE c.serial_number = $1`, [serial]);
  return row ? toRow(row) : null;
}

export async function controllersOfAccount(db: Queryable, accountId: number): Promise<ControllerRow[]> {
  const rows = await db.query<ControllerRow>(`${CONTROLLER_SELECT} WHERE l.account_id = $1 ORDER BY c.gateway_id`, [accountId]);
  return rows.map(toRow);
}

export async function listControllers(db: Queryable, filter: { accountId?: number | undefined; locationId?: number | undefined }, afterId: number, limit: number): Promise<ControllerRow[]> {
  const rows = await db.query<ControllerRow>(
    `${CONTROLLER_SELECT}
      WHERE c.gateway_id > $1 AND ($2::bigint IS NULL OR l.account_id = $2) AND ($3::bigint IS NULL OR l.path @> ARRAY[$3]::bigint[])
      ORDER BY c.gateway_id LIMIT $4`,
    [afterId, filter.accountId ?? null, filter.locationId ?? null, limit],
  );
  return rows.map(toRow);
}

/** Every board's serial number and the address it was set up with (the listener's known boards). */
export async function boardAddresses(db: Queryable): Promise<Array<{ serial: number; host: string }>> {
  const rows = await db.query<{ serial_number: number | string; host: string }>('SELECT serial_number, host FROM uhppote_controllers');
  return rows.map((r) => ({ serial: Number(r.serial_number), host: r.host }));
}

/** Claims the controllers nobody polls now until `until` (the caller polls them), at most `limit`. */
export async function claimControllersToPoll(db: Queryable, now: Date, until: Date, limit: number): Promise<ControllerRow[]> {
  const claimed = await db.query<{ gateway_id: number }>(
    `UPDATE uhppote_controllers SET polled_until = $2
      WHERE gateway_id IN (SELECT gateway_id FROM uhppote_controllers WHERE polled_until IS NULL OR polled_until <= $1
                            ORDER BY gateway_id LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING gateway_id`,
    [now, until, limit],
  );
  if (claimed.length === 0) return [];
  const rows = await db.query<ControllerRow>(`${CONTROLLER_SELECT} WHERE c.gateway_id = ANY($1::bigint[]) ORDER BY c.gateway_id`, [claimed.map((c) => c.gateway_id)]);
  return rows.map(toRow);
}

export async function releasePoll(db: Queryable, gatewayId: number): Promise<void> {
  await db.query('UPDATE uhppote_controllers SET polled_until = NULL WHERE gateway_id = $1', [gatewayId]);
}

// ---- set-up ------------------------------------------------------------------------------------

export interface ControllerFields {
  serial: number;
  host: string;
  port: number;
  transport: 'udp' | 'tcp';
  doors: number;
}

export async function serialTaken(db: Queryable, serial: number, exceptGatewayId: number | null): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM uhppote_controllers WHERE serial_number = $1 AND gateway_id IS DISTINCT FROM $2', [serial, exceptGatewayId]);
  return rows.length > 0;
}

export async function insertController(tx: Queryable, c: ControllerFields & { locationId: number; name: string }, now: Date): Promise<number> {
  const [gateway] = await tx.query<{ id: number }>(
    `INSERT INTO gateways (location_id, name, kind, created_at) VALUES ($1, $2, 'uhppote', $3) RETURNING id`,
    [c.locationId, c.name, now],
  );
  const id = Number(gateway!.id);
  await tx.query('INSERT INTO uhppote_controllers (gateway_id, serial_number, host, port, transport, doors) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    c.serial,
    c.host,
    c.port,
    c.transport,
    c.doors,
  ]);
  return id;
}

export async function updateController(tx: Queryable, gatewayId: number, c: Partial<ControllerFields> & { name?: string | undefined }): Promise<void> {
  if (c.name !== undefined) await tx.query('UPDATE gateways SET name = $2 WHERE id = $1', [gatewayId, c.name]);
  await tx.query(
    `UPDATE uhppote_controllers SET host = coalesce($2, host), port = coalesce($3, port), transport = coalesce($4, transport),
            listener_set_at = CASE WHEN $2::text IS NULL AND $3::integer IS NULL THEN listener_set_at END
      WHERE gateway_id = $1`,
    [gatewayId, c.host ?? null, c.port ?? null, c.transport ?? null],
  );
}

/** Locks the controller's row for a change of its doors. */
export async function lockController(tx: Queryable, gatewayId: number): Promise<boolean> {
  return (await tx.query('SELECT 1 FROM uhppote_controllers WHERE gateway_id = $1 FOR UPDATE', [gatewayId])).length > 0;
}

/** The lock with its account and time zone, for a door mapping. */
export async function lockForDoor(db: Queryable, lockId: number): Promise<{ id: number; account_id: number; gateway_id: number | null; time_zone: string } | null> {
  const [row] = await db.query<{ id: number; account_id: number; gateway_id: number | null; time_zone: string }>(
    `SELECT k.id, l.account_id, k.gateway_id,
            coalesce((SELECT z.time_zone FROM locations z WHERE z.id = ANY(l.path) AND z.time_zone IS NOT NULL
                       ORDER BY array_position(l.path, z.id) DESC LIMIT 1), 'UTC') AS time_zone
       FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.id = $1`,
    [lockId],
  );
  return row ? { ...row, id: Number(row.id), account_id: Number(row.account_id), gateway_id: row.gateway_id === null ? null : Number(row.gateway_id) } : null;
}

/** Replaces the controller's doors: locks taken off it leave the gateway, the new ones join it. */
export async function replaceDoors(tx: Queryable, gatewayId: number, doors: Array<{ door: number; lockId: number }>): Promise<void> {
  await tx.query('UPDATE locks SET gateway_id = NULL WHERE gateway_id = $1 AND NOT (id = ANY($2::bigint[]))', [gatewayId, doors.map((d) => d.lockId)]);
  await tx.query('DELETE FROM uhppote_doors WHERE gateway_id = $1', [gatewayId]);
  if (doors.length === 0) return;
  await tx.query('UPDATE locks SET gateway_id = $1 WHERE id = ANY($2::bigint[])', [gatewayId, doors.map((d) => d.lockId)]);
  await tx.query('INSERT INTO uhppote_doors (lock_id, gateway_id, door) SELECT * FROM unnest($2::bigint[], $3::bigint[], $4::smallint[]) AS d (lock_id, g, door) WHERE g = $1', [
    gatewayId,
    doors.map((d) => d.lockId),
    doors.map(() => gatewayId),
    doors.map((d) => d.door),
  ]);
}

/** Whether a lock is a door of a controller (its gateway may then only change through the controller). */
export async function isControllerDoor(db: Queryable, lockId: number): Promise<boolean> {
  return (await db.query('SELECT 1 FROM uhppote_doors WHERE lock_id = $1', [lockId])).length > 0;
}

export async function isControllerGateway(db: Queryable, gatewayId: number): Promise<boolean> {
  return (await db.query("SELECT 1 FROM gateways WHERE id = $1 AND kind = 'uhppote'", [gatewayId])).length > 0;
}

/** What keeps a controller from being deleted: locks on its doors, history (log entries, commands), or cards recorded on its board. */
export async function controllerUse(tx: Queryable, gatewayId: number): Promise<{ locks: boolean; history: boolean; cards: number }> {
  const [use] = await tx.query<{ locks: boolean; history: boolean; cards: number }>(
    `SELECT EXISTS (SELECT 1 FROM locks WHERE gateway_id = $1) AS locks,
            EXISTS (SELECT 1 FROM access_events WHERE gateway_id = $1) OR EXISTS (SELECT 1 FROM lock_commands WHERE gateway_id = $1) AS history,
            (SELECT count(*) FROM uhppote_cards WHERE gateway_id = $1)::int AS cards`,
    [gatewayId],
  );
  return { locks: use?.locks ?? false, history: use?.history ?? false, cards: Number(use?.cards ?? 0) };
}

/** The gateway row and, by cascade, the controller, its profiles and card records. */
export async function deleteController(tx: Queryable, gatewayId: number): Promise<void> {
  await tx.query("DELETE FROM gateways WHERE id = $1 AND kind = 'uhppote'", [gatewayId]);
}

// ---- what was written to a board -------------------------------------------------------------

export async function profileIds(db: Queryable, gatewayId: number): Promise<Map<string, number>> {
  const rows = await db.query<{ profile_id: number; definition: string }>('SELECT profile_id, definition FROM uhppote_time_profiles WHERE gateway_id = $1', [gatewayId]);
  return new Map(rows.map((r) => [r.definition, Number(r.profile_id)]));
}

/** Takes a free profile id of the board for a definition; false when the id, or the definition, is held already. */
export async function reserveProfileId(db: Queryable, gatewayId: number, profileId: number, definition: string): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO uhppote_time_profiles (gateway_id, profile_id, definition) VALUES ($1, $2, $3)
     ON CONFLICT DO NOTHING RETURNING profile_id`,
    [gatewayId, profileId, definition],
  );
  return rows.length > 0;
}

/** Gives back a reserved id the board refused. */
export async function releaseProfile(db: Queryable, gatewayId: number, profileId: number, definition: string): Promise<void> {
  await db.query('DELETE FROM uhppote_time_profiles WHERE gateway_id = $1 AND profile_id = $2 AND definition = $3', [gatewayId, profileId, definition]);
}

export async function forgetProfiles(db: Queryable, gatewayId: number): Promise<void> {
  await db.query('DELETE FROM uhppote_time_profiles WHERE gateway_id = $1', [gatewayId]);
}

export interface StoredCard {
  key_id: number;
  card_digest: string;
  card_box: string;
  record: string;
}

/** The cards recorded on a board for these keys, or with these digests (another key's card number). */
export async function storedCards(db: Queryable, gatewayId: number, keyIds: number[] | null, digests: string[] = []): Promise<StoredCard[]> {
  const rows = await db.query<StoredCard>(
    `SELECT key_id, card_digest, card_box, record FROM uhppote_cards
      WHERE gateway_id = $1 AND ($2::bigint[] IS NULL OR key_id = ANY($2::bigint[]) OR card_digest = ANY($3::text[]))`,
    [gatewayId, keyIds, digests],
  );
  return rows.map((r) => ({ ...r, key_id: Number(r.key_id) }));
}

export async function saveCard(db: Queryable, gatewayId: number, card: StoredCard, now: Date): Promise<void> {
  await db.query('DELETE FROM uhppote_cards WHERE gateway_id = $1 AND card_digest = $2 AND key_id <> $3', [gatewayId, card.card_digest, card.key_id]);
  await db.query(
    `INSERT INTO uhppote_cards (gateway_id, key_id, card_digest, card_box, record, written_at) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (gateway_id, key_id) DO UPDATE SET card_digest = EXCLUDED.card_digest, card_box = EXCLUDED.card_box,
        record = EXCLUDED.record, written_at = EXCLUDED.written_at`,
    [gatewayId, card.key_id, card.card_digest, card.card_box, card.record, now],
  );
}

export async function forgetCard(db: Queryable, gatewayId: number, keyId: number): Promise<void> {
  await db.query('DELETE FROM uhppote_cards WHERE gateway_id = $1 AND key_id = $2', [gatewayId, keyId]);
}

/** The keys whose cards (by digest) are recorded on this board. */
export async function keysOfCards(db: Queryable, gatewayId: number, digests: string[]): Promise<Map<string, number>> {
  if (digests.length === 0) return new Map();
  const rows = await db.query<{ key_id: number; card_digest: string }>('SELECT key_id, card_digest FROM uhppote_cards WHERE gateway_id = $1 AND card_digest = ANY($2::text[])', [
    gatewayId,
    digests,
  ]);
  return new Map(rows.map((r) => [r.card_digest, Number(r.key_id)]));
}

// ---- events, clock, reconciliation -----------------------------------------------------------

/** Moves the read index on (never back): two instances reading the same events agree. */
export async function advanceEventIndex(db: Queryable, gatewayId: number, index: number): Promise<void> {
  await db.query('UPDATE uhppote_controllers SET last_event_index = greatest(last_event_index, $2) WHERE gateway_id = $1', [gatewayId, index]);
}

export async function recordContactState(
  db: Queryable,
  gatewayId: number,
  s: { clockSetAt?: Date; listenerSetAt?: Date; error: string | null },
): Promise<void> {
  await db.query(
    `UPDATE uhppote_controllers SET clock_set_at = coalesce($2, clock_set_at), listener_set_at = coalesce($3, listener_set_at), last_error = $4
      WHERE gateway_id = $1`,
    [gatewayId, s.clockSetAt ?? null, s.listenerSetAt ?? null, s.error],
  );
}

/** Boards that left a card write unanswered (see ControllerRow.missed_write_at). */
export async function recordMissedWrites(db: Queryable, gatewayIds: number[], now: Date): Promise<void> {
  await db.query('UPDATE uhppote_controllers SET missed_write_at = $2 WHERE gateway_id = ANY($1::bigint[])', [gatewayIds, now]);
}

/**
 * The board's waiting writes were made due again: the mark is cleared, unless another write was missed since `seen`
 * was read (a write under way then, on any instance, that fails marks it anew with its own time: compared for
 * equality, not order, since instances' clocks differ).
 */
export async function clearMissedWrite(db: Queryable, gatewayId: number, seen: Date): Promise<void> {
  await db.query('UPDATE uhppote_controllers SET missed_write_at = NULL WHERE gateway_id = $1 AND missed_write_at = $2', [gatewayId, seen]);
}

export async function recordReconciliation(db: Queryable, gatewayId: number, report: unknown, now: Date): Promise<void> {
  await db.query('UPDATE uhppote_controllers SET reconciled_at = $2, last_reconciliation = $3 WHERE gateway_id = $1', [gatewayId, now, JSON.stringify(report)]);
}

/** Read through the indexes keys_starts_at and keys_expires_at (migration 022), whose predicates it repeats. */
export const VALIDITY_EDGE_KEYS = {
  name: 'controllers.keysWithValidityEdge',
  text: `SELECT k.account_id, k.id AS key_id FROM keys k JOIN accounts a ON a.id = k.account_id
          WHERE a.locking_system = 'uhppote' AND k.credential_box IS NOT NULL
            AND ((k.starts_at > $1 AND k.starts_at <= $2) OR (k.expires_at > $1 AND k.expires_at <= $2))`,
};

/** Keys of UHPPOTE accounts whose validity began or ended in (from, to]: their cards go on or come off now. */
export async function keysWithValidityEdge(db: Queryable, from: Date, to: Date): Promise<Array<{ account_id: number; key_id: number }>> {
  const rows = await db.query<{ account_id: number; key_id: number }>(VALIDITY_EDGE_KEYS, [from, to]);
  return rows.map((r) => ({ account_id: Number(r.account_id), key_id: Number(r.key_id) }));
}

export async function accountLockingSystem(db: Queryable, accountId: number): Promise<string | null | undefined> {
  const [row] = await db.query<{ locking_system: string | null }>('SELECT locking_system FROM accounts WHERE id = $1', [accountId]);
  return row ? row.locking_system : undefined;
}

export async function locationAccount(db: Queryable, locationId: number): Promise<number | null> {
  const [row] = await db.query<{ account_id: number }>('SELECT account_id FROM locations WHERE id = $1', [locationId]);
  return row ? Number(row.account_id) : null;
}

/** A location's time zone: its own, or the nearest one above it; UTC when none is set. */
export async function zoneOfLocation(db: Queryable, locationId: number): Promise<string> {
  const [row] = await db.query<{ time_zone: string }>(
    `SELECT coalesce((SELECT z.time_zone FROM locations z WHERE z.id = ANY(l.path) AND z.time_zone IS NOT NULL
                       ORDER BY array_position(l.path, z.id) DESC LIMIT 1), 'UTC') AS time_zone
       FROM locations l WHERE l.id = $1`,
    [locationId],
  );
  return row?.time_zone ?? 'UTC';
}
