// latchkey admin controllers: UHPPOTE boards of accounts whose locking system is "uhppote" (README "Real
// controllers"), set up, mapped to locks and reconciled through the operator API, with the operator token.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Io } from '../context.ts';
import { action, addDelete, addGet, addList, changes, defined, type Page } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { doorLocks, positiveInteger } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type Controller = Schemas['Controller'];
type DoorLock = { door: number; lock_id: number };

const CONTROLLER_COLUMNS: ReadonlyArray<Column<Controller>> = [
  ['id', (c) => c.id],
  ['name', (c) => c.name],
  ['serial', (c) => c.serial_number],
  ['address', (c) => `${c.address}:${c.port}/${c.transport}`],
  ['location', (c) => c.location_id],
  ['doors', (c) => c.door_locks.map((d) => `${d.door}=${d.lock_id}`)],
  ['online', (c) => c.online],
  ['last seen', (c) => c.last_seen_at],
  ['last error', (c) => c.last_error],
];

function doorCount(value: string): number {
  if (!['1', '2', '4'].includes(value)) throw new InvalidArgumentError('expected 1, 2 or 4.');
  return Number(value);
}

function port(value: string): number {
  const n = positiveInteger(value);
  if (n > 65535) throw new InvalidArgumentError('expected a port, 1 to 65535.');
  return n;
}

interface ControllerFlags {
  name?: string;
  address?: string;
  port?: number;
  transport?: string;
  doorLocks?: DoorLock[];
}

/** The fields of create and update. */
function withControllerFlags(command: Command, create: boolean): Command {
  return command
    .option('--port <port>', `the board's UDP/TCP port${create ? ' (default 60000)' : ''}`, port)
    .addOption(new Option('--transport <transport>', `udp, or tcp on boards whose firmware takes it${create ? ' (default udp)' : ''}`).choices(['udp', 'tcp']))
    .option(
      '--door-locks <door=lock,…>',
      `which lock each door of the board is, e.g. 1=7,2=8${create ? '' : '; replaces the mapping ("" for none)'} (a lock's windows are read in the controller's time zone)`,
      doorLocks,
    );
}

function controllerBody(o: ControllerFlags): Record<string, unknown> {
  return { name: o.name, address: o.address, port: o.port, transport: o.transport, door_locks: o.doorLocks };
}

export function registerControllers(admin: Command, io: Io): void {
  const controllers = admin
    .command('controllers')
    .description('UHPPOTE controller boards (accounts with locking system uhppote): list, create, read, update, delete, reconcile');

  addList<Controller, { location?: number; account?: number }>(
    controllers
      .command('list')
      .description('controllers, with presence, clock, listener and the last reconciliation (--json)')
      .option('--location <id>', 'only those at this location or below', positiveInteger)
      .option('--account <id>', 'only those of this account', positiveInteger),
    io,
    {
      noun: 'controllers',
      columns: CONTROLLER_COLUMNS,
      pages: (ctx, o) => (limit, cursor) => ctx.admin().get<Page<Controller>>('/controllers', { limit, cursor, location_id: o.location, account_id: o.account }),
    },
  );

  withControllerFlags(
    controllers
      .command('create')
      .description('set up a board by serial number and address; it is polled at once (presence, clock, listener)')
      .argument('<name>', 'controller name')
      .requiredOption('--location <id>', 'location id (its time zone is the board\'s wall clock)', positiveInteger)
      .requiredOption('--serial-number <n>', "the board's serial number (on its label; uhppote-cli get-devices)", positiveInteger)
      .requiredOption('--address <ipv4>', 'the fixed IPv4 address the board answers at')
      .option('--doors <n>', 'doors on the board: 1, 2 or 4 (default 4)', doorCount),
    true,
  ).action(
    action<ControllerFlags & { location: number; serialNumber: number; address: string; doors?: number }>(io, async (ctx, o, [name]) => {
      const body = { location_id: o.location, serial_number: o.serialNumber, doors: o.doors, ...controllerBody({ ...o, name: name as string }) };
      ctx.print(await ctx.admin().post<object>('/controllers', defined(body)), details);
    }),
  );

  addGet(controllers, io, 'controller', (id) => `/controllers/${id}`, 'one controller, with its last reconciliation');

  withControllerFlags(
    controllers
      .command('update')
      .description('rename a controller, change its address or map its doors anew: only the fields given change')
      .argument('<id>', 'controller id', positiveInteger)
      .option('--name <name>', 'controller name')
      .option('--address <ipv4>', 'the fixed IPv4 address the board answers at'),
    false,
  ).action(action<ControllerFlags>(io, async (ctx, o, [id]) => ctx.print(await ctx.admin().patch<object>(`/controllers/${String(id)}`, changes(controllerBody(o))), details)));

  addDelete(controllers, io, {
    noun: 'controller',
    path: (id) => `/controllers/${id}`,
    description: 'delete a controller that no lock (on its doors) or access-log entry refers to, and whose board holds no card Latchkey wrote',
    force: 'delete it although cards Latchkey wrote may still be on the board: only for a board gone for good (broken, replaced)',
  });

  controllers
    .command('reconcile')
    .description("read the board's card list and repair it now; prints what was added, changed and removed, and why")
    .argument('<id>', 'controller id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().post<object>(`/controllers/${String(id)}/reconcile`), details)));
}
