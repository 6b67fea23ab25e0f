// latchkey admin api-keys|security-groups: who may call the public API and which doors keys open when, through
// the operator API (docs/spec/operator-api.md, Provisioning), with the operator token.
import type { Command } from 'commander';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { action, addDelete, addList, changes, defined, type Page } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { integerList, list, NULL, positiveInteger, repeated, weeklyWindow, windowText, type Window } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type ApiKey = Schemas['ApiKey'];
type SecurityGroup = Schemas['OperatorSecurityGroup'];

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

/** Windows as the flags write them, `; `-separated; a group without any opens at any time. */
function windowsText(windows: readonly Window[] | null): string {
  return windows === null ? 'any time' : windows.map(windowText).join('; ');
}

const SECURITY_GROUP_COLUMNS: ReadonlyArray<Column<SecurityGroup>> = [
  ['id', (g) => g.id],
  ['code', (g) => g.code],
  ['title', (g) => g.title],
  ['location', (g) => g.location_id],
  ['default', (g) => g.is_default],
  ['windows', (g) => windowsText(g.windows as Window[] | null)],
];

const WINDOW_HELP =
  'a weekly window DAYS,START-END in the door\'s local time, e.g. mon-fri,08:00-18:00 or sat,sun,09:00-13:00 (days mon … sun, ranges allowed; an end before the start runs past midnight); repeat the flag for more windows';

interface GroupFlags {
  title?: string;
  description?: string;
  default?: boolean;
  window?: Window[];
  anyTime?: boolean;
}

/** `windows` of a body: the --window list, null for --any-time, nothing when neither was given. */
function windowsField(o: GroupFlags): { windows?: Window[] | typeof NULL } {
  if (o.anyTime && o.window) throw new UsageError('--window and --any-time contradict each other: give one.');
  return o.anyTime ? { windows: NULL } : defined({ windows: o.window });
}

function withGroupFlags(command: Command): Command {
  return command
    .option('--description <text>', 'description')
    .option('--window <days,start-end>', WINDOW_HELP, repeated(weeklyWindow))
    .option('--any-time', 'no windows: open at any time (the default on create)');
}

export function registerAccess(admin: Command, io: Io): void {
  registerApiKeys(admin, io);

  const groups = admin.command('security-groups').description('security groups (access profiles) and their weekly windows: list, create, update');
  addList<SecurityGroup, { account: number }>(groups.command('list').description("an account's security groups, at every location, with their windows").requiredOption('--account <id>', 'account id', positiveInteger), io, {
    noun: 'security groups',
    columns: SECURITY_GROUP_COLUMNS,
    pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<SecurityGroup>>('/security_groups', { limit, cursor, account_id: o.account }),
  });
  withGroupFlags(
    groups
      .command('create')
      .description('create a security group at a location; keys in it open its doors during its windows (any time without)')
      .argument('<code>', 'the code keys refer to (no spaces)')
      .requiredOption('--location <id>', 'location id', positiveInteger)
      .requiredOption('--title <title>', 'title for people')
      .option('--default', 'a default group'),
  ).action(
    action<GroupFlags & { location: number; title: string }>(io, async (ctx, o, [code]) => {
      const body = { location_id: o.location, code, title: o.title, ...defined({ description: o.description, is_default: o.default, ...windowsField(o) }) };
      ctx.print(await ctx.admin().post<object>('/security_groups', body), details);
    }),
  );
  withGroupFlags(
    groups
      .command('update')
      .description('change a security group: only the fields given change; --window replaces all its windows (the gateways and boards holding its doors get them)')
      .argument('<id>', 'security group id', positiveInteger)
      .option('--title <title>', 'title for people')
      .option('--default', 'a default group')
      .option('--no-default', 'not a default group'),
  ).action(
    action<GroupFlags>(io, async (ctx, o, [id]) => {
      const body = changes({ title: o.title, description: o.description, is_default: o.default, ...windowsField(o) });
      ctx.print(await ctx.admin().patch<object>(`/security_groups/${String(id)}`, body), details);
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

  addList<ApiKey, { location?: number; account?: number }>(
    apiKeys
      .command('list')
      .description('API keys, never their tokens (both filters: the two together)')
      .option('--location <id>', 'only the keys of this location', positiveInteger)
      .option('--account <id>', 'only the keys of this account (every location of it)', positiveInteger),
    io,
    {
      noun: 'API keys',
      columns: API_KEY_COLUMNS,
      pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<ApiKey>>('/api_keys', { limit, cursor, location_id: o.location, account_id: o.account }),
    },
  );

  addDelete(apiKeys, io, {
    noun: 'API key',
    path: (id) => `/api_keys/${id}`,
    verb: 'revoke',
    past: 'revoked',
    description: 'revoke an API key: its token answers 401 from now on',
  });
}
