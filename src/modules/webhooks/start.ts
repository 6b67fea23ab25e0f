// Starting the webhooks module (src/platform/module.ts): subscriptions, and the dispatcher that sends their
// deliveries from every instance.
import { shared } from '../../platform/metrics.ts';
import type { Core, Module } from '../../platform/module.ts';
import type { MessageQueue } from '../notifications/index.ts';
import { WebhookDispatcher } from './dispatcher.ts';
import { deletedPeopleSweepJob } from './person-data.ts';
import { webhooksRoutes } from './routes.ts';
import { WebhooksService } from './service.ts';

export type Webhooks = Module;

export interface WebhooksModuleDeps {
  /** E-mails the account when a subscription is paused. */
  messages: MessageQueue;
}

export async function startWebhooks(core: Core, deps: WebhooksModuleDeps): Promise<Webhooks> {
  const { db, clock, secrets, metrics, jobs } = core;
  const allowHosts = core.config.webhookAllowHosts;
  const dispatcher = new WebhookDispatcher(db, clock, secrets, deps.messages, allowHosts, core.log, metrics);
  await dispatcher.start();
  jobs.register(dispatcher.job());
  jobs.register(dispatcher.retentionJob());
  jobs.register(deletedPeopleSweepJob(db, clock));
  // Gauges read at scrape time, each within SCRAPE_QUERY_TIMEOUT_MS; one query for both.
  const pending = shared(() => dispatcher.pending());
  metrics.gauge('latchkey_webhook_deliveries_pending', 'Webhook deliveries waiting to be sent or sent again.', async () => (await pending()).count);
  metrics.gauge(
    'latchkey_webhook_oldest_pending_age_seconds',
    'Age of the oldest pending webhook delivery (0 when none is pending).',
    async () => (await pending()).oldestAgeSeconds ?? 0,
  );
  const service = new WebhooksService({ db, clock, secrets, dispatcher, allowHosts });
  return {
    routes: (app) => webhooksRoutes(app, service),
    close: () => dispatcher.close(),
  };
}
