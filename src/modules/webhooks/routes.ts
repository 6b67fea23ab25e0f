import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { PageQuery } from '../../platform/pagination.ts';
import { Delivery, DeliveryPage, Subscription, SubscriptionCreate, SubscriptionPage, SubscriptionUpdate, SubscriptionWithSecret } from './schemas.ts';
import type { WebhooksService } from './service.ts';

const manage = { access: { kind: 'public' as const, scopes: ['webhooks:manage' as const] } };
const tags = ['Webhooks'];
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const DeliveryParams = Type.Object({ id: Type.String({ format: 'uuid' }), delivery_id: Type.String({ format: 'uuid' }) });
const urlRules = 'the body failed validation: among others `invalid` on `url` (not https, not a public host) and `limit_reached` on `url` (5 active subscriptions)';

export function webhooksRoutes(app: ApiInstance, webhooks: WebhooksService): void {
  app.get(
    '/v1/webhooks',
    {
      config: manage,
      schema: {
        operationId: 'listWebhooks',
        tags,
        summary: "List the subscriptions of the key's location",
        description: "The subscriptions of the API key's own location (not its departments'), without secrets.",
        querystring: Type.Object(PageQuery),
        response: { 200: ref(SubscriptionPage) },
      },
    },
    async (request) => webhooks.list(callerOf(request), request.query),
  );

  app.post(
    '/v1/webhooks',
    {
      config: { ...manage, idempotent: true },
      schema: {
        operationId: 'createWebhook',
        tags,
        summary: 'Create a subscription (the signing secret is shown once)',
        description: 'The URL must be https and resolve to public addresses only; a location holds at most 5 active subscriptions.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: '1 to 64 of A-Z a-z 0-9 _ -; a retry with the same key and body gets the stored answer' })) }),
        body: ref(SubscriptionCreate),
        response: {
          201: ref(SubscriptionWithSecret),
          ...failures({ 409: ['idempotency_conflict', 'idempotency_in_progress'], 422: { validation_failed: urlRules } }),
        },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(callerOf(request), request.body)),
  );

  app.get(
    '/v1/webhooks/:id',
    {
      config: manage,
      schema: {
        operationId: 'getWebhook',
        tags,
        summary: 'Get a subscription',
        description: "A subscription of the API key's location, without its secret.",
        params: IdParams,
        response: { 200: ref(Subscription), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => webhooks.get(callerOf(request), request.params.id),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      config: manage,
      schema: {
        operationId: 'updateWebhook',
        tags,
        summary: 'Change, pause or resume a subscription',
        description: 'Only the fields sent change; resuming counts against the 5 active subscriptions.',
        params: IdParams,
        body: ref(SubscriptionUpdate),
        response: { 200: ref(Subscription), ...failures({ 404: ['not_found'], 422: { validation_failed: urlRules } }) },
      },
    },
    async (request) => webhooks.update(callerOf(request), request.params.id, request.body),
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config: manage,
      schema: {
        operationId: 'listWebhookDeliveries',
        tags,
        summary: 'Delivery records, newest first',
        description: 'The deliveries of one subscription; payloads are kept 30 days.',
        params: IdParams,
        querystring: Type.Object({
          ...PageQuery,
          status: Type.Optional(Type.String({ maxLength: 32, description: 'pending, delivered, failed or exhausted' })),
          event_type: Type.Optional(Type.String({ maxLength: 64, description: 'one event name' })),
          since: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601; UTC unless an offset is given; not a date-time: 400' })),
        }),
        response: { 200: ref(DeliveryPage), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => webhooks.deliveries(callerOf(request), request.params.id, request.query),
  );

  app.post(
    '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    {
      config: manage,
      schema: {
        operationId: 'redeliverWebhookDelivery',
        tags,
        summary: 'Deliver again, as a new delivery',
        description:
          'A fresh delivery of the same event type and payload (its `event_id` is the original id), queued with the full retry ladder; any status, pings too. 30 a minute per API key.',
        params: DeliveryParams,
        response: {
          202: ref(Delivery, { description: 'The new delivery, queued.' }),
          ...failures({ 404: { not_found: 'no such subscription or delivery, or its payload was purged' }, 409: ['subscription_paused'] }),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await webhooks.redeliver(callerOf(request), request.params.id, request.params.delivery_id)),
  );

  app.post(
    '/v1/webhooks/:id/ping',
    {
      config: manage,
      schema: {
        operationId: 'pingWebhook',
        tags,
        summary: 'Send one ping now',
        description: 'One attempt, never retried, whatever the receiver answers; a paused subscription can be pinged. 10 a minute per API key.',
        params: IdParams,
        response: { 200: ref(Delivery, { description: 'The delivery record of the attempt.' }), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => webhooks.ping(callerOf(request), request.params.id),
  );
}
