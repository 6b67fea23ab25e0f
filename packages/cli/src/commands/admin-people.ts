// latchkey admin people|keys: service-managed people, and dashboard hand-overs of cards, fobs and phone keys with
// their credentials and phone devices, through the operator API (docs/spec/operator-api.md), with the operator token.
import type { Command } from 'commander';
import type { Io } from '../context.ts';
import { action, addGet, addList, changes, defined, type Page } from '../kit.ts';
import { details, ref, table, type Column } from '../output.ts';
import { list, orNull, positiveInteger, type NULL } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type Person = Schemas['Person'];
type KeyDevice = Schemas['KeyDeviceList']['data'][number];

const PERSON_COLUMNS: ReadonlyArray<Column<Person>> = [
  ['id', (p) => p.id],
  ['name', (p) => p.name],
  ['email', (p) => p.email],
  ['phone', (p) => p.phone],
  ['location', (p) => ref(p.location)],
];

const DEVICE_COLUMNS: ReadonlyArray<Column<KeyDevice>> = [
  ['id', (d) => d.id],
  ['registered', (d) => d.registered_at],
  ['last used', (d) => d.last_used_at ?? 'never'],
];

const CREDENTIAL_HELP =
  'what the card or fob presents at a reader: wiegand26:<facility>:<card>, wiegand34:<facility>:<card> or uid:<hex>; unique among the account\'s keys in use';

export function registerPeople(admin: Command, io: Io): void {
  const people = admin.command('people').description('people: search, create (service-managed ones too)');
  addList<Person, { account: number; search?: string }>(
    people
      .command('list')
      .description("an account's people in id order (the console's search)")
      .requiredOption('--account <id>', 'account id', positiveInteger)
      .option('--search <text>', 'part of a name or an e-mail (any case) or, with digits, of the phone'),
    io,
    {
      noun: 'people',
      columns: PERSON_COLUMNS,
      pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<Person>>('/people', { limit, cursor, account_id: o.account, q: o.search }),
    },
  );
  people
    .command('create')
    .description('create a person as the dashboard does (no de-duplication)')
    .argument('<name>', 'full name')
    .requiredOption('--location <id>', 'location id', positiveInteger)
    .option('--email <email>', 'e-mail address')
    .option('--phone <phone>', 'phone in international format')
    .option('--company <name>', 'company name')
    .option('--title <title>', 'job title')
    .option('--language <code>', 'language code')
    .option('--managed', 'managed by the service: the public API cannot change or delete them')
    .action(
      action<{ location: number; email?: string; phone?: string; company?: string; title?: string; language?: string; managed?: boolean }>(
        io,
        async (ctx, o, [name]) => {
          const body = {
            name,
            location_id: o.location,
            ...defined({ email: o.email, phone: o.phone, company_name: o.company, title: o.title, language: o.language, managed: o.managed }),
          };
          ctx.print(await ctx.admin().post<object>('/people', body), details);
        },
      ),
    );

  registerKeys(admin, io);
}

function registerKeys(admin: Command, io: Io): void {
  const keys = admin
    .command('keys')
    .description('keys handed over in the dashboard (cards, fobs, phone keys): create, read, set the credential, return; phone keys\' devices');
  keys
    .command('create')
    .description('hand a key over: it is handed_over at once and key.activated fires; a card or fob opens doors by its --credential')
    .argument('<name>', 'key name')
    .requiredOption('--person <id>', 'person id (uuid)')
    .requiredOption('--type <type>', 'card, fob or digital')
    .option('--credential <text>', `${CREDENTIAL_HELP} (default: none, so a card or fob opens nothing; a phone key gets one of its own)`)
    .option('--security-groups <codes>', 'security group codes, comma-separated', list)
    .option('--starts-at <time>', 'ISO 8601 date-time (default: now)')
    .option('--expires-at <time>', 'ISO 8601 date-time (default: no expiry)')
    .option('--managed-in-locking-system', "a fob managed in the locking system's own manager (only its name can change)")
    .action(
      action<{ person: string; type: string; credential?: string; securityGroups?: string[]; startsAt?: string; expiresAt?: string; managedInLockingSystem?: boolean }>(
        io,
        async (ctx, o, [name]) => {
          const body = {
            person_id: o.person,
            type: o.type,
            name,
            ...defined({
              credential: o.credential,
              security_groups: o.securityGroups,
              starts_at: o.startsAt,
              expires_at: o.expiresAt,
              managed_in_locking_system: o.managedInLockingSystem,
            }),
          };
          ctx.print(await ctx.admin().post<object>('/keys', body), details);
        },
      ),
    );
  addGet(keys, io, 'key', (id) => `/keys/${id}`, 'one key, with its credential');
  keys
    .command('update')
    .description('give a key a new credential (the key is sent until the gateways and boards holding it have applied it)')
    .argument('<id>', 'key id', positiveInteger)
    .option('--credential <text>', `${CREDENTIAL_HELP}; or "none": the key presents none`, orNull('none', String))
    .action(
      action<{ credential?: string | typeof NULL }>(io, async (ctx, o, [id]) =>
        ctx.print(await ctx.admin().patch<object>(`/keys/${String(id)}`, changes({ credential: o.credential })), details),
      ),
    );
  keys
    .command('return')
    .description('take a key back: it reads returned and key.revoked fires')
    .argument('<id>', 'key id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().post<object>(`/keys/${String(id)}/return`), details)));

  const devices = keys.command('devices').description("a phone key's devices (passkeys): list, remove");
  devices
    .command('list')
    .description("a phone key's devices: when each was registered and last used")
    .argument('<key-id>', 'key id', positiveInteger)
    .action(
      action(io, async (ctx, _o, [id]) => {
        const found = await ctx.admin().get<Schemas['KeyDeviceList']>(`/keys/${String(id)}/devices`);
        ctx.print(found, ({ data }) => (data.length === 0 ? 'No devices.' : table(data, DEVICE_COLUMNS)));
      }),
    );
  devices
    .command('remove')
    .description('remove a device from a phone key: it opens nothing from its next tap; the key stays')
    .argument('<key-id>', 'key id', positiveInteger)
    .argument('<device-id>', 'device id (devices list)', positiveInteger)
    .action(
      action(io, async (ctx, _o, [keyId, deviceId]) => {
        await ctx.admin().delete(`/keys/${String(keyId)}/devices/${String(deviceId)}`);
        ctx.print({ key_id: keyId, device_id: deviceId, removed: true }, () => `Removed device ${String(deviceId)} from key ${String(keyId)}.`);
      }),
    );
}
