// A deleted person's data in the webhook deliveries (spec: a person's deletion removes their personal data):
// the payloads naming them are emptied, and a delivery still pending fails rather than send nothing.
import type { Queryable } from '../../platform/db/index.ts';
import { purgePersonPayloads } from './delivery-store.ts';

/** In the person's deletion transaction. */
export function forgetPersonInDeliveries(tx: Queryable, personId: string): Promise<void> {
  return purgePersonPayloads(tx, personId);
}
