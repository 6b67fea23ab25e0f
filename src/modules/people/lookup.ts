// What other areas read of people: one live person, in a caller's scope or in any (keys are issued to them), and
// the people deleted lately (the webhooks' sweep of their data).
import type { Queryable } from '../../platform/db/index.ts';
import { findPerson, peopleDeletedSince, type PersonRow } from './store.ts';

export type { PersonRow };
export { peopleDeletedSince };

/** The live (not deleted) person with this id, under `scopeLocationId` (null: any location), or null. */
export function livePerson(db: Queryable, scopeLocationId: number | null, id: string): Promise<PersonRow | null> {
  return findPerson(db, scopeLocationId, id);
}
