// The webhooks module's surface for the rest of the service.
export { purgePersonPayloads } from './retention.ts';
