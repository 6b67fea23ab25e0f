// What a key opens, door by door, now: the key holder's page (README "The key holder's page") shows it, and
// its Open asks `decide` through here, so the page is never more generous than a gateway.
import type { Queryable } from '../../platform/db/index.ts';
import { decide } from './decision.ts';
import { keyGroupIds, lockAccess } from './resolve.ts';
import { loadAccountFacts } from './store.ts';
import type { AccessKey, Decision, TimeWindow } from './types.ts';

export interface HolderKey extends AccessKey {
  accountId: number;
  /** A revoked key decides as unknown (its credential is forgotten). */
  revoked: boolean;
  securityGroups: string[];
  personPath: number[];
}

export interface KeyDoor {
  lockId: number;
  gatewayId: number | null;
  timeZone: string;
  /** null: at any time. */
  windows: TimeWindow[] | null;
  decision: Decision;
}

/** The locks one of the key's groups opens, each with the decision at `at`. */
export async function keyDoors(db: Queryable, key: HolderKey, at: Date): Promise<KeyDoor[]> {
  const facts = await loadAccountFacts(db, key.accountId);
  const groups = keyGroupIds(facts, key.securityGroups, key.personPath);
  const doors: KeyDoor[] = [];
  for (const lock of facts.locks.values()) {
    const access = lockAccess(groups, lock);
    if (!access) continue;
    doors.push({ lockId: lock.id, gatewayId: lock.gatewayId, timeZone: lock.timeZone, windows: access.windows, decision: decide(key.revoked ? null : key, access, lock.timeZone, at) });
  }
  return doors.sort((a, b) => a.lockId - b.lockId);
}

/** The decision for one lock (no_access when the lock is not one of the key's groups' or not the account's). */
export async function decideForKey(db: Queryable, key: HolderKey, lockId: number, at: Date): Promise<Decision> {
  const facts = await loadAccountFacts(db, key.accountId);
  const lock = facts.locks.get(lockId);
  const access = lock ? lockAccess(keyGroupIds(facts, key.securityGroups, key.personPath), lock) : null;
  return decide(key.revoked ? null : key, access, lock?.timeZone ?? 'UTC', at);
}

/**
 * What a key with these codes at its person's location would open, as `decide` resolves its groups (a sibling
 * department's group of the same code is another group): the locks one of them opens at some time (by id), and
 * the groups the codes name there. For the setup link's words, before the key exists.
 */
export async function whatGroupsOpen(db: Queryable, accountId: number, codes: readonly string[], personPath: readonly number[]): Promise<{ lockIds: number[]; groupIds: number[] }> {
  const facts = await loadAccountFacts(db, accountId);
  const groups = keyGroupIds(facts, codes, personPath);
  const lockIds = [...facts.locks.values()].filter((lock) => lockAccess(groups, lock) !== null).map((lock) => lock.id);
  return { lockIds: lockIds.sort((a, b) => a - b), groupIds: [...groups] };
}
