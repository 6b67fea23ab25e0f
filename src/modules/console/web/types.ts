// The shapes the console reads, as docs/openapi.json and docs/operator-openapi.json give them.

export interface LocationRef {
  id: number;
  name: string;
}
export interface Account {
  id: number;
  name: string;
  reseller: boolean;
  sms_enabled: boolean;
  phone_key_allowance: number | null;
  locking_system: string | null;
  /** How long a gateway may decide from its copy of the access list without hearing from the service. */
  offline_access_seconds: number;
  root_location: LocationRef;
}
export interface Overview {
  accounts: number;
  gateways: { online: number; offline: number };
  locks_offline: number;
  webhooks: { failing: number; paused: number };
  deliveries_pending: number;
}
export interface Location {
  id: number;
  name: string;
  parent_id: number | null;
  account_id: number;
  /** Its own IANA time zone; null: the one above it. */
  time_zone?: string | null;
  /** The zone its doors read windows in (its own, the nearest above it, else UTC). */
  effective_time_zone?: string;
}
export interface Lock {
  id: number;
  name: string;
  serial_number: string | null;
  place: string;
  provider: string;
  online: boolean | null;
  security_groups: string[];
  location: LocationRef;
  gateway_id?: number | null;
}
/** The name the console's server part gives the keys it makes for its sessions (docs/console.md). */
export const CONSOLE_KEY_NAME = 'Operator console';

/** A remote unlock and how far it got (`POST /v1/locks/{id}/unlock`, `GET /v1/locks/{id}/commands/{command_id}`). */
export interface LockCommand {
  id: string;
  lock_id: number;
  status: 'published' | 'confirmed' | 'timed_out' | 'failed';
  requested_at: string;
  published_at: string | null;
  confirmed_at: string | null;
  timeout_seconds: number;
  error: { code: string; message: string } | null;
}
export interface SecurityGroup {
  id: number;
  code: string;
  title: string;
  description: string;
  is_default: boolean;
}
export type Day = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
export const DAYS: readonly Day[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
/** A weekly window in the door's local time: on each of `days`, from `start` to `end` (before `start`: past midnight). */
export interface TimeWindow {
  days: Day[];
  start: string;
  end: string;
}
/** A security group as the operator API lists it: its location and weekly windows (null: at any time). */
export interface OperatorSecurityGroup extends SecurityGroup {
  location_id: number;
  windows: TimeWindow[] | null;
}
export interface Mqtt {
  url: string;
  client_id: string;
  username: string;
  password?: string;
  topic_prefix: string;
}
export interface Gateway {
  id: number;
  name: string;
  location_id: number;
  mqtt: Mqtt;
  online?: boolean;
  last_seen_at?: string | null;
  created_at?: string;
}
export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  location_id: number;
  scopes: string[];
  lock_allowlist: number[];
  expires_at: string;
  created_at: string;
  revoked_at: string | null;
  token?: string;
}
export interface User {
  id: number;
  account_id: number;
  name: string;
  email: string;
}
export interface Person {
  id: string;
  name: string;
  email: string | null;
  phone: string | null;
  company_name: string | null;
  title: string | null;
  language: string | null;
  location: LocationRef;
}
export interface Key {
  id: number;
  name: string;
  type: string;
  state: string;
  person_id: string;
  invitation_id?: number | null;
  security_groups: string[];
  starts_at: string;
  expires_at: string | null;
}
/** A key as the operator API answers it: with the credential it presents at a reader (normalised; null: none). */
export interface OperatorKey extends Key {
  credential: string | null;
}
/** A device (passkey) bound to a phone key on its setup page (`GET /admin/v1/keys/{id}/devices`). */
export interface KeyDevice {
  id: number;
  registered_at: string;
  /** Its last verified tap (Open or Show my doors); null: never used. */
  last_used_at: string | null;
}
export interface Invitation {
  id: number;
  state: string;
  person_id: string;
  key_id: number | null;
  name: string;
  security_groups: string[];
  starts_at: string;
  expires_at: string;
  sent: { email_at: string | null; sms_at: string | null };
  created_at: string;
}
export interface AccessEvent {
  id: number;
  type: string;
  occurred_at: string;
  result: string;
  reason: string | null;
  /** `gateway` (at the door), `api` (a remote unlock by an API key), `key_holder` (from the phone). */
  source: string;
  lock: { id: number; name: string; place: string };
  location: LocationRef;
  api_key: { id: number; name: string; prefix: string } | null;
  person: { id: string; name: string; email: string | null } | null;
  key: { id: number; name: string } | null;
}
export interface Webhook {
  id: string;
  url: string;
  events: string[];
  description: string;
  status: 'active' | 'paused';
  failing_since: string | null;
  last_delivery_at: string | null;
  created_at: string;
  secret?: string;
}
export interface Delivery {
  id: string;
  subscription_id: string;
  event_type: string;
  event_id: string;
  status: string;
  attempt: number;
  response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  /** The event's `data` as delivered; null once purged (a deleted person's). */
  payload?: Record<string, unknown> | null;
}
export interface OutboxMessage {
  id: number;
  channel: string;
  to: string;
  subject: string;
  body: string;
  link: string | null;
  sent_at: string;
}

// The service's own list (a dependency-free module, bundled in): a new scope shows in the key form by itself.
export { SCOPES } from '../../../platform/scopes.ts';

export const EVENT_TYPES = ['access.granted', 'access.denied', 'door.closed', 'door.left_open'] as const;

export const WEBHOOK_EVENTS = [
  'access.granted',
  'access.denied',
  'door.closed',
  'door.left_open',
  'key.activated',
  'key.revoked',
  'key.issued',
  'unlock.failed',
  'lock.online',
  'lock.offline',
  'person.created',
  'person.updated',
  'person.deleted',
] as const;

/** A door of a UHPPOTE controller and the lock it is (`door_locks` of /admin/v1/controllers). */
export interface DoorLock {
  door: number;
  lock_id: number;
}
/** What a reconciliation found on a board and repaired (ControllerReconciliation). */
export interface Reconciliation {
  at: string;
  cards_on_controller: number;
  added: { key_id: number; reason: string }[];
  changed: { key_id: number; reason: string }[];
  /** `card`: the card number masked (its last three digits). */
  removed: { card: string; key_id: number | null; reason: string }[];
  profiles_rewritten: number[];
  problems: string[];
}
/** A UHPPOTE controller (/admin/v1/controllers). */
export interface Controller {
  id: number;
  account_id: number;
  location_id: number;
  name: string;
  serial_number: number;
  address: string;
  port: number;
  transport: 'udp' | 'tcp';
  doors: number;
  door_locks: DoorLock[];
  time_zone: string;
  online: boolean;
  last_seen_at: string | null;
  clock_set_at: string | null;
  listener_set_at: string | null;
  last_error: string | null;
  reconciliation: Reconciliation | null;
  created_at: string;
}
