// latchkey keys … and latchkey invitations …: phone keys issued through setup links, every key in scope, and
// the invitations behind them (docs/spec/public-api-v1.md, Keys and Invitations).
import type { Command } from 'commander';
import type { Invitation, InvitationResend, KeyCreate, KeyUpdate, PersonWithKeys } from '@latchkey/sdk';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { action, addList, changes, defined } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { list, positiveInteger } from '../parse.ts';

/** A key as listed, or as embedded in a person (PersonKey: the same fields, without invitation_id). */
type KeyRow = PersonWithKeys['keys'][number];

export const KEY_COLUMNS: ReadonlyArray<Column<KeyRow>> = [
  ['id', (k) => k.id],
  ['name', (k) => k.name],
  ['type', (k) => k.type],
  ['state', (k) => k.state],
  ['person', (k) => k.person_id],
  ['security groups', (k) => k.security_groups],
  ['starts', (k) => k.starts_at],
  ['expires', (k) => k.expires_at],
];

const INVITATION_COLUMNS: ReadonlyArray<Column<Invitation>> = [
  ['id', (i) => i.id],
  ['state', (i) => i.state],
  ['person', (i) => i.person_id],
  ['name', (i) => i.name],
  ['key', (i) => i.key_id],
  ['security groups', (i) => i.security_groups],
  ['expires', (i) => i.expires_at],
  ['sent', (i) => [i.sent.sms_at ? 'sms' : null, i.sent.email_at ? 'email' : null].filter(Boolean)],
];

const CHANNELS = 'sms, email or both';

export function registerKeys(program: Command, io: Io): void {
  const keys = program.command('keys').description('keys: list, read, issue (setup link), update, revoke (API key)');

  addList<KeyRow, { person?: string; state?: string; securityGroup?: string }>(
    keys
      .command('list')
      .description('every key in scope, cards and fobs included')
      .option('--person <id>', 'only the keys of this person (uuid)')
      .option('--state <state>', 'planning, sent, handed_over, returned or other')
      .option('--security-group <code>', 'only keys with this security group'),
    io,
    {
      noun: 'keys',
      columns: KEY_COLUMNS,
      pages: (ctx, o) => {
        const lk = ctx.sdk();
        const filters = defined({ person_id: o.person, state: o.state, security_group: o.securityGroup });
        return (limit, cursor) => lk.keys.list({ ...filters, limit, cursor } as Parameters<typeof lk.keys.list>[0]).page();
      },
    },
  );

  keys
    .command('get')
    .description('one key')
    .argument('<id>', 'key id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.sdk().keys.get(id as number), details)));

  keys
    .command('create')
    .description('issue a phone key: sends the person a setup link and answers the invitation (the key appears once activated)')
    .requiredOption('--person <id>', 'person id (uuid)')
    .requiredOption('--security-groups <codes>', 'security group codes, comma-separated', list)
    .option('--name <name>', 'key name (default: "Phone key")')
    .option('--starts-at <time>', 'ISO 8601 date-time (default: now)')
    .option('--expires-at <time>', 'ISO 8601 date-time (default: no expiry)')
    .option('--channel <channel>', `how the link is sent: ${CHANNELS}`)
    .option('--idempotency-key <key>', 'Idempotency-Key to send (default: a random one)')
    .action(
      action<{ person: string; securityGroups: string[]; name?: string; startsAt?: string; expiresAt?: string; channel?: string; idempotencyKey?: string }>(
        io,
        async (ctx, o) => {
          const body = {
            person_id: o.person,
            security_groups: o.securityGroups,
            ...defined({ name: o.name, starts_at: o.startsAt, expires_at: o.expiresAt, channel: o.channel }),
          } as KeyCreate;
          const created = await ctx.sdk().keys.create(body, defined({ idempotencyKey: o.idempotencyKey }));
          ctx.print(created, (c) => `${details(c)}\n\nSetup link sent; the key appears once the person activates it.`);
        },
      ),
    );

  keys
    .command('update')
    .description('change a key: only the fields given change (anything but a rename goes to the locking system again)')
    .argument('<id>', 'key id', positiveInteger)
    .option('--name <name>', 'key name')
    .option('--security-groups <codes>', 'security group codes, comma-separated', list)
    .option('--starts-at <time>', 'ISO 8601 date-time')
    .option('--expires-at <time>', 'ISO 8601 date-time')
    .option('--no-expiry', 'remove the expiry')
    .action(
      action<{ name?: string; securityGroups?: string[]; startsAt?: string; expiresAt?: string; expiry: boolean }>(io, async (ctx, o, [id]) => {
        if (o.expiresAt !== undefined && !o.expiry) throw new UsageError('--expires-at and --no-expiry exclude each other.');
        const body = changes({
          name: o.name,
          security_groups: o.securityGroups,
          starts_at: o.startsAt,
          expires_at: o.expiry ? o.expiresAt : null,
        });
        ctx.print(await ctx.sdk().keys.update(id as number, body as KeyUpdate), details);
      }),
    );

  keys
    .command('revoke')
    .description('revoke a key: it expires at once and leaves every list')
    .argument('<id>', 'key id', positiveInteger)
    .action(
      action(io, async (ctx, _o, [id]) => {
        await ctx.sdk().keys.revoke(id as number);
        ctx.print({ id, revoked: true }, () => `Revoked key ${String(id)}.`);
      }),
    );

  registerInvitations(program, io);
}

function registerInvitations(program: Command, io: Io): void {
  const invitations = program.command('invitations').description('invitations (setup links): list, read, cancel, resend (API key)');

  addList<Invitation, { person?: string; state?: string }>(
    invitations
      .command('list')
      .description('invitations in scope, cancelled ones included')
      .option('--person <id>', 'only the invitations of this person (uuid)')
      .option('--state <state>', 'pending, activated, expired or cancelled'),
    io,
    {
      noun: 'invitations',
      columns: INVITATION_COLUMNS,
      pages: (ctx, o) => {
        const lk = ctx.sdk();
        const filters = defined({ person_id: o.person, state: o.state });
        return (limit, cursor) => lk.invitations.list({ ...filters, limit, cursor } as Parameters<typeof lk.invitations.list>[0]).page();
      },
    },
  );

  invitations
    .command('get')
    .description('one invitation')
    .argument('<id>', 'invitation id', positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.sdk().invitations.get(id as number), details)));

  invitations
    .command('cancel')
    .description('cancel a pending invitation: its link can no longer be activated')
    .argument('<id>', 'invitation id', positiveInteger)
    .action(
      action(io, async (ctx, _o, [id]) => {
        await ctx.sdk().invitations.cancel(id as number);
        ctx.print({ id, cancelled: true }, () => `Cancelled invitation ${String(id)}.`);
      }),
    );

  invitations
    .command('resend')
    .description('send the setup link of a pending invitation again (uses one unit of the phone-key allowance)')
    .argument('<id>', 'invitation id', positiveInteger)
    .option('--channel <channel>', `${CHANNELS} (default: sms)`)
    .action(
      action<{ channel?: string }>(io, async (ctx, o, [id]) => {
        const body = defined({ channel: o.channel }) as InvitationResend;
        ctx.print(await ctx.sdk().invitations.resend(id as number, body), details);
      }),
    );
}
