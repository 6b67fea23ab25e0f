// The webhooks module's surface for the rest of the service.
export { purgePersonPayloads } from './delivery-store.ts';
