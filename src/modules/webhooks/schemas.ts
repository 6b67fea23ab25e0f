import { Type, type Static } from '@sinclair/typebox';
import { EVENT_TYPES } from '../../platform/domain-events.ts';

const Timestamp = Type.String({ format: 'date-time' });
const EventName = Type.Union([Type.Literal('*'), ...EVENT_TYPES.map((t) => Type.Literal(t))]);

export const Subscription = Type.Object({
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.String(),
  status: Type.Union([Type.Literal('active'), Type.Literal('paused')]),
  failing_since: Type.Union([Timestamp, Type.Null()]),
  last_delivery_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
});
export type Subscription = Static<typeof Subscription>;

export const SubscriptionWithSecret = Type.Composite([Subscription, Type.Object({ secret: Type.String({ description: 'shown only here' }) })]);

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https, a public host' });
const Events = Type.Array(EventName, { minItems: 1, maxItems: 20, uniqueItems: true, description: 'event names, or the single wildcard *' });

export const SubscriptionCreate = Type.Object(
  { url: Url, events: Events, description: Type.Optional(Type.String({ maxLength: 500 })) },
  { additionalProperties: false },
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;

export const SubscriptionUpdate = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Type.String({ maxLength: 500 })),
    status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('paused')])),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>;

export const Delivery = Type.Object({
  id: Type.String({ format: 'uuid' }),
  subscription_id: Type.String({ format: 'uuid' }),
  event_type: Type.String(),
  event_id: Type.String(),
  status: Type.String({ description: 'pending, delivered, failed or exhausted' }),
  attempt: Type.Integer(),
  response_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Union([Timestamp, Type.Null()]),
  delivered_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
  payload: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description: 'null once purged' }),
});
export type Delivery = Static<typeof Delivery>;
