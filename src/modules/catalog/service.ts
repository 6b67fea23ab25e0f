// The rules of the catalog: locks and security groups inside the caller's location scope.
import type { Caller } from '../../platform/auth.ts';
import { CATALOG_CHANNEL } from '../../platform/channels.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { InvalidatedCache } from '../../platform/invalidated-cache.ts';
import { everyAccount, type PageCache, type PageCaches } from '../../platform/page-cache.ts';
import { pageRequest, toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import { LockListQuery, type Lock, type OperatorLock, type SecurityGroup } from './schemas.ts';
import { findLock, groupCodesAt, listLocks, listSecurityGroups, locksPageJson, operatorLock, publicLock, type ScopedLock } from './store.ts';

const CACHE_LIMIT = 10_000;
/** The net for a missed NOTIFY (see InvalidatedCache); NOTIFY is the normal path. */
const CACHE_TTL_MS = 30_000;
/** Lock pages kept per instance (GET /v1/locks), by bytes of JSON. */
const PAGE_CACHE_BYTES = 8 * 2 ** 20;

export class CatalogService {
  // Single-lock reads are the hottest path of the API; each instance caches them and drops the cache
  // on every catalog NOTIFY, so a change made through any instance is seen at once.
  private readonly lockCache = new InvalidatedCache<number, ScopedLock>({ ttlMs: CACHE_TTL_MS, limit: CACHE_LIMIT });
  // Lock pages likewise; a catalog NOTIFY names no account, so it drops every page.
  private readonly pageCache: PageCache<typeof LockListQuery>;

  constructor(
    private readonly db: Database,
    pages: PageCaches,
  ) {
    this.pageCache = pages.create({ query: LockListQuery, maxBytes: PAGE_CACHE_BYTES, ttlMs: CACHE_TTL_MS });
  }

  async start(): Promise<void> {
    await this.lockCache.follow(this.db, CATALOG_CHANNEL);
    await this.pageCache.follow(this.db, [{ channel: CATALOG_CHANNEL, parse: everyAccount }]);
  }

  /** A lock the caller can see, or 404 (never 403) when it is elsewhere in the account or nowhere. */
  async getLock(caller: Caller, id: number): Promise<Lock> {
    const lock = await this.lockCache.getOrLoad(id, () => findLock(this.db, id));
    if (!lock) throw errors.notFound('lock');
    if (!lock.locationPath.includes(caller.locationId)) throw errors.notFound('lock');
    return publicLock(lock);
  }

  /** GET /v1/locks as the JSON sent, from the page cache when it has it, else as PostgreSQL writes it. */
  async listLocksJson(caller: Caller, query: LockListQuery): Promise<Buffer> {
    return this.pageCache.page(caller, query, async () => {
      const page = pageRequest(query, 'locks');
      return locksPageJson(this.db, this.underLocations(caller, query), page.afterId, page.limit);
    });
  }

  private underLocations(caller: Caller, query: LockListQuery): number[] {
    return query.location_id === undefined ? [caller.locationId] : [caller.locationId, query.location_id];
  }

  async listSecurityGroups(caller: Caller, page: PageRequest, isDefault: boolean | undefined): Promise<PageOf<SecurityGroup>> {
    const rows = await listSecurityGroups(this.db, caller.locationId, isDefault, page.afterId, page.limit + 1);
    return toPage(rows, page.limit, (group) => group.id, 'security_groups');
  }
}

/**
 * One `unknown_security_group` detail, naming the index, for each code that is not defined at
 * `locationId` or a location above it (used by locks and keys alike).
 */
export async function unknownSecurityGroups(db: Queryable, locationId: number, codes: string[]): Promise<ErrorDetail[]> {
  if (codes.length === 0) return [];
  const known = await groupCodesAt(db, locationId);
  return codes.flatMap((code, index) =>
    known.has(code)
      ? []
      : [{ field: `security_groups[${index}]`, code: 'unknown_security_group', message: `No security group ${code} at this location.` }],
  );
}

/**
 * A lock as the operator API shows it (the public fields and its gateway), whatever its location, or null: for
 * callers that have checked scope themselves (the operator sees every account). Reads through `db`, so a
 * transaction sees its own writes.
 */
export async function lockById(db: Queryable, id: number): Promise<OperatorLock | null> {
  const lock = await findLock(db, id);
  return lock ? operatorLock(lock) : null;
}

/**
 * Locks under every location of `underLocations` (none: every lock), as the operator API shows them, for callers
 * that checked scope themselves (the operator's list of locks).
 */
export async function locksUnder(db: Queryable, underLocations: number[], afterId: number | null, limit: number): Promise<OperatorLock[]> {
  return (await listLocks(db, underLocations, afterId, limit)).map(operatorLock);
}
