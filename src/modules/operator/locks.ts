// Locks and security groups as the operator provisions them; the public API reads them through the
// catalog module (README "API notes": Security groups in scope).
import { CATALOG_CHANNEL } from '../../platform/channels.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import { checkWindows, type TimeWindow } from '../access/index.ts';
import { UHPPOTE_LOCKING_SYSTEM, windowsProblem } from '../controllers/index.ts';
import { lockById, locksUnder, unknownSecurityGroups } from '../catalog/index.ts';
import type { OperatorLock } from '../catalog/schemas.ts';
import { requireLocation } from './accounts.ts';
import type { LockCreate, LockUpdate, OperatorSecurityGroup, SecurityGroupCreate, SecurityGroupUpdate } from './schemas.ts';
import type { OperatorDeps } from './service.ts';
import {
  accountExists,
  findSecurityGroup,
  gatewayInAccount,
  touchesController,
  accountRoot,
  lockingSystemOfAccount,
  insertLock,
  insertSecurityGroup,
  listAccountSecurityGroups,
  lockLocation,
  updateLock,
  updateSecurityGroup,
} from './store.ts';

/** A lock joins or leaves a UHPPOTE controller as one of its doors (which door it is matters to the board). */
const CONTROLLER_DOORS = 'Locks join and leave a UHPPOTE controller as its doors: PATCH /admin/v1/controllers/{id} with door_locks.';

export class LocksService {
  constructor(private readonly deps: Pick<OperatorDeps, 'db' | 'clock' | 'access'>) {}

  /** `code` is unique per location (422 on `code` otherwise); `windows` null or absent: at any time. */
  async createSecurityGroup(body: SecurityGroupCreate): Promise<OperatorSecurityGroup> {
    if (body.windows) throwIfAny(checkWindows(body.windows));
    const location = await requireLocation(this.deps.db, body.location_id, 'location_id');
    if (body.windows) await this.checkFitsControllers(location.account_id, body.windows);
    // A code names the group nearest above a lock (and above a key's holder): a new group can take a code's meaning
    // from a group higher up for every lock and key at and below its location, so what keys open may change.
    return this.deps.db.transaction(async (tx) => {
      const group = await insertSecurityGroup(tx, body, this.deps.clock.now());
      if (!group) throw errors.invalidField('code', `A security group with code ${body.code} already exists at this location.`);
      await tx.notify(CATALOG_CHANNEL);
      await this.deps.access.refresh(tx, location.account_id, null);
      return group;
    });
  }

  /** On an account whose locking system is UHPPOTE controllers, windows a board cannot hold exactly are refused. */
  private async checkFitsControllers(accountId: number, windows: TimeWindow[]): Promise<void> {
    if ((await lockingSystemOfAccount(this.deps.db, accountId)) !== UHPPOTE_LOCKING_SYSTEM) return;
    const problem = windowsProblem(windows);
    if (problem) throw errors.invalidField('windows', problem);
  }

  /** Changes the fields sent; new windows reach every gateway holding a door of the group as a change. */
  async updateSecurityGroup(id: number, body: SecurityGroupUpdate): Promise<OperatorSecurityGroup> {
    if (body.windows) throwIfAny(checkWindows(body.windows));
    const existing = await findSecurityGroup(this.deps.db, id);
    if (existing && body.windows) await this.checkFitsControllers(existing.account_id, body.windows);
    return this.deps.db.transaction(async (tx) => {
      const group = await findSecurityGroup(tx, id);
      if (!group) throw errors.notFound('security group');
      await updateSecurityGroup(tx, id, body);
      await tx.notify(CATALOG_CHANNEL);
      if (body.windows !== undefined) await this.deps.access.refresh(tx, group.account_id, null);
      const { account_id: _account, ...updated } = (await findSecurityGroup(tx, id)) as OperatorSecurityGroup & { account_id: number };
      return updated;
    });
  }

  async listSecurityGroups(accountId: number, page: PageRequest): Promise<PageOf<OperatorSecurityGroup>> {
    if (!(await accountExists(this.deps.db, accountId))) throw errors.notFound('account');
    return toPage(await listAccountSecurityGroups(this.deps.db, accountId, page.afterId, page.limit + 1), page.limit, (g) => g.id, 'op.security_groups');
  }

  /** Every lock, or those of an account or at a location and below (the operator sees every account). */
  async list(page: PageRequest, owner: { accountId?: number | undefined; locationId?: number | undefined }): Promise<PageOf<OperatorLock>> {
    const under: number[] = [];
    if (owner.locationId !== undefined) under.push(owner.locationId);
    if (owner.accountId !== undefined) {
      const root = await accountRoot(this.deps.db, owner.accountId);
      if (root === null) throw errors.notFound('account');
      under.push(root);
    }
    return toPage(await locksUnder(this.deps.db, under, page.afterId, page.limit + 1), page.limit, (lock) => lock.id, 'op.locks');
  }

  /** `gateway_id` makes it remote (a gateway of the same account); groups are codes of its location or above. */
  async create(body: LockCreate): Promise<OperatorLock> {
    const { db } = this.deps;
    const location = await requireLocation(db, body.location_id, 'location_id');
    const details: ErrorDetail[] = [];
    const gatewayId = body.gateway_id ?? null;
    if (gatewayId !== null && !(await gatewayInAccount(db, gatewayId, location.account_id))) {
      details.push({ field: 'gateway_id', code: 'invalid', message: `No gateway ${gatewayId} in this account.` });
    } else if (gatewayId !== null && (await touchesController(db, null, gatewayId))) {
      details.push({ field: 'gateway_id', code: 'invalid', message: CONTROLLER_DOORS });
    }
    const codes = body.security_groups ?? [];
    details.push(...(await unknownSecurityGroups(db, location.id, codes)));
    if (details.length > 0) throw errors.validation(details);

    return db.transaction(async (tx) => {
      const id = await insertLock(
        tx,
        {
          locationId: location.id,
          name: body.name,
          place: body.place ?? '',
          serialNumber: body.serial_number ?? null,
          provider: body.provider ?? 'sandbox',
          gatewayId,
          groupCodes: codes,
        },
        this.deps.clock.now(),
      );
      // Every instance drops its cached locks (README "Architecture": caches).
      await tx.notify(CATALOG_CHANNEL);
      await this.deps.access.refresh(tx, location.account_id, null);
      const lock = await lockById(tx, id);
      if (!lock) throw new Error('inserted lock not found');
      return lock;
    });
  }

  /** Puts a lock on a gateway (or off: null), renames it or replaces its security groups; the rules of create. */
  async update(id: number, body: LockUpdate): Promise<OperatorLock> {
    const { db } = this.deps;
    const locationId = await lockLocation(db, id);
    if (locationId === null) throw errors.notFound('lock');
    const location = await requireLocation(db, locationId, 'location_id');
    const details: ErrorDetail[] = [];
    if (body.gateway_id != null && !(await gatewayInAccount(db, body.gateway_id, location.account_id))) {
      details.push({ field: 'gateway_id', code: 'invalid', message: `No gateway ${body.gateway_id} in this account.` });
    } else if (body.gateway_id !== undefined && (await touchesController(db, id, body.gateway_id))) {
      details.push({ field: 'gateway_id', code: 'invalid', message: CONTROLLER_DOORS });
    }
    if (body.security_groups) details.push(...(await unknownSecurityGroups(db, location.id, body.security_groups)));
    if (details.length > 0) throw errors.validation(details);

    return db.transaction(async (tx) => {
      await updateLock(tx, id, { name: body.name, place: body.place, gatewayId: body.gateway_id, groupCodes: body.security_groups });
      await tx.notify(CATALOG_CHANNEL);
      // A lock moved to another gateway or given other groups: the lists of both gateways change.
      if (body.gateway_id !== undefined || body.security_groups !== undefined) await this.deps.access.refresh(tx, location.account_id, null);
      const lock = await lockById(tx, id);
      if (!lock) throw errors.notFound('lock');
      return lock;
    });
  }
}

function throwIfAny(details: ErrorDetail[]): void {
  if (details.length > 0) throw errors.validation(details);
}
