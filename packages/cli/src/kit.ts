// What every command is made of: an action that gets the run's context, the list flags and the printing of a
// page, so each command file holds only its own flags and columns.
import type { Command, OptionValues } from 'commander';
import { contextOf, type Context, type Io } from './context.ts';
import { table, type Column } from './output.ts';
import { positiveInteger } from './parse.ts';

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

/** Only the fields that were given: an update sends what the user asked to change and nothing else. */
export function defined<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}
