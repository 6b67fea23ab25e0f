// The resource types of the public API (docs/spec/public-api-v1.md, "Resources and their fields"), all in
// this one file. They are derived from the responses and bodies of `paths` in the generated src/openapi.ts
// because docs/openapi.json has no named schemas yet; once it has them, each alias below becomes
// `components['schemas']['Person']` and so on, and nothing else in the SDK changes.
import type { components, paths } from './openapi.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = paths[P][M];
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON body of one response status of an operation. */
type ResponseBody<P extends keyof paths, M extends Method, S extends number> =
  Operation<P, M> extends { responses: infer R } ? (S extends keyof R ? JsonOf<R[S]> : never) : never;

/** The JSON request body of an operation, without the `null` some optional bodies allow. */
type RequestBody<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { requestBody?: infer B } ? NonNullable<JsonOf<NonNullable<B>>> : never;

/** The query parameters of an operation. */
type QueryOf<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

type ItemOf<Page> = Page extends { data: Array<infer Item> } ? Item : never;

/** Page envelope of every list: `next_cursor` is opaque and null on the last page. */
export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/** `limit` (1 to 200, default 50) and `cursor` of every list. */
export type PageQuery = QueryOf<'/v1/webhooks', 'get'>;

// Locks and security groups
export type LockPage = ResponseBody<'/v1/locks', 'get', 200>;
export type Lock = ResponseBody<'/v1/locks/{id}', 'get', 200>;
export type LockQuery = QueryOf<'/v1/locks', 'get'>;
export type LockCommand = ResponseBody<'/v1/locks/{id}/commands/{command_id}', 'get', 200>;
export type LockCommandStatus = LockCommand['status'];
export type SecurityGroupPage = ResponseBody<'/v1/security_groups', 'get', 200>;
export type SecurityGroup = ItemOf<SecurityGroupPage>;
export type SecurityGroupQuery = QueryOf<'/v1/security_groups', 'get'>;

// People
export type PersonPage = ResponseBody<'/v1/people', 'get', 200>;
export type Person = ItemOf<PersonPage>;
/** `GET /people/{id}`: the Person plus the keys they hold inside the caller's scope. */
export type PersonWithKeys = ResponseBody<'/v1/people/{id}', 'get', 200>;
export type PersonQuery = QueryOf<'/v1/people', 'get'>;
export type PersonCreate = RequestBody<'/v1/people', 'post'>;
export type PersonUpdate = RequestBody<'/v1/people/{id}', 'put'>;

// Keys and invitations
export type KeyPage = ResponseBody<'/v1/keys', 'get', 200>;
export type Key = ResponseBody<'/v1/keys/{id}', 'get', 200>;
export type KeyQuery = QueryOf<'/v1/keys', 'get'>;
export type KeyCreate = RequestBody<'/v1/keys', 'post'>;
export type KeyUpdate = RequestBody<'/v1/keys/{id}', 'patch'>;
/** `POST /keys` answers 202 with an invitation, not a key. */
export type InvitationCreated = ResponseBody<'/v1/keys', 'post', 202>;
export type InvitationPage = ResponseBody<'/v1/invitations', 'get', 200>;
export type Invitation = ResponseBody<'/v1/invitations/{id}', 'get', 200>;
export type InvitationQuery = QueryOf<'/v1/invitations', 'get'>;
export type InvitationResend = RequestBody<'/v1/invitations/{id}/resend', 'post'>;

// The access log
export type EventPage = ResponseBody<'/v1/events', 'get', 200>;
/** An access-log entry of `GET /events`, also the `data` of door webhooks. */
export type Event = ItemOf<EventPage>;
export type EventQuery = QueryOf<'/v1/events', 'get'>;

// Webhook subscriptions and deliveries
export type WebhookSubscriptionPage = ResponseBody<'/v1/webhooks', 'get', 200>;
export type WebhookSubscription = ResponseBody<'/v1/webhooks/{id}', 'get', 200>;
/** The create answer: the subscription with its signing `secret`, shown only here. */
export type WebhookSubscriptionCreated = ResponseBody<'/v1/webhooks', 'post', 201>;
export type WebhookSubscriptionCreate = RequestBody<'/v1/webhooks', 'post'>;
export type WebhookSubscriptionUpdate = RequestBody<'/v1/webhooks/{id}', 'patch'>;
export type WebhookDeliveryPage = ResponseBody<'/v1/webhooks/{id}/deliveries', 'get', 200>;
export type WebhookDelivery = ItemOf<WebhookDeliveryPage>;
export type WebhookDeliveryQuery = QueryOf<'/v1/webhooks/{id}/deliveries', 'get'>;

// Errors (docs/spec/public-api-v1.md, Errors)
/** The error envelope of every non-2xx answer. */
export type ErrorBody = components['schemas']['Error'];
/** The closed catalogue of `error.code`. */
export type ErrorCode = ErrorBody['error']['code'];
export type ErrorDetail = NonNullable<ErrorBody['error']['details']>[number];
/** The closed catalogue of `details[].code`. */
export type DetailCode = ErrorDetail['code'];
