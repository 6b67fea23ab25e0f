// A deleted person's data in the webhook deliveries and in the outbox (spec: a person's deletion removes their
// personal data): the delivery payloads naming them are emptied, and a delivery still pending fails rather
// than send nothing; their domain events keep their type and time and lose their data, so a listen stream
// that has not read one yet never streams it.
import type { Queryable } from '../../platform/db/index.ts';
import { purgePersonPayloads } from './delivery-store.ts';
import { purgePersonEventData } from './fan-out-store.ts';

/** In the person's deletion transaction, before the deletion's own events are emitted (those are still sent). */
export async function forgetPersonInDeliveries(tx: Queryable, personId: string): Promise<void> {
  await purgePersonPayloads(tx, personId);
  await purgePersonEventData(tx, personId);
}
