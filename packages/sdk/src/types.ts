// The resource types of the public API (docs/spec/public-api-v1.md, "Resources and their fields"), all in
// this one file: the named schemas of docs/openapi.json (`components.schemas`, generated into
// src/openapi.ts), and the query parameters of the list operations.
import type { components, paths } from './openapi.js';

type Schemas = components['schemas'];

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = paths[P][M];

/** The query parameters of an operation. */
type QueryOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** Page envelope of every list: `next_cursor` is opaque and null on the last page. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** `limit` (1 to 200, default 50) and `cursor` of every list. */
export type PageQuery = QueryOf<'/v1/webhooks', 'get'>;

// Locks and security groups
export type LockPage = Schemas['LockPage'];
export type Lock = Schemas['Lock'];
export type LockQuery = QueryOf<'/v1/locks', 'get'>;
export type LockCommand = Schemas['LockCommand'];
export type LockCommandStatus = LockCommand['status'];
export type SecurityGroupPage = Schemas['SecurityGroupPage'];
export type SecurityGroup = Schemas['SecurityGroup'];
export type SecurityGroupQuery = QueryOf<'/v1/security_groups', 'get'>;

// People
export type PersonPage = Schemas['PersonPage'];
export type Person = Schemas['Person'];
/** `GET /people/{id}`: the Person plus the keys they hold inside the caller's scope. */
export type PersonWithKeys = Schemas['PersonWithKeys'];
export type PersonQuery = QueryOf<'/v1/people', 'get'>;
export type PersonCreate = Schemas['PersonCreate'];
export type PersonUpdate = Schemas['PersonUpdate'];

// Keys and invitations
export type KeyPage = Schemas['KeyPage'];
export type Key = Schemas['Key'];
export type KeyQuery = QueryOf<'/v1/keys', 'get'>;
export type KeyCreate = Schemas['KeyCreate'];
export type KeyUpdate = Schemas['KeyUpdate'];
/** `POST /keys` answers 202 with an invitation, not a key. */
export type InvitationCreated = Schemas['InvitationCreated'];
export type InvitationPage = Schemas['InvitationPage'];
export type Invitation = Schemas['Invitation'];
export type InvitationQuery = QueryOf<'/v1/invitations', 'get'>;
export type InvitationResend = Schemas['InvitationResend'];

// The access log
export type EventPage = Schemas['EventPage'];
/** An access-log entry of `GET /events`, also the `data` of door webhooks. */
export type Event = Schemas['Event'];
export type EventQuery = QueryOf<'/v1/events', 'get'>;

// Webhook subscriptions and deliveries
export type WebhookSubscriptionPage = Schemas['WebhookSubscriptionPage'];
export type WebhookSubscription = Schemas['WebhookSubscription'];
/** The create answer: the subscription with its signing `secret`, shown only here. */
export type WebhookSubscriptionCreated = Schemas['WebhookSubscriptionCreated'];
export type WebhookSubscriptionCreate = Schemas['WebhookSubscriptionCreate'];
export type WebhookSubscriptionUpdate = Schemas['WebhookSubscriptionUpdate'];
export type WebhookDeliveryPage = Schemas['WebhookDeliveryPage'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryQuery = QueryOf<'/v1/webhooks/{id}/deliveries', 'get'>;

// Errors (docs/spec/public-api-v1.md, Errors)
/** The error envelope of every non-2xx answer. */
export type ErrorBody = Schemas['Error'];
/** The closed catalogue of `error.code`. */
export type ErrorCode = ErrorBody['error']['code'];
export type ErrorDetail = NonNullable<ErrorBody['error']['details']>[number];
/** The closed catalogue of `details[].code`. */
export type DetailCode = ErrorDetail['code'];
