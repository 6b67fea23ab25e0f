// latchkey sandbox …: the parts of a SANDBOX=true service that stand in for the outside world — the movable
// clock, the outbox of SMS and e-mail, the locking-system simulator and the MQTT publish switch
// (docs/spec/operator-api.md, Sandbox), with the operator token.
import { Argument, type Command } from 'commander';
import type { Io } from '../context.ts';
import { action, defined } from '../kit.ts';
import { details, table, type Column } from '../output.ts';
import { durationSeconds, positiveInteger, wholeNumber } from '../parse.ts';
import type { components } from '../operator-openapi.ts';

type Schemas = components['schemas'];
type OutboxEntry = Schemas['SandboxOutboxMessage'];

const OUTBOX_COLUMNS: ReadonlyArray<Column<OutboxEntry>> = [
  ['sent at', (m) => m.sent_at],
  ['channel', (m) => m.channel],
  ['to', (m) => m.to],
  ['subject', (m) => m.subject],
  ['link', (m) => m.link],
];

export function registerSandbox(program: Command, io: Io): void {
  const sandbox = program
    .command('sandbox')
    .description('drive a SANDBOX=true service: clock, outbox, locking-system simulator, MQTT publishes (operator token)');

  sandbox
    .command('clock')
    .description("the service clock's current time")
    .action(action(io, async (ctx) => ctx.print(await ctx.admin().get<Schemas['SandboxClock']>('/sandbox/clock'), (c) => c.now)));

  sandbox
    .command('advance')
    .description('move the service clock forward and wait until all work that became due has run (retries, time-outs, expiry, presence)')
    .argument('<duration>', 'how far: 90s, 15m, 1h, 2d, 1h30m, or seconds', durationSeconds)
    .action(
      action(io, async (ctx, _o, [seconds]) =>
        ctx.print(await ctx.admin().post<Schemas['SandboxClock']>('/sandbox/clock/advance', { seconds }), (c) => `Clock now ${c.now}.`),
      ),
    );

  sandbox
    .command('outbox')
    .description('every SMS and e-mail the sandbox "sent", newest first, with their setup links')
    .option('--to <address>', 'only messages to this phone (E.164) or e-mail address')
    .option('--channel <channel>', 'sms or email')
    .action(
      action<{ to?: string; channel?: string }>(io, async (ctx, o) => {
        const outbox = await ctx.admin().get<Schemas['SandboxOutbox']>('/sandbox/outbox', defined({ to: o.to, channel: o.channel }));
        ctx.print(outbox, ({ data }) => (data.length === 0 ? 'No messages.' : table(data, OUTBOX_COLUMNS)));
      }),
    );

  const lockingSystem = sandbox.command('locking-system').description("the locking-system simulator of an account (accounts with locking_system \"sandbox\")");
  lockingSystem
    .command('set')
    .description('how the simulator answers: accept (default), reject (409 lockingsystem_rejected) or hold (key changes stay sent)')
    .requiredOption('--account <id>', 'account id', positiveInteger)
    .addArgument(new Argument('[mode]', 'accept, reject or hold').choices(['accept', 'reject', 'hold']))
    .option('--delay-ms <ms>', 'make every write wait this long (real time, up to 60000)', wholeNumber)
    .action(
      action<{ account: number; delayMs?: number }>(io, async (ctx, o, [mode]) => {
        const body = { account_id: o.account, ...defined({ mode: mode as string | undefined, delay_ms: o.delayMs }) };
        ctx.print(await ctx.admin().put<Schemas['SandboxLockingSystem']>('/sandbox/locking_system', body), details);
      }),
    );
  lockingSystem
    .command('confirm')
    .description('confirm every held key change of an account (sent to handed_over, key.activated)')
    .requiredOption('--account <id>', 'account id', positiveInteger)
    .action(
      action<{ account: number }>(io, async (ctx, o) =>
        ctx.print(await ctx.admin().post<Schemas['LockingSystemConfirmed']>('/sandbox/locking_system/confirm', { account_id: o.account }), (r) => `Confirmed ${r.confirmed} key changes.`),
      ),
    );

  sandbox
    .command('mqtt')
    .description('make every unlock publish fail as if the broker refused it (fail), or work again (accept)')
    .addArgument(new Argument('<publish>', 'accept or fail').choices(['accept', 'fail']))
    .action(action(io, async (ctx, _o, [publish]) => ctx.print(await ctx.admin().put<Schemas['SandboxMqtt']>('/sandbox/mqtt', { publish }), (r) => `MQTT publishes: ${r.publish}.`)));
}
