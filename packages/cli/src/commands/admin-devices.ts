// latchkey admin locks|gateways|people|keys: locks and their gateways, service-managed people and dashboard
// hand-overs of cards and fobs, through the operator API (docs/spec/operator-api.md), with the operator token.
import type { Command } from 'commander';
import type { Context, Io } from '../context.ts';
import { action, defined, printPage, readPages, withListFlags, type ListFlags, type Page } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { list, positiveInteger } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type GatewaySummary = Schemas['GatewaySummary'];
/** A gateway as created or after a rotation: with its MQTT password, shown only then. */
type GatewayWithPassword = Schemas['Gateway'];
type OperatorLock = Schemas['Lock'];

const LOCK_COLUMNS: ReadonlyArray<Column<OperatorLock>> = [
  ['id', (l) => l.id],
  ['name', (l) => l.name],
  ['place', (l) => l.place],
  ['location', (l) => `${l.location.name} (${l.location.id})`],
  ['online', (l) => (l.online === null ? 'not remote' : l.online)],
  ['groups', (l) => l.security_groups.join(', ')],
];

const GATEWAY_COLUMNS: ReadonlyArray<Column<GatewaySummary>> = [
  ['id', (g) => g.id],
  ['name', (g) => g.name],
  ['location', (g) => g.location_id],
  ['online', (g) => g.online],
  ['last seen', (g) => g.last_seen_at],
  ['client id', (g) => g.mqtt.client_id],
];

export function registerDevices(admin: Command, io: Io): void {
  const locks = admin.command('locks').description('locks: list, create');
  withListFlags(
    locks
      .command('list')
      .description('locks of every account, or of one (--account) or a location and below (--location)')
      .option('--account <id>', 'only the locks of this account', positiveInteger)
      .option('--location <id>', 'only the locks at this location and below', positiveInteger),
  ).action(
    action<ListFlags & { account?: number; location?: number }>(io, async (ctx, o) => {
      const client = ctx.admin();
      const page = await readPages((limit, cursor) => client.get<Page<OperatorLock>>('/locks', { limit, cursor, account_id: o.account, location_id: o.location }), o);
      printPage(ctx, page, LOCK_COLUMNS, 'locks');
    }),
  );
  locks
    .command('create')
    .description('create a lock; with --gateway it is remote (can be unlocked through the API)')
    .argument('<name>', 'lock name')
    .requiredOption('--location <id>', 'location id', positiveInteger)
    .option('--place <text>', 'where it is, e.g. Lobby')
    .option('--serial-number <text>', 'serial number')
    .option('--provider <name>', 'kind of lock hardware (default: sandbox)')
    .option('--gateway <id>', 'the gateway it is on', positiveInteger)
    .option('--security-groups <codes>', 'security group codes of its location or above, comma-separated', list)
    .action(
      action<{ location: number; place?: string; serialNumber?: string; provider?: string; gateway?: number; securityGroups?: string[] }>(
        io,
        async (ctx, o, [name]) => {
          const body = {
            location_id: o.location,
            name,
            ...defined({ place: o.place, serial_number: o.serialNumber, provider: o.provider, gateway_id: o.gateway, security_groups: o.securityGroups }),
          };
          ctx.print(await ctx.admin().post<object>('/locks', body), details);
        },
      ),
    );

  registerGateways(admin, io);

  admin
    .command('people')
    .description('people: create (service-managed ones too)')
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

  const keys = admin.command('keys').description('keys handed over in the dashboard (cards, fobs, phone keys): create, return');
  keys
    .command('create')
    .description('hand a key over: it is handed_over at once and key.activated fires')
    .argument('<name>', 'key name')
    .requiredOption('--person <id>', 'person id (uuid)')
    .requiredOption('--type <type>', 'card, fob or digital')
    .option('--security-groups <codes>', 'security group codes, comma-separated', list)
    .option('--starts-at <time>', 'ISO 8601 date-time (default: now)')
    .option('--expires-at <time>', 'ISO 8601 date-time (default: no expiry)')
    .option('--managed-in-locking-system', "a fob managed in the locking system's own manager (only its name can change)")
    .action(
      action<{ person: string; type: string; securityGroups?: string[]; startsAt?: string; expiresAt?: string; managedInLockingSystem?: boolean }>(
        io,
        async (ctx, o, [name]) => {
          const body = {
            person_id: o.person,
            type: o.type,
            name,
            ...defined({
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
  keys
    .command('return')
    .description('take a key back: it reads returned and key.revoked fires')
    .argument('<id>', 'key id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().post<object>(`/keys/${String(id)}/return`), details)));
}

function registerGateways(admin: Command, io: Io): void {
  const gateways = admin.command('gateways').description('gateways: create, list, read, rotate the password, delete');

  const printCredentials = (gateway: GatewayWithPassword, ctx: Context) => {
    ctx.print(gateway, details);
    ctx.note(`The MQTT password is shown only now: keep it. Try it: latchkey gateway simulate --id ${gateway.id} --mqtt-url ${gateway.mqtt.url} --password …`);
  };

  gateways
    .command('create')
    .description('create a gateway; its MQTT password is printed only this once')
    .argument('<name>', 'gateway name')
    .requiredOption('--location <id>', 'location id', positiveInteger)
    .action(
      action<{ location: number }>(io, async (ctx, o, [name]) =>
        printCredentials(await ctx.admin().post<GatewayWithPassword>('/gateways', { location_id: o.location, name }), ctx),
      ),
    );

  withListFlags(gateways.command('list').description('gateways, with presence; never their passwords').option('--location <id>', 'only this location', positiveInteger)).action(
    action<ListFlags & { location?: number }>(io, async (ctx, o) => {
      const client = ctx.admin();
      const page = await readPages((limit, cursor) => client.get<Page<GatewaySummary>>('/gateways', { limit, cursor, location_id: o.location }), o);
      printPage(ctx, page, GATEWAY_COLUMNS, 'gateways');
    }),
  );

  gateways
    .command('get')
    .description('one gateway')
    .argument('<id>', 'gateway id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().get<object>(`/gateways/${String(id)}`), details)));

  gateways
    .command('rotate-password')
    .description('give a gateway a new MQTT password (printed only this once); the old one stops working at once')
    .argument('<id>', 'gateway id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => printCredentials(await ctx.admin().post<GatewayWithPassword>(`/gateways/${String(id)}/rotate_password`), ctx)));

  gateways
    .command('delete')
    .description('delete a gateway that no lock, log entry or command refers to')
    .argument('<id>', 'gateway id', positiveInteger)
    .action(
      action(io, async (ctx, _o, [id]) => {
        await ctx.admin().delete(`/gateways/${String(id)}`);
        ctx.print({ id, deleted: true }, () => `Deleted gateway ${String(id)}.`);
      }),
    );
}
