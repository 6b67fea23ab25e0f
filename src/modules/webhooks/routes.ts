import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import { EVENT_TYPES } from '../../platform/event-types.ts';
import { errors } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { PageQuery } from '../../platform/pagination.ts';
import { Delivery, DeliveryPage, Subscription, SubscriptionCreate, SubscriptionPage, SubscriptionUpdate, SubscriptionWithSecret } from './schemas.ts';
import type { WebhooksService } from './service.ts';
import { HEARTBEAT_MS, MAX_LISTENERS_PER_KEY, WebhookListeners } from './listen.ts';

const manage = { access: { kind: 'public' as const, scopes: ['webhooks:manage' as const] } };
const tags = ['Webhooks'];
const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const DeliveryParams = Type.Object({ id: Type.String({ format: 'uuid' }), delivery_id: Type.String({ format: 'uuid' }) });
const urlRules = 'the body failed validation: among others `invalid` on `url` (not https, not a public host) and `limit_reached` on `url` (5 active subscriptions)';

const LISTEN_EVENTS = new Set<string>(['*', ...EVENT_TYPES]);

/** `?events=`: event names comma-separated, or `*` (the default); 400 on an unknown name. */
function listenEvents(query: string | undefined): string[] {
  const events = [...new Set((query ?? '*').split(',').map((name) => name.trim()).filter((name) => name !== ''))];
  if (events.length === 0) return ['*'];
  const unknown = events.filter((name) => !LISTEN_EVENTS.has(name));
  if (unknown.length > 0) throw errors.invalidRequest(`events: unknown event name ${unknown.map((name) => JSON.stringify(name)).join(', ')}; names of the spec's Events, or *.`);
  if (events.includes('*') && events.length > 1) throw errors.invalidRequest('events is either the single wildcard * or a list of event names.');
  return events;
}

export function webhooksRoutes(app: ApiInstance, webhooks: WebhooksService): void {
  const listeners = new WebhookListeners(webhooks.db, webhooks.clock, webhooks.secrets, app.log);
  // Open streams would hold app.close() until their clients leave.
  app.addHook('preClose', async () => listeners.close());

  app.get(
    '/v1/webhooks/listen',
    {
      config: manage,
      schema: {
        operationId: 'listenWebhooks',
        tags,
        summary: 'Stream events as signed deliveries (for forwarding to a local receiver)',
        description: [
          "Server-sent events: the events of the API key's location and of its departments, as they are emitted, each as the delivery a subscription would get. No subscription or delivery record is made, and nothing is retried: an event emitted while no stream is open is not sent later (read it from `GET /events`).",
          '',
          '- `event: ready` first, its data `{ secret, events, location_id, heartbeat_seconds }`: `secret` signs the deliveries of this stream (the same for every stream of this API key).',
          '- `event: delivery` for each event, its data `{ headers, body }`: `body` is the raw JSON body (`{ id, type, created_at, data }`), `headers` the delivery headers with `X-Service-Signature` over `body` with `secret`, so a receiver verifies it as a real delivery.',
          `- A comment line every ${HEARTBEAT_MS / 1000} seconds.`,
          '- `event: end` before the service ends the stream, its data `{ reason }`: `key_revoked` (revoked, expired or without `webhooks:manage`), `too_slow` or `shutdown`.',
          '',
          `At most ${MAX_LISTENERS_PER_KEY} streams per API key at once (429 beyond). \`latchkey webhooks listen --forward-to <url>\` forwards the deliveries to a local URL.`,
        ].join('\n'),
        querystring: Type.Object({
          events: Type.Optional(Type.String({ maxLength: 1024, description: 'event names, comma-separated, or `*` (default): the events to stream; an unknown name: 400' })),
        }),
        response: {
          200: {
            description: 'The stream (text/event-stream) until the client leaves, the key is revoked or the service stops.',
            content: { 'text/event-stream': { schema: Type.String({ description: 'server-sent events: ready, delivery, end; comment lines as heartbeats' }) } },
          },
          ...failures({ 429: { rate_limited: `${MAX_LISTENERS_PER_KEY} streams of this API key are open already (or the instance's limit is reached); retry after Retry-After` } }),
        },
      },
    },
    async (request, reply) => {
      const caller = callerOf(request);
      const events = listenEvents(request.query.events);
      if (!listeners.canOpen(caller)) throw errors.rateLimited(10);
      await listeners.prepare();
      const after = await listeners.newestId();
      if (!listeners.canOpen(caller)) throw errors.rateLimited(10); // another opened meanwhile
      listeners.open(caller, events, after, reply);
    },
  );

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
