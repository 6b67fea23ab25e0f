// What other areas read of a person: one live person, in a caller's scope or in any (keys are issued to them).
import type { Queryable } from '../../platform/db/index.ts';
import { findPerson, type PersonRow } from './store.ts';

export type { PersonRow };

/** The live (not deleted) person with this id, under `scopeLocationId` (null: any location), or null. */
export function livePerson(db: Queryable, scopeLocationId: number | null, id: string): Promise<PersonRow | null> {
  return findPerson(db, scopeLocationId, id);
}
