// @latchkey/sdk: a typed client of the Latchkey public API (docs/spec/public-api-v1.md).
export { Latchkey, type LatchkeyOptions } from './client.js';
export { LatchkeyError } from './errors.js';
export { PageList } from './pagination.js';
export {
  verifyWebhook,
  WebhookVerificationError,
  SIGNATURE_TOLERANCE_SECONDS,
  type VerifyOptions,
  type WebhookHeaders,
  type WebhookVerificationFailure,
} from './verify-webhook.js';
export type { CallOptions, CreateOptions } from './api.js';
export type { Fetch } from './transport.js';
export type { UnlockOptions, Locks, SecurityGroups } from './resources/locks.js';
export type { FollowOptions, Events } from './resources/events.js';
export type { People } from './resources/people.js';
export type { Keys, Invitations } from './resources/keys.js';
export type { Webhooks } from './resources/webhooks.js';
export type * from './types.js';
export type * from './webhook-events.js';
export type { paths } from './openapi.js';
