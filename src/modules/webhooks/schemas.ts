import { Type, type Static } from '@sinclair/typebox';
import { EVENT_TYPES } from '../../platform/event-types.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page } from '../../platform/pagination.ts';

const Timestamp = Type.String({ format: 'date-time' });
const EventName = Type.Union([Type.Literal('*'), ...EVENT_TYPES.map((t) => Type.Literal(t))]);

const subscriptionFields = {
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(Type.String(), { description: 'event names, or the single wildcard `*`' }),
  description: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
  failing_since: Type.Union([Timestamp, Type.Null()], { description: 'start of the current failure streak' }),
  last_delivery_at: Type.Union([Timestamp, Type.Null()], { description: 'the last delivery the endpoint accepted (a 2xx), null before the first' }),
  created_at: Timestamp,
};

export const Subscription = named('WebhookSubscription', Type.Object(subscriptionFields, { description: 'A webhook subscription (never with its secret).' }));
export type Subscription = Static<typeof Subscription>;

export const SubscriptionWithSecret = named(
  'WebhookSubscriptionCreated',
  Type.Object(
    { ...subscriptionFields, secret: Type.String({ description: 'the signing secret, shown only here' }) },
    { description: 'A new subscription with its signing secret, shown only in this answer.' },
  ),
);

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https, a public host' });
const Events = Type.Array(EventName, { minItems: 1, maxItems: 20, uniqueItems: true, description: 'event names, or the single wildcard *' });

export const SubscriptionCreate = named(
  'WebhookSubscriptionCreate',
  Type.Object(
    { url: Url, events: Events, description: Type.Optional(Type.String({ maxLength: 500 })) },
    { additionalProperties: false, description: 'A new subscription; a `secret` field is refused as unknown.' },
  ),
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;

export const SubscriptionUpdate = named(
  'WebhookSubscriptionUpdate',
  Type.Object(
    {
      url: Type.Optional(Url),
      events: Type.Optional(Events),
      description: Type.Optional(Type.String({ maxLength: 500 })),
      status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')], { description: 'pause or resume' })),
    },
    { additionalProperties: false, minProperties: 1, description: 'At least one field; changing `url` keeps the secret.' },
  ),
);
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>;

export const Delivery = named(
  'WebhookDelivery',
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'the delivery id, stable across retries' }),
      subscription_id: Type.String({ format: 'uuid' }),
      event_type: Type.String(),
      event_id: Type.String({ description: 'for a redelivery, the id of the original delivery' }),
      status: Type.String({ description: 'pending, delivered, failed or exhausted' }),
      attempt: Type.Integer({ description: 'attempts made, counted from 1' }),
      response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'the HTTP status the endpoint answered' }),
      last_error: Type.Union([Type.String(), Type.Null()]),
      next_attempt_at: Type.Union([Timestamp, Type.Null()]),
      delivered_at: Type.Union([Timestamp, Type.Null()]),
      created_at: Timestamp,
      payload: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'the delivered `data`; null once purged' }),
    },
    { description: 'One webhook delivery and its attempts.' },
  ),
);
export type Delivery = Static<typeof Delivery>;

export const SubscriptionPage = named('WebhookSubscriptionPage', Page(ref(Subscription), 'A page of webhook subscriptions.'));
export const DeliveryPage = named('WebhookDeliveryPage', Page(ref(Delivery), 'A page of delivery records, newest first.'));
