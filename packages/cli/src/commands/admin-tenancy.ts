// latchkey admin overview|accounts|locations|users: provisioning through the operator API
// (docs/spec/operator-api.md, Provisioning), with the operator token.
import { InvalidArgumentError, type Command } from 'commander';
import type { Io } from '../context.ts';
import { action, addGet, addList, changes, defined, type Page } from '../kit.ts';
import { details, ref, type Column } from '../output.ts';
import { durationSeconds, NULL, orNull, positiveInteger, wholeNumber } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type Account = Schemas['Account'];
type Location = Schemas['Location'];
type User = Schemas['User'];

const ACCOUNT_COLUMNS: ReadonlyArray<Column<Account>> = [
  ['id', (a) => a.id],
  ['name', (a) => a.name],
  ['root location', (a) => ref(a.root_location)],
  ['reseller', (a) => a.reseller],
  ['sms', (a) => a.sms_enabled],
  ['phone keys', (a) => a.phone_key_allowance ?? 'unlimited'],
  ['locking system', (a) => a.locking_system],
];

const LOCATION_COLUMNS: ReadonlyArray<Column<Location>> = [
  ['id', (l) => l.id],
  ['name', (l) => l.name],
  ['parent', (l) => l.parent_id],
  ['account', (l) => l.account_id],
  ['time zone', (l) => l.effective_time_zone],
];

const USER_COLUMNS: ReadonlyArray<Column<User>> = [
  ['id', (u) => u.id],
  ['name', (u) => u.name],
  ['email', (u) => u.email],
  ['account', (u) => u.account_id],
];

interface AccountFlags {
  name?: string;
  reseller?: boolean;
  sms?: boolean;
  phoneKeyAllowance?: number | typeof NULL;
  lockingSystem?: string | typeof NULL;
  offlineAccess?: number;
}

function lockingSystem(value: string): string | typeof NULL {
  if (value === 'none') return NULL;
  if (value === 'sandbox' || value === 'uhppote') return value;
  throw new InvalidArgumentError('expected sandbox, uhppote or none.');
}

/** A whole number of seconds written as a duration (`7d`, `12h`, `3600`). */
function wholeSeconds(value: string): number {
  const seconds = durationSeconds(value);
  if (!Number.isInteger(seconds)) throw new InvalidArgumentError('expected a whole number of seconds.');
  return seconds;
}

/** The account fields of create and update; a flag not given is not sent (the service's default applies). */
function withAccountFlags(command: Command): Command {
  return command
    .option('--reseller', 'a reseller (platform-mode) account')
    .option('--no-reseller', 'not a reseller account')
    .option('--sms', 'SMS enabled (the default on create)')
    .option('--no-sms', 'SMS disabled: setup links go by e-mail only')
    .option('--phone-key-allowance <n>', 'invitations the account may send, or "unlimited"', orNull('unlimited', wholeNumber))
    .option('--locking-system <system>', 'sandbox (the built-in simulator), uhppote (UHPPOTE controllers) or none', lockingSystem)
    .option('--offline-access <duration>', "how long a gateway may decide from its copy of the access list without the service: 1h, 7d, or seconds (default 7d)", wholeSeconds);
}

function accountBody(o: AccountFlags): Record<string, unknown> {
  return {
    name: o.name,
    reseller: o.reseller,
    sms_enabled: o.sms,
    phone_key_allowance: o.phoneKeyAllowance,
    locking_system: o.lockingSystem,
    offline_access_seconds: o.offlineAccess,
  };
}

const TIME_ZONE_HELP = 'an IANA time-zone name, e.g. Europe/Berlin, or "inherit" (the parent\'s; UTC at a root without one)';

export function registerTenancy(admin: Command, io: Io): void {
  admin
    .command('overview')
    .description('what needs attention across accounts: gateways online/offline, locks offline, failing or paused webhooks, deliveries pending')
    .action(action(io, async (ctx) => ctx.print(await ctx.admin().get<Schemas['Overview']>('/overview'), details)));

  const accounts = admin.command('accounts').description('accounts: list, create, read, update');
  addList<Account, { name?: string }>(accounts.command('list').description('accounts, by id').option('--name <text>', 'only accounts whose name contains this (any case)'), io, {
    noun: 'accounts',
    columns: ACCOUNT_COLUMNS,
    pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<Account>>('/accounts', { limit, cursor, q: o.name }),
  });
  withAccountFlags(accounts.command('create').description('create an account (its root location comes with it)').argument('<name>', 'account name')).action(
    action<AccountFlags>(io, async (ctx, o, [name]) => {
      ctx.print(await ctx.admin().post<object>('/accounts', { ...defined(accountBody(o)), name }), details);
    }),
  );
  addGet(accounts, io, 'account', (id) => `/accounts/${id}`);
  withAccountFlags(
    accounts.command('update').description('change an account: only the fields given change').argument('<id>', 'account id', positiveInteger).option('--name <name>', 'account name'),
  ).action(action<AccountFlags>(io, async (ctx, o, [id]) => ctx.print(await ctx.admin().patch<object>(`/accounts/${String(id)}`, changes(accountBody(o))), details)));

  const locations = admin.command('locations').description('locations: list, create a department, update');
  addList<Location, { account: number }>(locations.command('list').description("an account's locations (its root and departments)").requiredOption('--account <id>', 'account id', positiveInteger), io, {
    noun: 'locations',
    columns: LOCATION_COLUMNS,
    pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<Location>>('/locations', { limit, cursor, account_id: o.account }),
  });
  locations
    .command('create')
    .description('create a department under a location')
    .argument('<name>', 'department name')
    .requiredOption('--parent <id>', 'parent location id', positiveInteger)
    .option('--time-zone <zone>', `${TIME_ZONE_HELP} (default: inherit)`, orNull('inherit', String))
    .action(
      action<{ parent: number; timeZone?: string | typeof NULL }>(io, async (ctx, o, [name]) =>
        ctx.print(await ctx.admin().post<object>('/locations', { parent_id: o.parent, name, ...defined({ time_zone: o.timeZone }) }), details),
      ),
    );
  locations
    .command('update')
    .description("rename a location (a root too) or set its time zone, the wall clock of its doors' windows")
    .argument('<id>', 'location id', positiveInteger)
    .option('--name <name>', 'location name')
    .option('--time-zone <zone>', TIME_ZONE_HELP, orNull('inherit', String))
    .action(
      action<{ name?: string; timeZone?: string | typeof NULL }>(io, async (ctx, o, [id]) =>
        ctx.print(await ctx.admin().patch<object>(`/locations/${String(id)}`, changes({ name: o.name, time_zone: o.timeZone })), details),
      ),
    );

  const users = admin.command('users').description('dashboard users: list, create');
  addList<User, { account: number }>(users.command('list').description("an account's dashboard users").requiredOption('--account <id>', 'account id', positiveInteger), io, {
    noun: 'users',
    columns: USER_COLUMNS,
    pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<User>>('/users', { limit, cursor, account_id: o.account }),
  });
  users
    .command('create')
    .description('create a dashboard user of an account')
    .argument('<name>', 'full name')
    .requiredOption('--account <id>', 'account id', positiveInteger)
    .requiredOption('--email <email>', 'e-mail address')
    .action(
      action<{ account: number; email: string }>(io, async (ctx, o, [name]) =>
        ctx.print(await ctx.admin().post<object>('/users', { account_id: o.account, name, email: o.email }), details),
      ),
    );
}
