// The webhooks module's surface for the rest of the service.
export { forgetPersonInDeliveries } from './person-data.ts';
export { startWebhooks, type Webhooks, type WebhooksModuleDeps } from './start.ts';
