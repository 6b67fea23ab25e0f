// What every command is made of: an action that gets the run's context, the list flags and the printing of a
// page, so each command file holds only its own flags and columns.
import type { Command, OptionValues } from 'commander';
import { contextOf, type Context, type Io } from './context.ts';
import { UsageError } from './failures.ts';
import { details, table, type Column } from './output.ts';
import { NULL, positiveInteger } from './parse.ts';

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

/**
 * A commander action: `run(ctx, options, args)` with the command's own options typed by the caller and its
 * processed arguments. Errors propagate to main(), which prints them and picks the exit code.
 */
export function action<O extends OptionValues>(io: Io, run: (ctx: Context, options: O, args: unknown[], command: Command) => Promise<void>) {
  return async (...params: unknown[]): Promise<void> => {
    const command = params[params.length - 1] as Command;
    await run(contextOf(command, io), command.opts<O>(), command.processedArgs as unknown[], command);
  };
}

/** An action on the saved profiles themselves: its context reads flags and the environment, not a profile. */
export function profileAction<O extends OptionValues>(io: Io, run: (ctx: Context, options: O, args: unknown[], command: Command) => Promise<void>) {
  return async (...params: unknown[]): Promise<void> => {
    const command = params[params.length - 1] as Command;
    await run(contextOf(command, io, false), command.opts<O>(), command.processedArgs as unknown[], command);
  };
}

export interface ListFlags {
  limit: number;
  cursor?: string;
  all?: boolean;
}

/** --limit, --cursor and --all on a list command. */
export function withListFlags(command: Command): Command {
  return command
    .option('--limit <n>', 'at most n items (read in pages of up to 200)', positiveInteger, 50)
    .option('--cursor <cursor>', 'start at this next_cursor of an earlier list')
    .option('--all', 'every item, following next_cursor to the last page');
}

/**
 * Reads pages until `limit` items (or every page with --all). Page sizes are chosen so that reading stops at
 * the end of a page, where `next_cursor` continues exactly.
 */
export async function readPages<T>(read: (limit: number, cursor: string | undefined) => Promise<Page<T>>, flags: ListFlags): Promise<Page<T>> {
  const wanted = flags.all ? Number.POSITIVE_INFINITY : flags.limit;
  const data: T[] = [];
  let cursor = flags.cursor;
  let next: string | null;
  do {
    const page = await read(Math.min(200, wanted - data.length), cursor);
    data.push(...page.data);
    next = page.next_cursor;
    cursor = next ?? undefined;
  } while (next !== null && data.length < wanted);
  return { data, next_cursor: next };
}

/** A page as a table (or its JSON envelope), with a hint on stderr when more items follow. */
export function printPage<T>(ctx: Context, page: Page<T>, columns: ReadonlyArray<Column<T>>, noun: string): void {
  ctx.print(page, ({ data }) => (data.length === 0 ? `No ${noun}.` : table(data, columns)));
  if (page.next_cursor !== null && !ctx.json) ctx.note(`More ${noun}: --cursor ${page.next_cursor} (or --all).`);
}

/** Reads one page of a list: `limit` items at most, from `cursor` (undefined: the first page). */
export type PageReader<T> = (limit: number, cursor: string | undefined) => Promise<Page<T>>;

/**
 * A list command: `command` (its name, description and filter flags) gets --limit, --cursor and --all, and its
 * action reads the pages (readPages) and prints them as a table of `columns` (printPage). `pages` is called once
 * per run, with the options and arguments, and returns the reader of one page, so filters are worked out once.
 */
export function addList<T, O extends OptionValues = Record<string, never>>(
  command: Command,
  io: Io,
  options: { noun: string; columns: ReadonlyArray<Column<T>>; pages: (ctx: Context, o: O & ListFlags, args: unknown[]) => PageReader<T> },
): Command {
  return withListFlags(command).action(
    action<O & ListFlags>(io, async (ctx, o, args) => printPage(ctx, await readPages(options.pages(ctx, o, args), o), options.columns, options.noun)),
  );
}

/** A field's value in a body: NULL (a flag's word for null, parse.ts) is null. */
type Sent<V> = V extends typeof NULL ? null : V;

/**
 * Only the fields that were given: an update sends what the user asked to change and nothing else. A flag's
 * word for null (`--gateway none`: NULL) is sent as null.
 */
export function defined<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Sent<T[K]> } {
  return Object.fromEntries(
    Object.entries(fields)
      .filter(([, value]) => value !== undefined)
      .map(([name, value]) => [name, value === NULL ? null : value]),
  ) as { [K in keyof T]?: Sent<T[K]> };
}

/** The body of an update: the fields given, at least one (else a usage error before anything is sent). */
export function changes<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Sent<T[K]> } {
  const body = defined(fields);
  if (Object.keys(body).length === 0) throw new UsageError('nothing to change: give at least one field (see --help).');
  return body;
}

/** `<group> get <id>`: one object read by id (`path` is relative to /admin/v1), as `field  value` lines. */
export function addGet(group: Command, io: Io, noun: string, path: (id: number) => string, description = `one ${noun}`): Command {
  return group
    .command('get')
    .description(description)
    .argument('<id>', `${noun} id`, positiveInteger)
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.admin().get<object>(path(id as number)), details)));
}

/**
 * `<group> <verb> <id>`: a DELETE answered 204, printed as `{ id, <past>: true }` (--json) or one sentence, since
 * the API answers nothing.
 */
export function addDelete(
  group: Command,
  io: Io,
  /** `force`: what a `--force` flag (sent as `?force=true`) does, for an operation that takes one. */
  options: { noun: string; path: (id: number) => string; description: string; verb?: string; past?: string; force?: string },
): Command {
  const { noun, verb = 'delete', past = 'deleted' } = options;
  const command = group.command(verb).description(options.description).argument('<id>', `${noun} id`, positiveInteger);
  if (options.force) command.option('--force', options.force);
  return command.action(
    action<{ force?: boolean }>(io, async (ctx, o, [id]) => {
      await ctx.admin().delete(`${options.path(id as number)}${o.force ? '?force=true' : ''}`);
      ctx.print({ id, [past]: true }, () => `${past[0]?.toUpperCase()}${past.slice(1)} ${noun} ${String(id)}.`);
    }),
  );
}
