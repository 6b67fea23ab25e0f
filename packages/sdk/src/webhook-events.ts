// The bodies the service POSTs to webhook subscriptions (docs/spec/public-api-v1.md, Events: "Delivery
// request" and "Payload shapes of `data`"). The OpenAPI document does not describe webhooks, so these are
// written from the spec, on top of the resource types of types.ts.
import type { Event, Key, Person } from './types.js';

/** Every delivery: `id` is the delivery id (stable across retries), `created_at` when it was made. */
export interface WebhookEnvelope<Type extends string, Data> {
  id: string;
  type: Type;
  created_at: string;
  data: Data;
}

export type DoorEventType = 'access.granted' | 'access.denied' | 'door.closed' | 'door.left_open';
export type UnlockFailureReason = 'timed_out' | 'device_missing' | 'publish_failed' | 'device_error';

interface PersonReference {
  id: string;
  name: string;
  email: string | null;
}

type LocationReference = Person['location'];

/** `unlock.failed`: the Event object with `result` denied and `key` null. */
export type UnlockFailedData = Omit<Event, 'type' | 'result' | 'reason' | 'key'> & {
  type: 'unlock.failed';
  result: 'denied';
  reason: UnlockFailureReason;
  key: null;
};

/** `key.activated` and `key.revoked`: `key.id` equals `id`. */
export interface KeyEventData {
  id: number;
  type: 'key.activated' | 'key.revoked';
  occurred_at: string;
  person: PersonReference;
  key: { id: number; name: string; state: Key['state'] };
}

export interface KeyIssuedData {
  invitation_id: number;
  channel: 'sms' | 'email' | 'both';
  person: PersonReference;
  security_groups: string[];
  starts_at: string;
  expires_at: string;
}

export interface LockPresenceData {
  lock: Event['lock'];
  location: LocationReference;
  online: boolean;
  since: string;
}

export type PersonUpdatedData = Person & { changed_fields: string[] };

export interface PersonDeletedData {
  id: string;
  name: string;
  email: string | null;
  location: LocationReference;
}

/** A verified webhook delivery; `switch (event.type)` narrows `data`. */
export type WebhookEvent =
  | WebhookEnvelope<DoorEventType, Event>
  | WebhookEnvelope<'unlock.failed', UnlockFailedData>
  | WebhookEnvelope<'key.activated' | 'key.revoked', KeyEventData>
  | WebhookEnvelope<'key.issued', KeyIssuedData>
  | WebhookEnvelope<'lock.online' | 'lock.offline', LockPresenceData>
  | WebhookEnvelope<'person.created', Person>
  | WebhookEnvelope<'person.updated', PersonUpdatedData>
  | WebhookEnvelope<'person.deleted', PersonDeletedData>
  | WebhookEnvelope<'ping', { message: string }>;

export type WebhookEventType = WebhookEvent['type'];
