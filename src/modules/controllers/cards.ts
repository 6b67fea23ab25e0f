// What a key is on one UHPPOTE board: its card number, the dates it is valid on and, per door, no access,
// access at any time, or a chain of time profiles (profiles.ts). Pure: the sync, the write-first check and the
// reconciliation all plan with it, so they never disagree about what a board should hold.
import { DateTime } from 'luxon';
import type { KeyGrant } from '../access/index.ts';
import { profileChain, windowsProblem, type ProfileShape } from './profiles.ts';
import { cardNumberOf } from './uhppote/card-number.ts';

/** The last date a board takes (its dates are BCD years): a key that never expires is valid to it. */
export const NO_END_DATE = '2099-12-31';

/** Per door: 0 never, 1 at any time, or the profiles that open it. */
export type DoorPlan = 0 | 1 | ProfileShape[];

export interface CardPlan {
  keyId: number;
  credential: string;
  card: number;
  from: string;
  to: string;
  /** Index 0 is door 1. */
  doors: [DoorPlan, DoorPlan, DoorPlan, DoorPlan];
}

export type PlanResult = { plan: CardPlan } | { none: true } | { problem: string };

/**
 * The card a key should be on this board as of `now`, `none` when it should not be there (it opens none of the
 * board's doors, or its validity has not begun: the card goes on at `starts_at`), or a problem that keeps it off
 * (a credential the board cannot hold, a door read in another time zone than the board's clock).
 */
export function planCard(grant: KeyGrant, doorLocks: ReadonlyArray<{ door: number; lock_id: number }>, boardZone: string, now: Date): PlanResult {
  const doors: [DoorPlan, DoorPlan, DoorPlan, DoorPlan] = [0, 0, 0, 0];
  let opensAny = false;
  for (const { door, lock_id } of doorLocks) {
    const access = grant.locks.get(lock_id);
    if (!access) continue;
    if (access.timeZone !== boardZone) {
      return { problem: `Door ${door} reads its windows in ${access.timeZone}, but the controller's clock runs in ${boardZone}.` };
    }
    if (access.windows === null) doors[door - 1] = 1;
    else {
      const problem = windowsProblem(access.windows);
      if (problem) return { problem };
      const chain = profileChain(access.windows);
      if (chain.length === 0) continue;
      doors[door - 1] = chain;
    }
    opensAny = true;
  }
  if (!opensAny) return { none: true };
  if (grant.startsAt.getTime() > now.getTime()) return { none: true };
  // A phone key opens through the service (the holder's page, remote unlock), never as a card on a board.
  if (grant.credential.startsWith('phone:')) return { none: true };
  const card = cardNumberOf(grant.credential);
  if (card === null) return { problem: `Key ${grant.keyId}'s credential is not a card number a UHPPOTE controller can hold.` };
  // The board knows dates only: valid from the day the key starts, through the day it expires (its last
  // instant); the service takes the card off at expires_at itself (README "Real controllers", limits).
  const from = DateTime.fromJSDate(grant.startsAt, { zone: boardZone }).toISODate() as string;
  const to = grant.expiresAt ? (DateTime.fromJSDate(new Date(grant.expiresAt.getTime() - 1), { zone: boardZone }).toISODate() as string) : NO_END_DATE;
  return { plan: { keyId: grant.keyId, credential: grant.credential, card, from, to, doors } };
}
