// The webhooks module's surface for the rest of the service: emitting domain events (the outbox and its
// deliveries are this module's tables), and a deleted person's data in deliveries and the outbox.
export { emitDomainEvent, emitDomainEvents, fanOutStatement, type DomainEvent, type FanOutParts } from './fan-out.ts';
export { forgetPersonInDeliveries } from './person-data.ts';
export { startWebhooks, type Webhooks, type WebhooksModuleDeps } from './start.ts';
