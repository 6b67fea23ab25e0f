// latchkey people list|get|create|update|delete: the public API's people (docs/spec/public-api-v1.md, People).
import type { Command } from 'commander';
import type { Person, PersonCreate, PersonUpdate, PersonWithKeys } from '@latchkey/sdk';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { action, addList, changes, defined } from '../kit.ts';
import { details, ref, table, type Column } from '../output.ts';
import { list, positiveInteger } from '../parse.ts';
import { KEY_COLUMNS } from './keys.ts';

export const PERSON_COLUMNS: ReadonlyArray<Column<Person>> = [
  ['id', (p) => p.id],
  ['name', (p) => p.name],
  ['email', (p) => p.email],
  ['phone', (p) => p.phone],
  ['company', (p) => p.company_name],
  ['location', (p) => ref(p.location)],
];

/** The fields `--clear` empties (sent as null), by flag name; a name is required. */
const CLEARABLE = new Map([
  ['email', 'email'],
  ['phone', 'phone'],
  ['company', 'company_name'],
  ['title', 'title'],
  ['language', 'language'],
]);

interface PersonFlags {
  name?: string;
  email?: string;
  phone?: string;
  company?: string;
  title?: string;
  language?: string;
  location?: number;
}

/** The person fields shared by create and update. */
function withPersonFlags(command: Command): Command {
  return command
    .option('--email <email>', 'e-mail address')
    .option('--phone <phone>', 'phone in international format (+ and the country code)')
    .option('--company <name>', 'company name')
    .option('--title <title>', 'job title')
    .option('--language <code>', 'language code, e.g. en or en-GB')
    .option('--location <id>', "location (department) id; default: the API key's location", positiveInteger);
}

function personBody(flags: PersonFlags): Partial<PersonCreate> {
  return defined({
    name: flags.name,
    email: flags.email,
    phone: flags.phone,
    company_name: flags.company,
    title: flags.title,
    language: flags.language,
    location_id: flags.location,
  });
}

function printPerson(person: Person | PersonWithKeys): string {
  const { keys, ...fields } = person as PersonWithKeys;
  const keyTable = keys === undefined ? '' : keys.length === 0 ? '\n\nNo keys.' : `\n\nKeys:\n${table(keys, KEY_COLUMNS.filter(([h]) => h !== 'person'))}`;
  return details(fields) + keyTable;
}

export function registerPeople(program: Command, io: Io): void {
  const people = program.command('people').description('people: list, read, create, update, delete (API key)');

  addList<Person, { email?: string; phone?: string }>(
    people
      .command('list')
      .description('list people in the API key\'s scope, as a table (--json: the page envelope)')
      .option('--email <email>', 'only the person with this e-mail (exact, any case)')
      .option('--phone <phone>', 'only the person with this phone (any format)'),
    io,
    {
      noun: 'people',
      columns: PERSON_COLUMNS,
      pages: (ctx, o) => {
        const lk = ctx.sdk();
        return (limit, cursor) => lk.people.list({ ...defined({ email: o.email, phone: o.phone }), limit, cursor }).page();
      },
    },
  );

  people
    .command('get')
    .description('one person with the keys they hold in scope')
    .argument('<id>', 'person id (uuid)')
    .action(
      action(io, async (ctx, _o, [id]) => {
        ctx.print(await ctx.sdk().people.get(id as string), printPerson);
      }),
    );

  withPersonFlags(
    people
      .command('create')
      .description('create a person; one with the same phone or e-mail in scope is returned unchanged instead')
      .argument('<name>', 'full name')
      .option('--idempotency-key <key>', 'Idempotency-Key to send (default: a random one)'),
  ).action(
    action<PersonFlags & { idempotencyKey?: string }>(io, async (ctx, o, [name]) => {
      const body = { ...personBody(o), name: name as string } as PersonCreate;
      const person = await ctx.sdk().people.create(body, defined({ idempotencyKey: o.idempotencyKey }));
      ctx.print(person, printPerson);
    }),
  );

  withPersonFlags(
    people
      .command('update')
      .description('change a person: only the fields given change')
      .argument('<id>', 'person id (uuid)')
      .option('--name <name>', 'full name')
      .option('--clear <fields>', 'fields to empty, comma-separated: email,phone,company,title,language', list),
  ).action(
    action<PersonFlags & { clear?: string[] }>(io, async (ctx, o, [id]) => {
      const cleared: Record<string, null> = {};
      for (const field of o.clear ?? []) {
        const name = CLEARABLE.get(field);
        if (name === undefined) throw new UsageError(`--clear: ${field} cannot be emptied (${[...CLEARABLE.keys()].join(', ')} can).`);
        cleared[name] = null;
      }
      const body = changes({ ...personBody(o), ...cleared });
      ctx.print(await ctx.sdk().people.update(id as string, body as PersonUpdate), printPerson);
    }),
  );

  people
    .command('delete')
    .description('delete a person (their keys are revoked)')
    .argument('<id>', 'person id (uuid)')
    .action(
      action(io, async (ctx, _o, [id]) => {
        await ctx.sdk().people.delete(id as string);
        ctx.print({ id, deleted: true }, () => `Deleted person ${String(id)}.`);
      }),
    );
}
