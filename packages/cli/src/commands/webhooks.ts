// latchkey webhooks …: subscriptions and their deliveries (docs/spec/public-api-v1.md, Webhooks).
import type { Command } from 'commander';
import type {
  WebhookDelivery,
  WebhookDeliveryQuery,
  WebhookSubscription,
  WebhookSubscriptionCreate,
  WebhookSubscriptionUpdate,
} from '@latchkey/sdk';
import type { Io } from '../context.ts';
import { UsageError } from '../failures.ts';
import { action, addList, changes, defined } from '../kit.ts';
import { details, type Column } from '../output.ts';
import { list, sinceTime } from '../parse.ts';

const SUBSCRIPTION_COLUMNS: ReadonlyArray<Column<WebhookSubscription>> = [
  ['id', (s) => s.id],
  ['url', (s) => s.url],
  ['events', (s) => s.events],
  ['status', (s) => s.status],
  ['failing since', (s) => s.failing_since],
  ['last delivery', (s) => s.last_delivery_at],
  ['description', (s) => s.description],
];

const DELIVERY_COLUMNS: ReadonlyArray<Column<WebhookDelivery>> = [
  ['id', (d) => d.id],
  ['event type', (d) => d.event_type],
  ['status', (d) => d.status],
  ['attempt', (d) => d.attempt],
  ['response', (d) => d.response_status],
  ['next attempt', (d) => d.next_attempt_at],
  ['created', (d) => d.created_at],
  ['last error', (d) => d.last_error],
];

/** A delivery without its payload (`--json` has it). */
function printDelivery(delivery: WebhookDelivery): string {
  const { payload: _payload, ...fields } = delivery;
  return details(fields);
}

const EVENTS_HELP = 'event names, comma-separated, or * for every event';

export function registerWebhooks(program: Command, io: Io): void {
  const webhooks = program.command('webhooks').description('webhook subscriptions and deliveries (API key with webhooks:manage)');

  addList<WebhookSubscription>(webhooks.command('list').description("the subscriptions of the API key's location"), io, {
    noun: 'subscriptions',
    columns: SUBSCRIPTION_COLUMNS,
    pages: (ctx) => {
      const lk = ctx.sdk();
      return (limit, cursor) => lk.webhooks.list({ limit, cursor }).page();
    },
  });

  webhooks
    .command('create')
    .description('subscribe a URL; the answer carries the signing secret, shown only this once')
    // A positional URL: --url is the service's own (a global flag).
    .argument('<url>', 'https URL of a public host, where deliveries are POSTed')
    .requiredOption('--events <names>', EVENTS_HELP, list)
    .option('--description <text>', 'a note for people')
    .option('--idempotency-key <key>', 'Idempotency-Key to send (default: a random one)')
    .action(
      action<{ events: string[]; description?: string; idempotencyKey?: string }>(io, async (ctx, o, [url]) => {
        const body = { url, events: o.events, ...defined({ description: o.description }) } as WebhookSubscriptionCreate;
        const created = await ctx.sdk().webhooks.create(body, defined({ idempotencyKey: o.idempotencyKey }));
        ctx.print(created, details);
        ctx.note('The signing secret is shown only now: keep it.');
      }),
    );

  webhooks
    .command('get')
    .description('one subscription (never its secret)')
    .argument('<id>', 'subscription id (uuid)')
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.sdk().webhooks.get(id as string), details)));

  webhooks
    .command('update')
    .description('change a subscription: only the fields given change (pause and resume with --status)')
    .argument('<id>', 'subscription id (uuid)')
    .option('--endpoint <url>', 'a new https URL of a public host (the secret stays; --url is the service)')
    .option('--events <names>', EVENTS_HELP, list)
    .option('--description <text>', 'a note for people')
    .option('--status <status>', 'active or paused')
    .action(
      action<{ endpoint?: string; events?: string[]; description?: string; status?: string }>(io, async (ctx, o, [id]) => {
        const body = changes({ url: o.endpoint, events: o.events, description: o.description, status: o.status });
        ctx.print(await ctx.sdk().webhooks.update(id as string, body as WebhookSubscriptionUpdate), details);
      }),
    );

  addList<WebhookDelivery, { status?: string; eventType?: string; since?: string }>(
    webhooks
      .command('deliveries')
      .description('the deliveries of a subscription, newest first')
      .argument('<id>', 'subscription id (uuid)')
      .option('--status <status>', 'e.g. pending, delivered, failed, exhausted')
      .option('--event-type <type>', 'one event name')
      .option('--since <time>', 'an ISO 8601 date-time, or how long ago (15m, 2h, 1d)'),
    io,
    {
      noun: 'deliveries',
      columns: DELIVERY_COLUMNS,
      pages: (ctx, o, [id]) => {
        const lk = ctx.sdk();
        const filters = defined({ status: o.status, event_type: o.eventType, since: o.since === undefined ? undefined : sinceTime(o.since) }) as WebhookDeliveryQuery;
        return (limit, cursor) => lk.webhooks.deliveries(id as string, { ...filters, limit, cursor }).page();
      },
    },
  );

  webhooks
    .command('redeliver')
    .description('deliver an earlier delivery again, as a new delivery (queued)')
    .argument('<id>', 'subscription id (uuid)')
    .argument('<delivery>', 'delivery id (uuid)')
    .action(
      action(io, async (ctx, _o, [id, delivery]) => ctx.print(await ctx.sdk().webhooks.redeliver(id as string, delivery as string), printDelivery)),
    );

  webhooks
    .command('ping')
    .description('send one ping delivery now and show how the receiver answered')
    .argument('<id>', 'subscription id (uuid)')
    .action(action(io, async (ctx, _o, [id]) => ctx.print(await ctx.sdk().webhooks.ping(id as string), printDelivery)));

  webhooks
    .command('listen')
    .description(
      "receive the events of the API key's location as they happen and forward each, signed as a delivery, to a local URL (no subscription needed; plain http to localhost is fine), until Ctrl-C",
    )
    .option('--forward-to <url>', 'where each delivery is POSTed, e.g. http://localhost:3000/hook')
    .option('--events <names>', EVENTS_HELP, list, ['*'])
    .option('--print-secret', 'print the signing secret of listen sessions and end')
    .action(
      action<{ forwardTo?: string; events: string[]; printSecret?: boolean }>(io, async (ctx, o) => {
        if (!o.printSecret && !o.forwardTo) throw new UsageError('give --forward-to <url> (e.g. http://localhost:3000/hook), or --print-secret.');
        const forwardTo = o.forwardTo ?? '';
        if (o.forwardTo) {
          let parsed: URL;
          try {
            parsed = new URL(o.forwardTo);
          } catch {
            throw new UsageError(`--forward-to is not a URL: ${o.forwardTo}`);
          }
          if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--forward-to must be http:// or https://: ${o.forwardTo}`);
        }
        const apiKey = ctx.apiKey();
        // Loaded here, not with the CLI: only this command needs it.
        const { listenAndForward } = await import('../webhook-listen.ts');
        const stop = new AbortController();
        const quit = () => stop.abort();
        process.once('SIGINT', quit).once('SIGTERM', quit);
        try {
          await listenAndForward({
            url: ctx.settings.url,
            apiKey,
            forwardTo,
            events: o.events,
            printSecret: o.printSecret === true,
            json: ctx.json,
            out: (line) => ctx.io.out(line),
            err: (line) => ctx.io.err(line),
            signal: stop.signal,
          });
        } finally {
          process.off('SIGINT', quit).off('SIGTERM', quit);
        }
      }),
    );
}
