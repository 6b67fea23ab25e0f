// Accounts, their departments (locations) and dashboard users (docs/spec/operator-api.md).
import { AUTH_CHANNEL, CATALOG_CHANNEL } from '../../platform/channels.ts';
import type { Queryable } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { isValidTimeZone } from '../access/index.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import type { Account, AccountCreate, AccountUpdate, Location, LocationCreate, LocationUpdate, Overview, User, UserCreate } from './schemas.ts';
import type { OperatorDeps } from './service.ts';
import {
  accountExists,
  controllersOfAccount,
  findAccount,
  findLocation,
  insertAccount,
  insertLocation,
  insertUser,
  listAccounts,
  listLocations,
  listUsers,
  overviewCounts,
  updateAccount,
  updateLocation,
  type LocationRow,
} from './store.ts';

/** The location a body names in `field`, or 422 on that field. */
export async function requireLocation(db: Queryable, id: number, field: string): Promise<LocationRow> {
  const location = await findLocation(db, id);
  if (!location) throw errors.invalidField(field, `No location with id ${id}.`);
  return location;
}

function checkTimeZone(zone: string | null | undefined): void {
  if (zone != null && !isValidTimeZone(zone)) throw errors.invalidField('time_zone', `${zone} is not an IANA time-zone name (e.g. Europe/Berlin).`);
}

function toLocation({ path: _path, ...location }: LocationRow): Location {
  return location;
}

export class AccountsService {
  constructor(private readonly deps: Pick<OperatorDeps, 'db' | 'clock' | 'access'>) {}

  /** The account and its root location, named after it, in one transaction. */
  async create(body: AccountCreate): Promise<Account> {
    return this.deps.db.transaction(async (tx) => {
      const now = this.deps.clock.now();
      const accountId = await insertAccount(tx, body, now);
      await insertLocation(tx, { accountId, parentId: null, name: body.name, parentPath: [] }, now);
      return (await findAccount(tx, accountId)) as Account;
    });
  }

  async get(id: number): Promise<Account> {
    const account = await findAccount(this.deps.db, id);
    if (!account) throw errors.notFound('account');
    return account;
  }

  async list(page: PageRequest, q: string | undefined): Promise<PageOf<Account>> {
    const rows = await listAccounts(this.deps.db, q === undefined || q === '' ? null : q, page.afterId, page.limit + 1);
    return toPage(rows, page.limit, (a) => a.id, 'op.accounts');
  }

  /** Every location of the account, a parent before its children (ids grow down the tree). */
  async listLocations(accountId: number, page: PageRequest): Promise<PageOf<Location>> {
    await this.requireAccount(accountId);
    return toPage(await listLocations(this.deps.db, accountId, page.afterId, page.limit + 1), page.limit, (l) => l.id, 'op.locations');
  }

  async listUsers(accountId: number, page: PageRequest): Promise<PageOf<User>> {
    await this.requireAccount(accountId);
    return toPage(await listUsers(this.deps.db, accountId, page.afterId, page.limit + 1), page.limit, (u) => u.id, 'op.users');
  }

  /** The counts of the console's first page. */
  async overview(): Promise<Overview> {
    return overviewCounts(this.deps.db);
  }

  /** An unknown account in a list filter is 404, like the row it names (not an empty page that hides a typo). */
  private async requireAccount(id: number): Promise<void> {
    if (!(await accountExists(this.deps.db, id))) throw errors.notFound('account');
  }

  async update(id: number, body: AccountUpdate): Promise<Account> {
    return this.deps.db.transaction(async (tx) => {
      // Its boards would keep every card they hold, never written again: their controllers go first.
      if (body.locking_system !== undefined && body.locking_system !== 'uhppote' && (await controllersOfAccount(tx, id)) > 0) {
        throw errors.invalidField('locking_system', 'This account has UHPPOTE controllers; delete them (DELETE /admin/v1/controllers/{id}) before it stops using them.');
      }
      if (!(await updateAccount(tx, id, body))) throw errors.notFound('account');
      // reseller decides what every key of the account may do: drop cached keys everywhere.
      await tx.notify(AUTH_CHANNEL);
      return (await findAccount(tx, id)) as Account;
    });
  }

  /** A department under `parent_id`, in the parent's account. */
  async createLocation(body: LocationCreate): Promise<Location> {
    checkTimeZone(body.time_zone);
    return this.deps.db.transaction(async (tx) => {
      const parent = await requireLocation(tx, body.parent_id, 'parent_id');
      const id = await insertLocation(
        tx,
        { accountId: parent.account_id, parentId: parent.id, name: body.name, parentPath: parent.path, timeZone: body.time_zone ?? null },
        this.deps.clock.now(),
      );
      return toLocation((await findLocation(tx, id)) as LocationRow);
    });
  }

  /**
   * Renames a location or sets its time zone (null: its parent's). A new zone moves the windows of every door
   * under it: the account's gateway lists are refreshed in the same transaction.
   */
  async updateLocation(id: number, body: LocationUpdate): Promise<Location> {
    checkTimeZone(body.time_zone);
    return this.deps.db.transaction(async (tx) => {
      const location = await findLocation(tx, id);
      if (!location) throw errors.notFound('location');
      await updateLocation(tx, id, body);
      await tx.notify(CATALOG_CHANNEL);
      if (body.time_zone !== undefined && body.time_zone !== location.time_zone) await this.deps.access.refresh(tx, location.account_id, null);
      return toLocation((await findLocation(tx, id)) as LocationRow);
    });
  }

  async createUser(body: UserCreate): Promise<User> {
    if (!(await accountExists(this.deps.db, body.account_id))) throw errors.invalidField('account_id', `No account with id ${body.account_id}.`);
    return insertUser(this.deps.db, body, this.deps.clock.now());
  }
}
