// Every NOTIFY channel of the service, named once. One registry rather than a constant per owning module:
// channels cross modules by nature (console_live is raised by triggers on the events' and webhooks' tables
// and heard by the console and by webhooks/listen.ts; catalog_changed is raised by operator and devices and
// heard by catalog, keys, people and access), and migrations, which cannot import TypeScript, spell some of
// them in SQL: test/unit/channels.test.ts reads every migration and every SQL in src for the channels
// they notify and fails on a name that is not here, or on a name here that nothing sends or hears.
//
// A name is namespaced per schema by Database.listen/notify/channel: SQL builds it as
// `'latchkey_' || current_schema() || '_' || name`.

/** Any key or account changed: every instance drops its cached API keys (platform/auth.ts). */
export const AUTH_CHANNEL = 'auth_changed';
/** Every write to locks, gateways (presence) or locations, in its transaction: lock caches and pages are dropped. */
export const CATALOG_CHANNEL = 'catalog_changed';
/** Heard by this instance once the transaction that changed lists commits: `{instance}|{change id}|{gateway ids}`. */
export const ACCESS_LISTS_CHANNEL = 'access_lists_changed';
/** Heard by every instance once a change to what an account's keys open commits: `{account id}` (access/credential-cache.ts). */
export const ACCESS_KEYS_CHANNEL = 'access_keys_changed';
/** Heard by every instance once a whole-account rebuild is asked for: `{account id}` (access/rebuilds.ts). */
export const ACCESS_REBUILDS_CHANNEL = 'access_rebuilds_requested';
/** Heard by every instance once queued board writes commit: they are run at once rather than at the next job run. */
export const BOARD_WRITES_CHANNEL = 'uhppote_writes_queued';
/** A UHPPOTE board was set up, changed or deleted: every instance reads its listener's boards again (controllers/known-boards.ts). */
export const CONTROLLERS_CHANNEL = 'uhppote_controllers_changed';
/** The sandbox clock moved: `{offset}`, so every instance reads the same time. */
export const SANDBOX_CLOCK_CHANNEL = 'sandbox_clock';
/** Webhook deliveries became due (the fan-out's statement, a redelivery): wakes every instance's dispatcher. */
export const WEBHOOK_DUE_CHANNEL = 'webhook_due';
/**
 * Migration 012's triggers: `{"topic", "account_id"}` per statement and account on inserts into the access
 * log and domain_events, presence and webhook changes. Heard by the console's live updates and webhooks/listen.ts.
 */
export const CONSOLE_LIVE_CHANNEL = 'console_live';
/** Migrations 014 and 019: rows of the access log inserted (`account:least id`, …) or deleted (`account`, …). */
export const ACCESS_LOG_CHANGED_CHANNEL = 'access_log_changed';
/** Migration 014: the accounts whose people changed. */
export const PEOPLE_CHANGED_CHANNEL = 'people_changed';
/** Migration 014: the accounts whose keys changed. */
export const KEYS_CHANGED_CHANNEL = 'keys_changed';

export const CHANNELS = [
  AUTH_CHANNEL,
  CATALOG_CHANNEL,
  ACCESS_LISTS_CHANNEL,
  ACCESS_KEYS_CHANNEL,
  ACCESS_REBUILDS_CHANNEL,
  BOARD_WRITES_CHANNEL,
  CONTROLLERS_CHANNEL,
  SANDBOX_CLOCK_CHANNEL,
  WEBHOOK_DUE_CHANNEL,
  CONSOLE_LIVE_CHANNEL,
  ACCESS_LOG_CHANGED_CHANNEL,
  PEOPLE_CHANGED_CHANNEL,
  KEYS_CHANGED_CHANNEL,
] as const;

/** A registered channel: Database.listen and Transaction.notify take nothing else, so a misspelt name does not compile. */
export type Channel = (typeof CHANNELS)[number];
