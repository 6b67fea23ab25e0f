// latchkey events list|tail: the access log (docs/spec/public-api-v1.md, Events: `GET /events`, oldest first).
import type { Command } from 'commander';
import type { Event, EventQuery } from '@latchkey/sdk';
import type { Context, Io } from '../context.ts';
import { action, addList, defined, readPages } from '../kit.ts';
import { ref, text, type Column } from '../output.ts';
import { durationMs, list, positiveInteger, sinceTime } from '../parse.ts';

/** The name the operator console gives the API key of each of its sessions (docs/console.md). */
const CONSOLE_KEY_NAME = 'Operator console';

/**
 * Who acted, in words: the API key (the console operator when it is a console session's key), or the key
 * holder (person and key) at the door or from the phone; "unknown" only when the entry names nobody (a
 * credential no key presents, say).
 */
export function actorOf(event: Pick<Event, 'source' | 'api_key' | 'person' | 'key'>): string {
  if (event.api_key) {
    const { name, prefix } = event.api_key;
    return name === CONSOLE_KEY_NAME ? `console operator (API key ${prefix})` : `API key ${name} (${prefix})`;
  }
  const holder = [event.person?.name, event.key ? `key ${ref(event.key)}` : undefined].filter((part) => part !== undefined).join(', ');
  if (!holder) return 'unknown';
  return event.source === 'key_holder' ? `${holder}, from the phone` : holder;
}

const EVENT_COLUMNS: ReadonlyArray<Column<Event>> = [
  ['id', (e) => e.id],
  ['occurred at', (e) => e.occurred_at],
  ['type', (e) => e.type],
  ['result', (e) => e.result],
  ['reason', (e) => e.reason],
  ['lock', (e) => ref(e.lock)],
  ['who', (e) => actorOf(e)],
  ['source', (e) => e.source],
];

interface FilterFlags {
  since?: string;
  lock?: number;
  person?: string;
  type?: string[];
}

function withFilterFlags(command: Command, since: string): Command {
  return command
    .option('--since <time>', `${since}: an ISO 8601 date-time, or how long ago (15m, 2h, 1d)`)
    .option('--lock <id>', 'only this lock', positiveInteger)
    .option('--person <id>', 'only this person (uuid)')
    .option('--type <types>', 'only these types, comma-separated: access.granted, access.denied, door.closed, door.left_open', list);
}

function query(o: FilterFlags): EventQuery {
  return defined({
    since: o.since === undefined ? undefined : sinceTime(o.since),
    lock_id: o.lock,
    person_id: o.person,
    type: o.type?.join(','),
  }) as EventQuery;
}

/** One event per line: columns for people, one JSON object per line (NDJSON) with --json. */
function printLine(ctx: Context, event: Event): void {
  if (ctx.json) return ctx.io.out(JSON.stringify(event));
  ctx.io.out([event.occurred_at, event.type, event.result, ref(event.lock), actorOf(event), event.reason ? `(${event.reason})` : ''].map(text).filter((c) => c !== '' && c !== '-').join('  '));
}

export function registerEvents(program: Command, io: Io): void {
  const events = program.command('events').description('the access log: list, tail (API key)');

  addList<Event, FilterFlags>(withFilterFlags(events.command('list').description('access-log entries, oldest first'), 'only entries since then'), io, {
    noun: 'events',
    columns: EVENT_COLUMNS,
    pages: (ctx, o) => {
      const lk = ctx.sdk();
      const filters = query(o);
      return (limit, cursor) => lk.events.list({ ...filters, limit, cursor }).page();
    },
  });

  withFilterFlags(
    events
      .command('tail')
      .description('print entries since a time, one a line (--json: one JSON object a line); --follow keeps printing new ones until Ctrl-C'),
    'from then on (default: 1h)',
  )
    .option('-f, --follow', 'keep reading new entries')
    .option('--interval <duration>', 'with --follow: time between two reads', durationMs, 5000)
    .action(
      action<FilterFlags & { follow?: boolean; interval: number }>(io, async (ctx, o) => {
        const lk = ctx.sdk();
        const filters = query({ ...o, since: o.since ?? '1h' });
        if (!o.follow) {
          const page = await readPages((limit, cursor) => lk.events.list({ ...filters, limit, cursor }).page(), { limit: 200, all: true });
          for (const event of page.data) printLine(ctx, event);
          return;
        }
        const stop = new AbortController();
        const end = () => stop.abort();
        process.once('SIGINT', end).once('SIGTERM', end);
        try {
          const { since, ...rest } = filters;
          for await (const event of lk.events.since(since as string, { ...rest, intervalMs: o.interval, signal: stop.signal })) printLine(ctx, event);
        } catch (error) {
          if (!stop.signal.aborted) throw error; // Ctrl-C is the normal end of --follow
        } finally {
          process.off('SIGINT', end).off('SIGTERM', end);
        }
      }),
    );
}
