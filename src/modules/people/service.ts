// The rules of people (spec: Endpoints/People, rules 1 to 7).
//
// Order of a write when the account syncs with a locking system: validate, write to the locking system
// (no database transaction is open while it answers), then commit the row and its event in one
// transaction. If that commit fails after the locking system accepted, the service writes the inverse
// change back to the locking system (best effort, logged) and the call answers 500: the client retries.
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import { CATALOG_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable, Transaction } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { uuidv7 } from '../../platform/ids.ts';
import { everyAccount, ROWS_CHANGED, type PageCache, type PageCaches } from '../../platform/page-cache.ts';
import { decodeCursor, clampLimit, toPage, type PageOf } from '../../platform/pagination.ts';
import type { EmbeddedKey } from '../keys/schemas.ts';
import type { LockingSystem, LockingSystems } from '../locking-system/index.ts';
import { emitDomainEvent, forgetPersonInDeliveries } from '../webhooks/index.ts';
import { emailKey, hasControlCharacter, isReservedName, normalisePhone } from './rules.ts';
import {
  PersonListQuery,
  type OperatorPersonCreate,
  type Person,
  type PersonCreate,
  type PersonSearchQuery,
  type PersonUpdate,
} from './schemas.ts';
import * as storeModule from './store.ts';
import { toPerson, type PersonRow, type PersonValues } from './store.ts';

/**
 * What the service reads and writes (Immich's repositories): its store's functions, and the writes of other
 * modules that join its transactions. Passed in, so that its rules run in the unit tier on a fake
 * (test/unit/people-service.test.ts); production takes `peopleStore`.
 */
export type PeopleStore = Pick<
  typeof storeModule,
  | 'findPerson'
  | 'findDuplicate'
  | 'peoplePageJson'
  | 'searchPeople'
  | 'accountExists'
  | 'insertPerson'
  | 'updatePerson'
  | 'softDeletePerson'
  | 'forgetContactDetails'
  | 'findLocationWithAccount'
  | 'findAccountLockingSystem'
  | 'lockKey'
> & {
  emitDomainEvent: typeof emitDomainEvent;
  forgetPersonInDeliveries: typeof forgetPersonInDeliveries;
};

export const peopleStore: PeopleStore = { ...storeModule, emitDomainEvent, forgetPersonInDeliveries };

const VISIBLE_FIELDS = ['name', 'email', 'phone', 'company_name', 'title', 'language'] as const;

/** Where the service's lines go: the service's logger, or a request's (whose lines carry its request id). */
export type PeopleServiceLog = Pick<FastifyBaseLogger, 'error'>;

export interface PeopleDeps {
  db: Database;
  clock: Clock;
  lockingSystems: Pick<LockingSystems, 'forAccount'>;
  brandName: string;
  log: PeopleServiceLog;
  /** The person's keys inside a scope (from the keys area). */
  keysOfPerson: (scopeLocationId: number, personId: string) => Promise<EmbeddedKey[]>;
  /** Revokes the person's keys and cancels their invitations inside the deletion's transaction. */
  revokeEverythingOf: (tx: Transaction, personId: string, now: Date) => Promise<void>;
  /** Inside the move's transaction: what the person's keys open is read at their location (security groups). */
  personMoved: (tx: Transaction, personId: string, accountId: number) => Promise<void>;
  pages: PageCaches;
}

/** Pages of GET /v1/people kept per instance, by bytes of JSON; dropped on every change (see PageCache). */
const PAGE_CACHE_BYTES = 8 * 2 ** 20;
const PAGE_CACHE_TTL_MS = 30_000;

interface TargetLocation {
  id: number;
  accountId: number;
  lockingSystem: string | null;
}

export class PeopleService {
  private readonly pages: PageCache<typeof PersonListQuery>;

  constructor(
    private readonly deps: PeopleDeps,
    private readonly store: PeopleStore = peopleStore,
  ) {
    this.pages = deps.pages.create({ query: PersonListQuery, maxBytes: PAGE_CACHE_BYTES, ttlMs: PAGE_CACHE_TTL_MS });
  }

  /** Follows what changes a page: people, and locations (their names, the scope tree) through the catalog's channel. */
  async start(): Promise<void> {
    await this.pages.follow(this.db, [{ channel: ROWS_CHANGED.people }, { channel: CATALOG_CHANNEL, parse: everyAccount }]);
  }

  private get db(): Database {
    return this.deps.db;
  }

  // ---- reads ----------------------------------------------------------------------------------

  /** GET /v1/people as the JSON sent, from memory when nothing changed since, else as PostgreSQL writes it. */
  async listJson(caller: Caller, query: PersonListQuery): Promise<Buffer> {
    return this.pages.page(caller, query, async () => {
      const { limit, afterId, filter } = this.listRequest(query);
      return this.store.peoplePageJson(this.db, caller.locationId, filter, afterId, limit);
    });
  }

  private listRequest(query: PersonListQuery): { limit: number; afterId: string | null; filter: { email: string | null; phone: string | null } } {
    const limit = clampLimit(query.limit);
    const afterId = decodeCursor(query.cursor, 'uuid', 'people');
    let phone: string | null = null;
    if (query.phone !== undefined) {
      phone = normalisePhone(query.phone);
      if (phone === null) throw errors.invalidRequest('The query parameter phone is not an international phone number.');
    }
    return { limit, afterId, filter: { email: query.email ?? null, phone } };
  }

  /** GET /admin/v1/people: the console's search by name, e-mail or phone within an account. */
  async search(query: PersonSearchQuery): Promise<PageOf<Person>> {
    const limit = clampLimit(query.limit);
    const afterId = decodeCursor(query.cursor, 'uuid', 'op.people');
    const q = query.q === undefined || query.q.trim() === '' ? null : query.q.trim();
    const rows = await this.store.searchPeople(this.db, query.account_id, q, afterId, limit + 1);
    // Asked only when nothing was found: an account with people exists.
    if (rows.length === 0 && !(await this.store.accountExists(this.db, query.account_id))) throw errors.notFound('account');
    return toPage(rows.map(toPerson), limit, (p) => p.id, 'op.people');
  }

  async get(caller: Caller, id: string): Promise<Person & { keys: EmbeddedKey[] }> {
    const row = await this.store.findPerson(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('person');
    return { ...toPerson(row), keys: await this.deps.keysOfPerson(caller.locationId, id) };
  }

  // ---- writes ---------------------------------------------------------------------------------

  /**
   * POST /people: idempotent on data inside the key's scope (same phone or e-mail: 200, unchanged). `log`: the
   * request's logger, so that a failed compensation is logged under its request id.
   */
  async create(caller: Caller, body: PersonCreate, log: PeopleServiceLog = this.deps.log): Promise<{ person: Person; created: boolean }> {
    const location = await this.targetLocation(caller, body.location_id ?? caller.locationId);
    const values = this.validated(body, location.id, null);
    const existing = await this.store.findDuplicate(this.db, caller.locationId, location.accountId, values.phone, values.email);
    if (existing) return { person: toPerson(existing), created: false };
    return this.insert(location, values, false, caller.locationId, log);
  }

  /** POST /admin/v1/people: no scope and no de-duplication; `managed` people refuse public PUT and DELETE. */
  async createByOperator(body: OperatorPersonCreate, log: PeopleServiceLog = this.deps.log): Promise<Person> {
    const location = await this.targetLocation(null, body.location_id);
    const values = this.validated(body, location.id, null);
    return (await this.insert(location, values, body.managed ?? false, null, log)).person;
  }

  private async insert(
    location: TargetLocation,
    values: PersonValues,
    managed: boolean,
    dedupeScope: number | null,
    log: PeopleServiceLog,
  ): Promise<{ person: Person; created: boolean }> {
    const now = this.deps.clock.now();
    const id = uuidv7(now);
    const lockingSystem = this.lockingSystemOf(location);
    await lockingSystem.write('person.create', id);
    let result: { person: Person; created: boolean };
    try {
      result = await this.db.transaction(async (tx) => {
        if (dedupeScope !== null) {
          // Serialise creates of one phone or e-mail in an account, then look again: of two concurrent
          // creates the second finds the first.
          await lockIdentity(this.store, tx, location.accountId, values);
          const raced = await this.store.findDuplicate(tx, dedupeScope, location.accountId, values.phone, values.email);
          if (raced) return { person: toPerson(raced), created: false };
        }
        await this.store.insertPerson(tx, { ...values, id, account_id: location.accountId, managed }, now);
        const person = toPerson((await this.store.findPerson(tx, null, id)) as PersonRow);
        await this.store.emitDomainEvent(tx, {
          type: 'person.created',
          accountId: location.accountId,
          locationId: location.id,
          personId: id,
          data: person,
          occurredAt: now,
        });
        return { person, created: true };
      });
    } catch (error) {
      await this.compensate(lockingSystem, id, log);
      throw error;
    }
    // Lost a race to a concurrent create: the locking system holds a person that was never saved here.
    if (!result.created) await this.compensate(lockingSystem, id, log);
    return result;
  }

  async update(caller: Caller, id: string, body: PersonUpdate): Promise<Person> {
    const row = await this.writable(caller, id);
    const location =
      body.location_id === undefined || body.location_id === row.location_id
        ? { id: row.location_id, accountId: row.account_id, lockingSystem: await this.accountLockingSystem(row.account_id) }
        : await this.targetLocation(caller, body.location_id);
    const values = this.validated(body, location.id, row);
    const changed: string[] = VISIBLE_FIELDS.filter((field) => values[field] !== row[field]);
    if (values.location_id !== row.location_id) changed.push('location');
    if (changed.length === 0) return toPerson(row); // a save that changes nothing sends nothing

    await this.lockingSystemOf(location).write('person.update', id);
    const now = this.deps.clock.now();
    return this.db.transaction(async (tx) => {
      await this.store.updatePerson(tx, id, values, now);
      if (values.location_id !== row.location_id) await this.deps.personMoved(tx, id, row.account_id);
      const person = toPerson((await this.store.findPerson(tx, null, id)) as PersonRow);
      await this.store.emitDomainEvent(tx, {
        type: 'person.updated',
        accountId: row.account_id,
        locationId: location.id,
        personId: id,
        data: { ...person, changed_fields: changed },
        occurredAt: now,
      });
      return person;
    });
  }

  async delete(caller: Caller, id: string): Promise<void> {
    const row = await this.writable(caller, id);
    await this.lockingSystemOf({ lockingSystem: await this.accountLockingSystem(row.account_id), accountId: row.account_id, id: row.location_id }).write(
      'person.delete',
      id,
    );
    const now = this.deps.clock.now();
    await this.db.transaction(async (tx) => {
      if (!(await this.store.softDeletePerson(tx, id, now))) return; // deleted meanwhile: one event only
      await this.store.forgetPersonInDeliveries(tx, id);
      await this.deps.revokeEverythingOf(tx, id, now);
      await this.store.emitDomainEvent(tx, {
        type: 'person.deleted',
        accountId: row.account_id,
        locationId: row.location_id,
        personId: id,
        data: { id, name: row.name, email: row.email, location: { id: row.location_id, name: row.location_name } },
        occurredAt: now,
      });
      await this.store.forgetContactDetails(tx, id);
    });
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** A person the caller may change: in scope (else 404) and not managed by the service (else 403). */
  private async writable(caller: Caller, id: string): Promise<PersonRow> {
    const row = await this.store.findPerson(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('person');
    if (row.managed) throw errors.personManaged();
    return row;
  }

  /** The location a person goes to: inside the caller's scope (any location of any account for operators). */
  private async targetLocation(caller: Caller | null, locationId: number): Promise<TargetLocation> {
    const row = await this.store.findLocationWithAccount(this.db, locationId);
    if (!row || (caller && !row.path.map(Number).includes(caller.locationId))) {
      throw errors.invalidField('location_id', caller ? "location_id is not a location in this API key's scope." : `No location with id ${locationId}.`);
    }
    return { id: row.id, accountId: row.account_id, lockingSystem: row.locking_system };
  }

  private async accountLockingSystem(accountId: number): Promise<string | null> {
    return this.store.findAccountLockingSystem(this.db, accountId);
  }

  private lockingSystemOf(location: TargetLocation): LockingSystem {
    return this.deps.lockingSystems.forAccount({ id: location.accountId, lockingSystem: location.lockingSystem });
  }

  /** Undoes a locking-system create whose local commit did not happen. */
  private async compensate(lockingSystem: LockingSystem, id: string, log: PeopleServiceLog): Promise<void> {
    try {
      await lockingSystem.write('person.delete', id);
    } catch (error) {
      log.error({ err: error, personId: id }, 'locking system compensation failed; reconcile this person by hand');
    }
  }

  /** The stored values after applying `body` to `current` (or to nothing, on create); 422 with every problem. */
  private validated(body: PersonUpdate, locationId: number, current: PersonRow | null): PersonValues {
    const details: ErrorDetail[] = [];
    const pick = <K extends keyof PersonUpdate>(field: K, fallback: string | null) =>
      body[field] === undefined ? fallback : (body[field] as string | null);

    const name = (pick('name', current?.name ?? null) ?? '').trim();
    if (body.name !== undefined && hasControlCharacter(body.name)) {
      details.push({ field: 'name', code: 'invalid', message: 'name must not contain control characters or line breaks.' });
    }
    if (body.name !== undefined && isReservedName(name, this.deps.brandName)) {
      details.push({ field: 'name', code: 'reserved_name', message: 'name is a reserved service name.' });
    }
    let phone = pick('phone', current?.phone ?? null);
    if (body.phone !== undefined && body.phone !== null) {
      phone = normalisePhone(body.phone);
      if (phone === null) {
        details.push({ field: 'phone', code: 'invalid', message: 'phone must be an international number: + and the country code.' });
      }
    }
    if (details.length > 0) throw errors.validation(details);
    const language = pick('language', current?.language ?? null);
    const [primary = '', region] = (language ?? '').split('-');
    return {
      name,
      email: pick('email', current?.email ?? null)?.trim() ?? null,
      phone,
      company_name: pick('company_name', current?.company_name ?? null),
      title: pick('title', current?.title ?? null),
      language: language === null ? null : region ? `${primary.toLowerCase()}-${region.toUpperCase()}` : primary.toLowerCase(),
      location_id: locationId,
    };
  }
}

/** Transaction-scoped locks on the account's phone and e-mail, taken in one order so two never deadlock. */
async function lockIdentity(store: Pick<PeopleStore, 'lockKey'>, tx: Queryable, accountId: number, values: PersonValues): Promise<void> {
  const keys = [values.phone && `phone:${values.phone}`, values.email && `email:${emailKey(values.email)}`]
    .filter((k): k is string => Boolean(k))
    .map((k) => `person:${accountId}:${k}`)
    .sort();
  for (const key of keys) await store.lockKey(tx, key);
}
