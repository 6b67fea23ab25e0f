// From an account's catalog to what the decision needs: which security group a code names at a location,
// the time zone a door reads its windows in, and what a key's groups give it at one lock. Pure: the online
// answer (cached facts) and the list builder (facts read in its transaction) share it.
import { mergeWindows } from './schedule.ts';
import type { LockAccess, TimeWindow } from './types.ts';

export interface GroupFacts {
  id: number;
  code: string;
  locationId: number;
  windows: TimeWindow[] | null;
}

export interface LockFacts {
  id: number;
  gatewayId: number | null;
  /** The door's time zone: its location's, or the nearest one above it, or UTC. */
  timeZone: string;
  /** The groups the lock's codes name, each resolved at the lock's location. */
  groups: GroupFacts[];
}

export interface AccountFacts {
  accountId: number;
  /** The account's security groups by code (one code may be defined at several locations). */
  groupsByCode: Map<string, GroupFacts[]>;
  locks: Map<number, LockFacts>;
}

/**
 * The group a code names at a location: the one defined there or at the nearest location above it (a
 * department may define its own `staff`). `path` runs from the root down to the location itself.
 */
export function groupAt(groupsByCode: Map<string, GroupFacts[]>, path: readonly number[], code: string): GroupFacts | undefined {
  const candidates = groupsByCode.get(code);
  if (!candidates) return undefined;
  for (let i = path.length - 1; i >= 0; i--) {
    const found = candidates.find((group) => group.locationId === path[i]);
    if (found) return found;
  }
  return undefined;
}

/** The time zone at a location: its own, or the nearest one above it; UTC when none is set. */
export function timeZoneAt(zones: Map<number, string | null>, path: readonly number[]): string {
  for (let i = path.length - 1; i >= 0; i--) {
    const zone = zones.get(path[i] as number);
    if (zone) return zone;
  }
  return 'UTC';
}

/** The ids of the groups a key's codes name, resolved at its person's location (where they were checked). */
export function keyGroupIds(facts: AccountFacts, codes: readonly string[], personPath: readonly number[]): Set<number> {
  const ids = new Set<number>();
  for (const code of codes) {
    const group = groupAt(facts.groupsByCode, personPath, code);
    if (group) ids.add(group.id);
  }
  return ids;
}

/**
 * What a key's groups give it at a lock: null when none of them is one of the lock's groups (the same code
 * defined separately in a sibling department is another group and gives nothing); otherwise their windows.
 */
export function lockAccess(keyGroups: ReadonlySet<number>, lock: LockFacts): LockAccess | null {
  const shared = lock.groups.filter((group) => keyGroups.has(group.id));
  if (shared.length === 0) return null;
  return { windows: mergeWindows(shared.map((group) => group.windows)) };
}

/**
 * Whether a key's groups open any lock of a gateway (its state and dates aside): what that gateway's own list
 * could hold of the key, and so what an online answer to it may name (gateway-sync.ts, answerFor).
 */
export function opensOnGateway(facts: AccountFacts, keyGroups: ReadonlySet<number>, gatewayId: number): boolean {
  for (const lock of facts.locks.values()) {
    if (lock.gatewayId === gatewayId && lockAccess(keyGroups, lock) !== null) return true;
  }
  return false;
}
