// latchkey admin locks|gateways: locks and the gateways they are on, through the operator API
// (docs/spec/operator-api.md), with the operator token. UHPPOTE boards: admin-controllers.ts.
import type { Command } from 'commander';
import type { Context, Io } from '../context.ts';
import { action, addDelete, addGet, addList, changes, defined, type Page } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { boolean, list, orNull, positiveInteger, type NULL } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type GatewaySummary = Schemas['GatewaySummary'];
/** A gateway as created or after a rotation: with its MQTT password, shown only then. */
type GatewayWithPassword = Schemas['Gateway'];
type OperatorLock = Schemas['OperatorLock'];

const LOCK_COLUMNS: ReadonlyArray<Column<OperatorLock>> = [
  ['id', (l) => l.id],
  ['name', (l) => l.name],
  ['place', (l) => l.place],
  ['location', (l) => `${l.location.name} (${l.location.id})`],
  ['online', (l) => (l.online === null ? 'not remote' : l.online)],
  ['gateway', (l) => l.gateway_id],
  ['groups', (l) => l.security_groups.join(', ')],
];

const GATEWAY_COLUMNS: ReadonlyArray<Column<GatewaySummary>> = [
  ['id', (g) => g.id],
  ['name', (g) => g.name],
  ['location', (g) => g.location_id],
  ['online', (g) => g.online],
  ['last seen', (g) => g.last_seen_at],
  ['last refused', (g) => g.last_refused_at],
  ['client id', (g) => g.mqtt.client_id],
];

export function registerDevices(admin: Command, io: Io): void {
  const locks = admin.command('locks').description('locks: list, create, update');
  addList<OperatorLock, { account?: number; location?: number }>(
    locks
      .command('list')
      .description('locks of every account, or of one (--account) or a location and below (--location)')
      .option('--account <id>', 'only the locks of this account', positiveInteger)
      .option('--location <id>', 'only the locks at this location and below', positiveInteger),
    io,
    {
      noun: 'locks',
      columns: LOCK_COLUMNS,
      pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<OperatorLock>>('/locks', { limit, cursor, account_id: o.account, location_id: o.location }),
    },
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

  locks
    .command('update')
    .description('change a lock: only the fields given change')
    .argument('<id>', 'lock id', positiveInteger)
    .option('--name <name>', 'lock name')
    .option('--place <text>', 'where it is, e.g. Lobby')
    .option('--gateway <id>', 'the gateway it is on (a gateway of its account), or "none": not remote any more', orNull('none', positiveInteger))
    .option('--security-groups <codes>', 'security group codes of its location or above, comma-separated; replaces the list ("" for none)', list)
    .action(
      action<{ name?: string; place?: string; gateway?: number | typeof NULL; securityGroups?: string[] }>(io, async (ctx, o, [id]) => {
        const body = changes({ name: o.name, place: o.place, gateway_id: o.gateway, security_groups: o.securityGroups });
        ctx.print(await ctx.admin().patch<object>(`/locks/${String(id)}`, body), details);
      }),
    );

  registerGateways(admin, io);
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

  addList<GatewaySummary, { location?: number; account?: number; online?: boolean }>(
    gateways
      .command('list')
      .description('gateways, with presence; never their passwords')
      .option('--location <id>', 'only this location', positiveInteger)
      .option('--account <id>', 'only this account (every location of it)', positiveInteger)
      .option('--online <true|false>', 'only those online (true) or offline (false)', boolean),
    io,
    {
      noun: 'gateways',
      columns: GATEWAY_COLUMNS,
      pages: (ctx, o) => (limit, cursor) =>
        ctx.admin().get<Page<GatewaySummary>>('/gateways', { limit, cursor, location_id: o.location, account_id: o.account, online: o.online }),
    },
  );

  addGet(gateways, io, 'gateway', (id) => `/gateways/${id}`);

  gateways
    .command('rotate-password')
    .description('give a gateway a new MQTT password (printed only this once); the old one stops working at once')
    .argument('<id>', 'gateway id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => printCredentials(await ctx.admin().post<GatewayWithPassword>(`/gateways/${String(id)}/rotate_password`), ctx)));

  addDelete(gateways, io, { noun: 'gateway', path: (id) => `/gateways/${id}`, description: 'delete a gateway that no lock, log entry or command refers to' });
}
