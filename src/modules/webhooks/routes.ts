import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { ErrorEnvelope, errorResponses } from '../../platform/schemas.ts';
import { Delivery, Subscription, SubscriptionCreate, SubscriptionUpdate, SubscriptionWithSecret } from './schemas.ts';
import type { WebhooksService } from './service.ts';

const manage = { access: { kind: 'public' as const, scopes: ['webhooks:manage' as const] } };
const tags = ['Webhooks'];
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const DeliveryParams = Type.Object({ id: Type.String({ format: 'uuid' }), delivery_id: Type.String({ format: 'uuid' }) });
const withConflict = { ...errorResponses, 409: ErrorEnvelope };

export function webhooksRoutes(app: ApiInstance, webhooks: WebhooksService): void {
  app.get(
    '/v1/webhooks',
    { config: manage, schema: { tags, summary: "List the subscriptions of the key's location", querystring: Type.Object(PageQuery), response: { 200: Page(Subscription), ...errorResponses } } },
    async (request) => webhooks.list(callerOf(request), request.query),
  );

  app.post(
    '/v1/webhooks',
    {
      config: { ...manage, idempotent: true },
      schema: {
        tags,
        summary: 'Create a subscription (the signing secret is shown once)',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String()) }),
        body: SubscriptionCreate,
        response: { 201: SubscriptionWithSecret, ...withConflict },
      },
    },
    async (request, reply) => reply.code(201).send(await webhooks.create(callerOf(request), request.body)),
  );

  app.get(
    '/v1/webhooks/:id',
    { config: manage, schema: { tags, summary: 'Get a subscription', params: IdParams, response: { 200: Subscription, ...errorResponses } } },
    async (request) => webhooks.get(callerOf(request), request.params.id),
  );

  app.patch(
    '/v1/webhooks/:id',
    {
      config: manage,
      schema: { tags, summary: 'Change, pause or resume a subscription', params: IdParams, body: SubscriptionUpdate, response: { 200: Subscription, ...errorResponses } },
    },
    async (request) => webhooks.update(callerOf(request), request.params.id, request.body),
  );

  app.get(
    '/v1/webhooks/:id/deliveries',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delivery records, newest first',
        params: IdParams,
        querystring: Type.Object({
          ...PageQuery,
          status: Type.Optional(Type.String({ maxLength: 32 })),
          event_type: Type.Optional(Type.String({ maxLength: 64 })),
          since: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601; UTC unless an offset is given' })),
        }),
        response: { 200: Page(Delivery), ...errorResponses },
      },
    },
    async (request) => webhooks.deliveries(callerOf(request), request.params.id, request.query),
  );

  app.post(
    '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    { config: manage, schema: { tags, summary: 'Deliver again, as a new delivery', params: DeliveryParams, response: { 202: Delivery, ...withConflict } } },
    async (request, reply) => reply.code(202).send(await webhooks.redeliver(callerOf(request), request.params.id, request.params.delivery_id)),
  );

  app.post(
    '/v1/webhooks/:id/ping',
    { config: manage, schema: { tags, summary: 'Send one ping now', params: IdParams, response: { 200: Delivery, ...errorResponses } } },
    async (request) => webhooks.ping(callerOf(request), request.params.id),
  );
}
