// latchkey admin accounts|locations|users|api-keys|security-groups: provisioning through the operator API
// (docs/spec/operator-api.md, Provisioning), with the operator token.
import { InvalidArgumentError, type Command } from 'commander';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { action, defined, printPage, readPages, withListFlags, type ListFlags, type Page } from '../kit.ts';
import { details, ref, type Column } from '../output.ts';
import { integerList, list, positiveInteger, wholeNumber } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type ApiKey = Schemas['ApiKey'];

const API_KEY_COLUMNS: ReadonlyArray<Column<ApiKey>> = [
  ['id', (k) => k.id],
  ['name', (k) => k.name],
  ['prefix', (k) => k.prefix],
  ['location', (k) => k.location_id],
  ['scopes', (k) => k.scopes],
  ['lock allowlist', (k) => k.lock_allowlist],
  ['expires', (k) => k.expires_at],
  ['revoked', (k) => k.revoked_at],
];

type Account = Schemas['Account'];

const ACCOUNT_COLUMNS: ReadonlyArray<Column<Account>> = [
  ['id', (a) => a.id],
  ['name', (a) => a.name],
  ['root location', (a) => ref(a.root_location)],
  ['reseller', (a) => a.reseller],
  ['sms', (a) => a.sms_enabled],
  ['phone keys', (a) => a.phone_key_allowance ?? 'unlimited'],
  ['locking system', (a) => a.locking_system],
];

type Location = Schemas['Location'];

const LOCATION_COLUMNS: ReadonlyArray<Column<Location>> = [
  ['id', (l) => l.id],
  ['name', (l) => l.name],
  ['parent', (l) => l.parent_id],
  ['account', (l) => l.account_id],
  ['time zone', (l) => l.effective_time_zone],
];

interface AccountFlags {
  name?: string;
  reseller?: boolean;
  sms?: boolean;
  phoneKeyAllowance?: number | null;
  lockingSystem?: string | null;
}

function allowance(value: string): number | null {
  return value === 'unlimited' ? null : wholeNumber(value);
}

function lockingSystem(value: string): string | null {
  if (value === 'none') return null;
  if (value === 'sandbox') return value;
  throw new InvalidArgumentError('expected sandbox or none.');
}

/** The account fields of create and update; a flag not given is not sent (the service's default applies). */
function withAccountFlags(command: Command): Command {
  return command
    .option('--reseller', 'a reseller (platform-mode) account')
    .option('--no-reseller', 'not a reseller account')
    .option('--sms', 'SMS enabled (the default on create)')
    .option('--no-sms', 'SMS disabled: setup links go by e-mail only')
    .option('--phone-key-allowance <n>', 'invitations the account may send, or "unlimited"', allowance)
    .option('--locking-system <system>', 'sandbox (the built-in simulator) or none', lockingSystem);
}

function accountBody(o: AccountFlags): Record<string, unknown> {
  return defined({
    name: o.name,
    reseller: o.reseller,
    sms_enabled: o.sms,
    phone_key_allowance: o.phoneKeyAllowance,
    locking_system: o.lockingSystem,
  });
}

export function registerTenancy(admin: Command, io: Io): void {
  const accounts = admin.command('accounts').description('accounts: list, create, read, update');
  withListFlags(accounts.command('list').description('accounts, by id').option('--name <text>', 'only accounts whose name contains this (any case)')).action(
    action<ListFlags & { name?: string }>(io, async (ctx, o) => {
      const client = ctx.admin();
      const page = await readPages((limit, cursor) => client.get<Page<Account>>('/accounts', { limit, cursor, q: o.name }), o);
      printPage(ctx, page, ACCOUNT_COLUMNS, 'accounts');
    }),
  );
  withAccountFlags(accounts.command('create').description('create an account (its root location comes with it)').argument('<name>', 'account name')).action(
    action<AccountFlags>(io, async (ctx, o, [name]) => {
      ctx.print(await ctx.admin().post<object>('/accounts', { ...accountBody(o), name }), details);
    }),
  );
  accounts
    .command('get')
    .description('one account')
    .argument('<id>', 'account id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().get<object>(`/accounts/${String(id)}`), details)));
  withAccountFlags(
    accounts.command('update').description('change an account: only the fields given change').argument('<id>', 'account id', positiveInteger).option('--name <name>', 'account name'),
  ).action(
    action<AccountFlags>(io, async (ctx, o, [id]) => {
      const body = accountBody(o);
      if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one field (see --help).');
      ctx.print(await ctx.admin().patch<object>(`/accounts/${String(id)}`, body), details);
    }),
  );

  const locations = admin.command('locations').description('locations: list, create a department');
  withListFlags(locations.command('list').description("an account's locations (its root and departments)").requiredOption('--account <id>', 'account id', positiveInteger)).action(
    action<ListFlags & { account: number }>(io, async (ctx, o) => {
      const client = ctx.admin();
      const page = await readPages((limit, cursor) => client.get<Page<Location>>('/locations', { limit, cursor, account_id: o.account }), o);
      printPage(ctx, page, LOCATION_COLUMNS, 'locations');
    }),
  );
  locations
    .command('create')
    .description('create a department under a location')
    .argument('<name>', 'department name')
    .requiredOption('--parent <id>', 'parent location id', positiveInteger)
    .action(
      action<{ parent: number }>(io, async (ctx, o, [name]) => ctx.print(await ctx.admin().post<object>('/locations', { parent_id: o.parent, name }), details)),
    );

  admin
    .command('users')
    .description('dashboard users: create')
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

  registerApiKeys(admin, io);

  admin
    .command('security-groups')
    .description('security groups (access profiles): create')
    .command('create')
    .description('create a security group at a location')
    .argument('<code>', 'the code keys refer to (no spaces)')
    .requiredOption('--location <id>', 'location id', positiveInteger)
    .requiredOption('--title <title>', 'title for people')
    .option('--description <text>', 'description')
    .option('--default', 'a default group')
    .action(
      action<{ location: number; title: string; description?: string; default?: boolean }>(io, async (ctx, o, [code]) => {
        const body = { location_id: o.location, code, title: o.title, ...defined({ description: o.description, is_default: o.default }) };
        ctx.print(await ctx.admin().post<object>('/security_groups', body), details);
      }),
    );
}

function registerApiKeys(admin: Command, io: Io): void {
  const apiKeys = admin.command('api-keys').description('API keys: create, list, revoke');
  apiKeys
    .command('create')
    .description('create an API key; its token is printed only this once')
    .argument('<name>', 'key name')
    .requiredOption('--location <id>', 'the location it belongs to (it sees that location and its departments)', positiveInteger)
    .requiredOption('--scopes <scopes>', 'comma-separated: catalog:read, people:read, people:write, keys:read, keys:write, locks:control, events:read, webhooks:manage', list)
    .option('--lock-allowlist <ids>', 'lock ids it may unlock, comma-separated', integerList)
    .option('--expires-at <time>', 'ISO 8601 date-time (default: in 1 year; at most 2 years)')
    .option('--created-by <user>', 'id of the dashboard user it is made for', positiveInteger)
    .action(
      action<{ location: number; scopes: string[]; lockAllowlist?: number[]; expiresAt?: string; createdBy?: number }>(io, async (ctx, o, [name]) => {
        const body = {
          location_id: o.location,
          name,
          scopes: o.scopes,
          ...defined({ lock_allowlist: o.lockAllowlist, expires_at: o.expiresAt, created_by_user_id: o.createdBy }),
        };
        ctx.print(await ctx.admin().post<object>('/api_keys', body), details);
        ctx.note('The token is shown only now: keep it (LATCHKEY_API_KEY).');
      }),
    );

  withListFlags(apiKeys.command('list').description('API keys, never their tokens').option('--location <id>', 'only the keys of this location', positiveInteger)).action(
    action<ListFlags & { location?: number }>(io, async (ctx, o) => {
      const client = ctx.admin();
      const page = await readPages((limit, cursor) => client.get<Page<ApiKey>>('/api_keys', { limit, cursor, location_id: o.location }), o);
      printPage(ctx, page, API_KEY_COLUMNS, 'API keys');
    }),
  );

  apiKeys
    .command('revoke')
    .description('revoke an API key: its token answers 401 from now on')
    .argument('<id>', 'API key id', positiveInteger)
    .action(
      action(io, async (ctx, _o, [id]) => {
        await ctx.admin().delete(`/api_keys/${String(id)}`);
        ctx.print({ id, revoked: true }, () => `Revoked API key ${String(id)}.`);
      }),
    );
}
