// A deleted person's data in the webhook deliveries and in the outbox (spec: a person's deletion removes their
// personal data): the delivery payloads naming them are emptied, and a delivery still pending fails rather
// than send nothing; their domain events keep their type and time and lose their data, so a listen stream
// that has not read one yet never streams it.
//
// A transaction that wrote an event with the person's data beside the deletion (a door opened by their card, a
// change to their key) and committed after the deletion's purge was not seen by it. Locking the person's row on
// every such write would put a lock on the door events' path; instead a sweep purges again, every minute, what
// names a person deleted in the last few minutes: such a write commits within seconds.
import type { Clock } from '../../platform/clock.ts';
import type { Queryable } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import { peopleDeletedSince } from '../people/index.ts';
import { purgePersonPayloads } from './delivery-store.ts';
import { purgePersonEventData } from './fan-out-store.ts';

/** What the deletion itself emits after its purge, with the person's data on purpose: never purged by the sweep. */
const THE_DELETIONS_OWN_EVENTS = ['person.deleted', 'key.revoked'] as const;
/** People deleted within this long are swept again. */
const SWEPT_FOR_MS = 5 * 60_000;

/** In the person's deletion transaction, before the deletion's own events are emitted (those are still sent). */
export async function forgetPersonInDeliveries(tx: Queryable, personId: string): Promise<void> {
  await purgePersonPayloads(tx, [personId]);
  await purgePersonEventData(tx, [personId]);
}

/** Purges again the data of the people deleted in the last SWEPT_FOR_MS; returns how many rows it emptied. */
export async function sweepDeletedPeople(db: Queryable, now: Date): Promise<number> {
  const ids = await peopleDeletedSince(db, new Date(now.getTime() - SWEPT_FOR_MS));
  if (ids.length === 0) return 0;
  return (await purgePersonPayloads(db, ids, THE_DELETIONS_OWN_EVENTS)) + (await purgePersonEventData(db, ids, THE_DELETIONS_OWN_EVENTS));
}

export function deletedPeopleSweepJob(db: Queryable, clock: Clock): Job {
  return { name: 'deleted-people-sweep', everySeconds: 60, run: () => sweepDeletedPeople(db, clock.now()) };
}
