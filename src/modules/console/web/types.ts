// The shapes the console reads: aliases of the types generated from docs/openapi.json (the SDK's file, the one
// copy of the public API's types) and docs/operator-openapi.json (./openapi/, npm run generate:client-types),
// under the names the pages use. Types only: the bundle imports nothing from the SDK.
import type { components as PublicComponents } from '../../../../packages/sdk/src/openapi.ts';
import type { components as OperatorComponents } from './openapi/operator.ts';

type PublicSchemas = PublicComponents['schemas'];
type OperatorSchemas = OperatorComponents['schemas'];

export type LocationRef = PublicSchemas['LocationRef'];
export type Account = OperatorSchemas['Account'];
export type Overview = OperatorSchemas['Overview'];
export type Location = OperatorSchemas['Location'];
/** A location as the forms hold it: until the list is in, the root stands in from the account, its zone unknown. */
export type LocationChoice = Omit<Location, 'time_zone' | 'effective_time_zone'> & Partial<Pick<Location, 'time_zone' | 'effective_time_zone'>>;
export type Lock = PublicSchemas['Lock'];

/** The name the console's server part gives the keys it makes for its sessions (docs/console.md). */
export const CONSOLE_KEY_NAME = 'Operator console';

/** A remote unlock and how far it got (`POST /v1/locks/{id}/unlock`, `GET /v1/locks/{id}/commands/{command_id}`). */
export type LockCommand = PublicSchemas['LockCommand'];
export type SecurityGroup = PublicSchemas['SecurityGroup'];
/** A security group as the operator API lists it: its location and weekly windows (null: at any time). */
export type OperatorSecurityGroup = OperatorSchemas['OperatorSecurityGroup'];
/** A weekly window in the door's local time: on each of `days`, from `start` to `end` (before `start`: past midnight). */
export type TimeWindow = NonNullable<OperatorSecurityGroup['windows']>[number];
export type Day = TimeWindow['days'][number];
export const DAYS: readonly Day[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** A gateway as listed, with its presence (never its password). */
export type Gateway = OperatorSchemas['GatewaySummary'];
/** A lock as the operator API shows it: the public fields and the gateway it is on. */
export type OperatorLock = OperatorSchemas['OperatorLock'];
/** A gateway as created or after a password rotation: its MQTT password, shown only then. */
export type GatewayWithPassword = OperatorSchemas['Gateway'];
export type ApiKey = OperatorSchemas['ApiKey'];
/** A new API key with its token, shown only in that answer. */
export type ApiKeyCreated = OperatorSchemas['ApiKeyCreated'];
export type User = OperatorSchemas['User'];
export type Person = PublicSchemas['Person'];
export type Key = PublicSchemas['Key'];
/** A key as the operator API answers it: with the credential it presents at a reader (normalised; null: none). */
export type OperatorKey = OperatorSchemas['OperatorKey'];
/** A device (passkey) bound to a phone key on its setup page (`GET /admin/v1/keys/{id}/devices`). */
export type KeyDeviceList = OperatorSchemas['KeyDeviceList'];
export type KeyDevice = KeyDeviceList['data'][number];
export type Invitation = PublicSchemas['Invitation'];
/** The answer to issuing a phone key (`POST /v1/keys`): the invitation that carries its setup link. */
export type InvitationCreated = PublicSchemas['InvitationCreated'];
export type AccessEvent = PublicSchemas['Event'];
export type Webhook = PublicSchemas['WebhookSubscription'];
/** A new webhook with its signing secret, shown only in that answer. */
export type WebhookCreated = PublicSchemas['WebhookSubscriptionCreated'];
export type Delivery = PublicSchemas['WebhookDelivery'];
export type SandboxOutbox = OperatorSchemas['SandboxOutbox'];
export type SandboxClock = OperatorSchemas['SandboxClock'];
export type SandboxLockingSystem = OperatorSchemas['SandboxLockingSystem'];
export type SandboxMqtt = OperatorSchemas['SandboxMqtt'];
export type LockingSystemConfirmed = OperatorSchemas['LockingSystemConfirmed'];

// The service's own lists (dependency-free modules, bundled in): a new scope or event shows in the forms by itself.
export { SCOPES } from '../../../platform/scopes.ts';
export { DOOR_EVENT_TYPES as EVENT_TYPES, EVENT_TYPES as WEBHOOK_EVENTS } from '../../../platform/event-types.ts';

/** A door of a UHPPOTE controller and the lock it is (`door_locks` of /admin/v1/controllers). */
export type DoorLock = Controller['door_locks'][number];
/** What a reconciliation found on a board and repaired (ControllerReconciliation). */
export type Reconciliation = OperatorSchemas['ControllerReconciliation'];
/** A UHPPOTE controller (/admin/v1/controllers). */
export type Controller = OperatorSchemas['Controller'];
