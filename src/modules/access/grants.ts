// What each key opens on a set of locks, with its credential: what an external locking system that keeps its
// own card list (a UHPPOTE controller) must hold. The same resolution as the gateways' lists (resolve.ts) and
// the same validity rules as `decide`, so a controller is never told more than a gateway would be.
import type { Queryable } from '../../platform/db/index.ts';
import { keyGroupIds, lockAccess } from './resolve.ts';
import { keysForLists, loadAccountFacts, type ListKeyRow } from './store.ts';
import { GRANTING_KEY_STATES, type LockAccess } from './types.ts';

/** A key's access to the locks asked about, while it may open any (state and validity are its own). */
export interface KeyGrant {
  keyId: number;
  /** The normalised credential, opened from its sealed form. */
  credential: string;
  startsAt: Date;
  expiresAt: Date | null;
  /** Only locks the key opens at some time; absent: none of its groups is one of the lock's. */
  locks: Map<number, LockAccess & { timeZone: string }>;
}

/** A key change not yet saved (written to the locking system first): what the key will be. */
export interface KeyProposal {
  securityGroups: string[];
  startsAt: Date;
  expiresAt: Date | null;
}

const GRANTING: readonly string[] = GRANTING_KEY_STATES;

/**
 * The grants of an account's keys (`keyIds`, or every key: null) on `lockIds`, as of `now`. A key that is
 * revoked, expired, in a state that never opens or without a credential has no grant; `proposals` replace
 * what the store holds of a key (its proposed change is judged, not its saved one).
 */
export async function readKeyGrants(
  db: Queryable,
  open: (sealed: string) => string,
  q: { accountId: number; keyIds: number[] | null; lockIds: number[]; now: Date; proposals?: Map<number, KeyProposal> },
): Promise<KeyGrant[]> {
  if (q.lockIds.length === 0) return [];
  const facts = await loadAccountFacts(db, q.accountId);
  const rows: ListKeyRow[] = await keysForLists(db, q.accountId, q.keyIds, q.now);
  const grants: KeyGrant[] = [];
  for (const row of rows) {
    const proposal = q.proposals?.get(Number(row.id));
    const groups = proposal?.securityGroups ?? row.security_groups;
    const startsAt = proposal?.startsAt ?? row.starts_at;
    const expiresAt = proposal ? proposal.expiresAt : row.expires_at;
    if (!proposal && !GRANTING.includes(row.state)) continue;
    if (expiresAt && expiresAt.getTime() <= q.now.getTime()) continue;
    const keyGroups = keyGroupIds(facts, groups, row.person_path.map(Number));
    const locks = new Map<number, LockAccess & { timeZone: string }>();
    for (const lockId of q.lockIds) {
      const lock = facts.locks.get(lockId);
      const access = lock ? lockAccess(keyGroups, lock) : null;
      if (lock && access) locks.set(lockId, { ...access, timeZone: lock.timeZone });
    }
    grants.push({ keyId: Number(row.id), credential: open(row.credential_box), startsAt, expiresAt, locks });
  }
  return grants;
}
