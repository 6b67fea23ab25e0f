// UHPPOTE controllers as the operator sets them up (README "Real controllers"): a board by serial number and
// address, its doors mapped to locks, and what the service knows of it (presence, clock, listener, the last
// reconciliation). Mapping doors changes what keys open there, so it rebuilds the account's lists and queues
// the boards' writes in the same transaction.
import { CATALOG_CHANNEL, CONTROLLERS_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Transaction } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import type { ReconciliationReport } from './reconcile.ts';
import {
  accountLockingSystem,
  controllerUse,
  deleteController,
  findController,
  insertController,
  listControllers,
  locationAccount,
  lockController,
  lockForDoor,
  replaceDoors,
  serialTaken,
  updateController,
  zoneOfLocation,
  type ControllerRow,
} from './store.ts';
import type { Controller, ControllerCreate, ControllerUpdate } from './schemas.ts';

export const UHPPOTE_LOCKING_SYSTEM = 'uhppote';

export interface ControllersServiceDeps {
  db: Database;
  clock: Clock;
  /** What keys open changed for every key of the account (the access lists' refresh). */
  rulesChanged: (tx: Transaction, accountId: number) => Promise<void>;
  reconcile: (controller: ControllerRow) => Promise<ReconciliationReport>;
  /** Polls a board now (presence, clock, listener), so a new one is seen at once. */
  pollNow: (controller: ControllerRow) => Promise<boolean>;
  /** A board was set up, changed or deleted (committed): this instance's listener reads its boards again at once. */
  boardsChanged: () => Promise<void>;
}

type DoorLocks = Array<{ door: number; lock_id: number }>;

export function toController(row: ControllerRow): Controller {
  return {
    id: row.gateway_id,
    account_id: row.account_id,
    location_id: row.location_id,
    name: row.name,
    serial_number: row.serial_number,
    address: row.host,
    port: row.port,
    transport: row.transport,
    doors: row.doors,
    door_locks: row.door_locks,
    time_zone: row.time_zone,
    online: row.online,
    last_seen_at: row.last_seen_at?.toISOString() ?? null,
    clock_set_at: row.clock_set_at?.toISOString() ?? null,
    listener_set_at: row.listener_set_at?.toISOString() ?? null,
    last_error: row.last_error,
    reconciliation: (row.last_reconciliation as Controller['reconciliation']) ?? null,
    created_at: row.created_at.toISOString(),
  };
}

export class ControllersService {
  constructor(private readonly deps: ControllersServiceDeps) {}

  async create(body: ControllerCreate): Promise<Controller> {
    const { db, clock } = this.deps;
    const details: ErrorDetail[] = [];
    const accountId = await locationAccount(db, body.location_id);
    if (accountId === null) throw errors.invalidField('location_id', `No location with id ${body.location_id}.`);
    if ((await accountLockingSystem(db, accountId)) !== UHPPOTE_LOCKING_SYSTEM) {
      details.push({
        field: 'location_id',
        code: 'invalid',
        message: `Account ${accountId} does not use UHPPOTE controllers as its locking system; create the account with locking_system "uhppote".`,
      });
    }
    if (await serialTaken(db, body.serial_number, null)) {
      details.push({ field: 'serial_number', code: 'invalid', message: `A controller with serial number ${body.serial_number} is already set up.` });
    }
    const doors = body.doors ?? 4;
    const doorLocks = body.door_locks ?? [];
    if (details.length === 0) await this.checkDoors(accountId, null, doors, doorLocks, await this.zoneAt(body.location_id), details);
    if (details.length > 0) throw errors.validation(details);
    const id = await db.transaction(async (tx) => {
      const gatewayId = await insertController(
        tx,
        { locationId: body.location_id, name: body.name, serial: body.serial_number, host: body.address, port: body.port ?? 60000, transport: body.transport ?? 'udp', doors },
        clock.now(),
      );
      await replaceDoors(tx, gatewayId, doorLocks.map((d) => ({ door: d.door, lockId: d.lock_id })));
      if (doorLocks.length > 0) await this.doorsMoved(tx, accountId);
      await tx.notify(CONTROLLERS_CHANNEL);
      return gatewayId;
    });
    await this.deps.boardsChanged();
    const row = (await findController(db, id)) as ControllerRow;
    await this.deps.pollNow(row).catch(() => undefined);
    return toController((await findController(db, id)) as ControllerRow);
  }

  async list(page: PageRequest, filter: { accountId?: number | undefined; locationId?: number | undefined }): Promise<PageOf<Controller>> {
    const rows = await listControllers(this.deps.db, filter, page.afterId ?? 0, page.limit + 1);
    return toPage(rows.map(toController), page.limit, (c) => c.id, 'op.controllers');
  }

  async get(id: number): Promise<Controller> {
    return toController(await this.row(id));
  }

  async update(id: number, body: ControllerUpdate): Promise<Controller> {
    const { db } = this.deps;
    const row = await this.row(id);
    const details: ErrorDetail[] = [];
    if (body.door_locks) await this.checkDoors(row.account_id, id, row.doors, body.door_locks, row.time_zone, details);
    if (details.length > 0) throw errors.validation(details);
    await db.transaction(async (tx) => {
      if (!(await lockController(tx, id))) throw errors.notFound('controller');
      await updateController(tx, id, { name: body.name, host: body.address, port: body.port, transport: body.transport });
      if (body.door_locks) {
        await replaceDoors(tx, id, body.door_locks.map((d) => ({ door: d.door, lockId: d.lock_id })));
        await this.doorsMoved(tx, row.account_id);
      }
      await tx.notify(CONTROLLERS_CHANNEL);
    });
    await this.deps.boardsChanged();
    return this.get(id);
  }

  /**
   * Locks were put on or taken off the board's doors (their gateway changed): the gateways' rules, and every
   * instance's cached locks, which show whether a lock is remote and online (as the operator API's lock changes do).
   */
  private async doorsMoved(tx: Transaction, accountId: number): Promise<void> {
    await this.deps.rulesChanged(tx, accountId);
    await tx.notify(CATALOG_CHANNEL);
  }

  /**
   * Refused while locks are on its doors (take them off first) or the access log names it, as a gateway; and while
   * cards Latchkey wrote are recorded on the board (its doors were emptied, but the board has not taken them off yet:
   * their removal is queued), since deleting forgets them. `force`: the board is gone for good.
   */
  async delete(id: number, options: { force?: boolean } = {}): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      if (!(await lockController(tx, id))) throw errors.notFound('controller');
      const use = await controllerUse(tx, id);
      if (use.locks) throw errors.gatewayHasLocks();
      if (use.history) throw errors.gatewayHasHistory();
      if (use.cards > 0 && !options.force) throw errors.controllerHoldsCards(use.cards);
      await deleteController(tx, id);
      await tx.notify(CONTROLLERS_CHANNEL);
    });
    await this.deps.boardsChanged();
  }

  async reconcile(id: number): Promise<ReconciliationReport> {
    return this.deps.reconcile(await this.row(id));
  }

  private async row(id: number): Promise<ControllerRow> {
    const row = await findController(this.deps.db, id);
    if (!row) throw errors.notFound('controller');
    return row;
  }

  /** The wall clock a board at this location keeps: the location's time zone. */
  private zoneAt(locationId: number): Promise<string> {
    return zoneOfLocation(this.deps.db, locationId);
  }

  /** Doors within the board's count, each once; locks of the account, not on another gateway, read in the board's zone. */
  private async checkDoors(accountId: number, gatewayId: number | null, doors: number, doorLocks: DoorLocks, zone: string, details: ErrorDetail[]): Promise<void> {
    const seenDoors = new Set<number>();
    const seenLocks = new Set<number>();
    for (const [i, { door, lock_id }] of doorLocks.entries()) {
      const field = `door_locks[${i}]`;
      if (door > doors) details.push({ field: `${field}.door`, code: 'invalid', message: `This controller has ${doors} door${doors === 1 ? '' : 's'}.` });
      if (seenDoors.has(door)) details.push({ field: `${field}.door`, code: 'invalid', message: `Door ${door} is listed twice.` });
      if (seenLocks.has(lock_id)) details.push({ field: `${field}.lock_id`, code: 'invalid', message: `Lock ${lock_id} is listed twice.` });
      seenDoors.add(door);
      seenLocks.add(lock_id);
      const lock = await lockForDoor(this.deps.db, lock_id);
      if (!lock || lock.account_id !== accountId) {
        details.push({ field: `${field}.lock_id`, code: 'invalid', message: `No lock ${lock_id} in this account.` });
        continue;
      }
      if (lock.gateway_id !== null && lock.gateway_id !== gatewayId) {
        details.push({ field: `${field}.lock_id`, code: 'invalid', message: `Lock ${lock_id} is on gateway ${lock.gateway_id}; take it off there first.` });
      }
      if (lock.time_zone !== zone) {
        details.push({
          field: `${field}.lock_id`,
          code: 'invalid',
          message: `Lock ${lock_id} reads its windows in ${lock.time_zone}, but the controller's clock runs in ${zone} (its location's time zone).`,
        });
      }
    }
  }
}
