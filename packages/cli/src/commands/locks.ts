// latchkey locks list|get|command, latchkey security-groups list and latchkey unlock: the catalogue and remote
// unlock (docs/spec/public-api-v1.md, "Locks and security groups").
import type { Command } from 'commander';
import type { Lock, LockCommand, SecurityGroup } from '@latchkey/sdk';
import type { Io } from '../context.ts';
import { UnlockFailed } from '../failures.ts';
import { action, addList, defined } from '../kit.ts';
import { details, ref, type Column } from '../output.ts';
import { boolean, durationMs, positiveInteger } from '../parse.ts';

const LOCK_COLUMNS: ReadonlyArray<Column<Lock>> = [
  ['id', (l) => l.id],
  ['name', (l) => l.name],
  ['place', (l) => l.place],
  ['online', (l) => l.online],
  ['security groups', (l) => l.security_groups],
  ['location', (l) => ref(l.location)],
];

const GROUP_COLUMNS: ReadonlyArray<Column<SecurityGroup>> = [
  ['id', (g) => g.id],
  ['code', (g) => g.code],
  ['title', (g) => g.title],
  ['default', (g) => g.is_default],
  ['description', (g) => g.description],
];

export function registerLocks(program: Command, io: Io): void {
  const locks = program.command('locks').description('locks: list, read, read an unlock command (API key)');

  addList<Lock, { location?: number }>(
    locks
      .command('list')
      .description('locks in scope')
      .option('--location <id>', 'only the locks of this location and its departments', positiveInteger),
    io,
    {
      noun: 'locks',
      columns: LOCK_COLUMNS,
      pages: (ctx, o) => {
        const lk = ctx.sdk();
        return (limit, cursor) => lk.locks.list({ ...defined({ location_id: o.location }), limit, cursor }).page();
      },
    },
  );

  locks
    .command('get')
    .description('one lock')
    .argument('<id>', 'lock id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.sdk().locks.get(id as number), details)));

  locks
    .command('command')
    .description('an unlock command of a lock, by its id (as `unlock` printed it)')
    .argument('<lock>', 'lock id', positiveInteger)
    .argument('<command>', 'command id (uuid)')
    .action(action(io, async (ctx, _o, [lock, command]) => ctx.print(await ctx.sdk().locks.command(lock as number, command as string), details)));

  const groups = program.command('security-groups').description('security groups (access profiles): list (API key)');
  addList<SecurityGroup, { default?: boolean }>(
    groups
      .command('list')
      .description('security groups in scope')
      .option('--default <bool>', 'only default (true) or non-default (false) groups', boolean),
    io,
    {
      noun: 'security groups',
      columns: GROUP_COLUMNS,
      pages: (ctx, o) => {
        const lk = ctx.sdk();
        return (limit, cursor) => lk.securityGroups.list({ ...defined({ is_default: o.default }), limit, cursor }).page();
      },
    },
  );

  program
    .command('unlock')
    .description('open a remote lock; with --wait, until the gateway confirms (exit 4 when it fails or times out)')
    .argument('<lock>', 'lock id', positiveInteger)
    .option('--wait', 'wait for the outcome: confirmed, failed or timed_out')
    .option('--timeout <duration>', "the longest wait, e.g. 45s (default: the command's timeout_seconds + 30s)", durationMs)
    .option('--poll <duration>', 'time between two reads of the command', durationMs, 500)
    .action(
      action<{ wait?: boolean; timeout?: number; poll: number }>(io, async (ctx, o, [lock]) => {
        const options = { wait: o.wait === true, pollIntervalMs: o.poll, ...defined({ timeoutMs: o.timeout }) };
        const command = await ctx.sdk().locks.unlock(lock as number, options);
        ctx.print(command, (c) => describe(c, o.wait === true));
        if (command.status === 'failed' || command.status === 'timed_out') {
          throw new UnlockFailed(`unlock of lock ${command.lock_id} ${command.status}${command.error ? `: ${command.error.message} (${command.error.code})` : ''}`);
        }
      }),
    );
}

function describe(command: LockCommand, waited: boolean): string {
  const line = `Lock ${command.lock_id}: ${command.status} (command ${command.id})`;
  return waited || command.status !== 'published' ? line : `${line}; --wait to see the outcome`;
}
