// Builds the Latchkey HTTP app from its dependencies, without listening: tests and main.ts both use it.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { embeddedStatisticsJob } from './platform/db/statistics.ts';
import { CatalogService } from './modules/catalog/service.ts';
import { catalogRoutes } from './modules/catalog/routes.ts';
import { OperatorService, operatorRoutes } from './modules/operator/index.ts';
import { activationRoutes } from './modules/keys/activation-routes.ts';
import { keysRoutes, keysSandboxRoutes } from './modules/keys/routes.ts';
import { KeysArea, invitationMessageSent } from './modules/keys/index.ts';
import { LockingSystems, lockingSystemTasksJob } from './modules/locking-system/index.ts';
import { controllerRoutes, startControllers } from './modules/controllers/index.ts';
import { MessageQueue } from './modules/notifications/index.ts';
import { notifierFor } from './modules/notifications/notifier.ts';
import { outboxSandboxRoutes } from './modules/notifications/sandbox-routes.ts';
import { lockingSystemSandboxRoutes } from './modules/locking-system/sandbox-routes.ts';
import { PeopleService } from './modules/people/service.ts';
import { peopleRoutes } from './modules/people/routes.ts';
import { SandboxService, sandboxRoutes } from './modules/sandbox/index.ts';
import { NO_BROKER_ACCOUNTS } from './modules/devices/broker-accounts.ts';
import { brokerAuthRoutes } from './modules/devices/broker-auth-routes.ts';
import { AccessLists, GatewaySync, ListRebuilds } from './modules/access/index.ts';
import { startDevices } from './modules/devices/index.ts';
import { HolderService, holderAdminRoutes, holderRoutes } from './modules/holder/index.ts';
import { startDynsec } from './modules/devices/mosquitto-dynsec.ts';
import { mqttSandboxRoutes, unlockRoutes } from './modules/devices/routes.ts';
import { AccessLogReader, AccessLogWriter } from './modules/events/index.ts';
import { eventsRoutes } from './modules/events/routes.ts';
import { ConsoleProxy, ConsoleSessions, LiveUpdates, consoleAssetRoutes, consoleRoutes } from './modules/console/index.ts';
import { WebhookDispatcher } from './modules/webhooks/dispatcher.ts';
import { webhooksRoutes } from './modules/webhooks/routes.ts';
import { WebhooksService } from './modules/webhooks/service.ts';
import { installAccessControl } from './platform/access.ts';
import { loadAdminToken } from './platform/admin-token.ts';
import { VERSION } from './version.ts';
import { ApiKeyAuthenticator } from './platform/auth.ts';
import { SandboxClock, systemClock, type Clock } from './platform/clock.ts';
import { trustProxyOption } from './platform/client-ip.ts';
import type { Database } from './platform/db/index.ts';
import {
  ROUTER_MAX_PARAM_LENGTH,
  answerClientError,
  answerFrameworkError,
  escapeMalformedPath,
  genReqId,
  installHttpPlumbing,
} from './platform/http.ts';
import { Idempotency } from './platform/idempotency.ts';
import { installRequestContext, loggerOptions } from './platform/logger.ts';
import { registerOpenApiDocuments } from './platform/openapi.ts';
import { registerApiDocs } from './platform/api-docs.ts';
import { trackRoutes } from './platform/route-table.ts';
import { JobRunner } from './platform/jobs.ts';
import { databaseProbe, healthRoutes } from './platform/health.ts';
import { Metrics, listenForScrapes, shared } from './platform/metrics.ts';
import { reportingFailures } from './platform/db/observed.ts';
import { PageCaches } from './platform/page-cache.ts';
import { RateLimits, connectRedis } from './platform/rate-limit.ts';

import { RequestLog } from './platform/request-log.ts';
import { SecretBox } from './platform/secret-box.ts';
import { parts, startPart } from './platform/startup.ts';

export const API_VERSION = '1.3.0';

/** How long start-up waits for REDIS_URL's connection before it counts in memory (README: Faults). */
const REDIS_START_WAIT_MS = 2000;

export interface AppDeps {
  config: Config;
  db: Database;
  /** Defaults to the system clock, or a sandbox clock with SANDBOX=true. */
  clock?: Clock;
  /** The service's logger (main.ts), or options for one (tests: a stream to read); false silences it (tests). */
  logger?: boolean | Record<string, unknown> | FastifyBaseLogger;
}

export interface Latchkey {
  app: FastifyInstance;
  clock: Clock;
  jobs: JobRunner;
  /** The embedded MQTT broker's URL, when it runs (MQTT_URL unset). */
  mqttUrl: string | null;
  /** This app's metrics (its own registry). */
  metrics: Metrics;
  /** The metrics listener's URL (http://host:port/metrics), when METRICS_PORT is set. */
  metricsUrl: string | null;
  /**
   * Once the service listens: keeps the operator token this start generated (none was kept before and ADMIN_TOKEN
   * is unset) and returns it, for main.ts to print once; null otherwise.
   */
  keepGeneratedAdminToken(): Promise<string | null>;
  /** Stops jobs, flushes the request log and closes the app and the Redis client; the database stays open. */
  close(): Promise<void>;
}

function isLogger(value: AppDeps['logger']): value is FastifyBaseLogger {
  return typeof value === 'object' && typeof (value as { child?: unknown }).child === 'function';
}

export async function buildApp(deps: AppDeps): Promise<Latchkey> {
  const { config } = deps;
  // Every app counts in a registry of its own; every failed statement is counted (README: Operations).
  const metrics = new Metrics();
  metrics.buildInfo(VERSION);
  const db = reportingFailures(deps.db, (unavailable) => metrics.queryFailed(unavailable));
  const sandboxClock = config.sandbox ? new SandboxClock() : null;
  const clock = deps.clock ?? sandboxClock ?? systemClock;

  const app = Fastify({
    ...(isLogger(deps.logger)
      ? { loggerInstance: deps.logger }
      : { logger: deps.logger === false ? false : { ...loggerOptions(config.logLevel), ...(typeof deps.logger === 'object' ? deps.logger : {}) } }),
    // Called on requests only, once `app` exists.
    trustProxy: trustProxyOption(config.trustProxy, (message) => app.log.warn(message)),
    genReqId,
    bodyLimit: 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: ROUTER_MAX_PARAM_LENGTH },
    // Every answer in the envelope with Cache-Control, also those the router and Node's parser give.
    rewriteUrl: escapeMalformedPath,
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError, // Fastify calls it with `this` bound to the instance
    return503OnClosing: false, // installHttpPlumbing answers them in the envelope
    requestTimeout: config.requestTimeoutSeconds * 1000,
    http: {
      requireHostHeader: false, // installHttpPlumbing refuses a missing Host in the envelope
      // Node looks for requests past their time every connectionsCheckingInterval (30 s by default, which
      // would let a socket outlive a short time-out by that much); headers may not take longer than all.
      headersTimeout: Math.min(60_000, config.requestTimeoutSeconds * 1000),
      connectionsCheckingInterval: Math.min(5000, (config.requestTimeoutSeconds * 1000) / 2),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // First, so that every later hook's lines carry the request id; nothing to tag when nothing is logged.
  if (deps.logger !== false) installRequestContext(app);
  const jobs = new JobRunner(app.log);
  const redis = config.redisUrl ? connectRedis(config.redisUrl, app.log) : null;
  // The first requests should count in the shared budget, not in this instance's memory: wait (briefly: a
  // Redis that is down must not keep the service from starting) until the connection is ready.
  if (redis && redis.client.status !== 'ready') {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, REDIS_START_WAIT_MS);
      redis.client.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  const admin = await loadAdminToken(db, config.adminToken);

  const authenticator = new ApiKeyAuthenticator(db, clock);
  await authenticator.start();
  // Pages of the lists clients poll, kept in memory per instance (platform/page-cache.ts).
  const pages = new PageCaches(config.pageCacheEnabled);
  const catalog = new CatalogService(db, pages);
  await catalog.start();
  const requestLog = new RequestLog(db, clock, app.log);
  jobs.register(requestLog.purgeJob());
  // The server key: webhook signing secrets, stored idempotent responses and queued setup links.
  const secrets = await SecretBox.open(db, config.webhookSecretKey);
  const idempotency = new Idempotency(db, clock, secrets);
  jobs.register(idempotency.purgeJob());
  if (db.engine === 'pglite') jobs.register(embeddedStatisticsJob(db));
  const lockingSystems = new LockingSystems(db, clock);
  const messages = new MessageQueue(db, clock, notifierFor(config, db, clock), secrets, app.log, invitationMessageSent);
  jobs.register(messages.job());
  // Gateway access lists (README "How a door decides"); the keys module confirms key changes they applied.
  const accessLists = new AccessLists(secrets, clock);
  const keys = new KeysArea({
    db,
    clock,
    lockingSystems,
    messages,
    publicUrl: config.publicUrl,
    brandName: config.brandName,
    revocationEnabled: config.keyRevocationEnabled,
    log: app.log,
    pages,
    access: accessLists,
  });
  accessLists.onConfirm((tx, keyIds) => keys.confirmApplied(tx, keyIds));
  await keys.start();
  const lockingSystemTasks = lockingSystemTasksJob(db, clock, lockingSystems);
  jobs.register(lockingSystemTasks);
  const dispatcher = new WebhookDispatcher(db, clock, secrets, messages, config.webhookAllowHosts, app.log, metrics);
  await dispatcher.start();
  const accessLogReader = new AccessLogReader(db, pages);
  await accessLogReader.start();
  const accessLog = new AccessLogWriter(db, clock, app.log, (appended) => accessLogReader.appended(appended));
  // Mosquitto's dynamic security: the service's own broker user gets its role before the link subscribes.
  const { mqttUrl, mqttDynsec } = config;
  const dynsec = mqttUrl && mqttDynsec ? await startPart(parts.dynsec(config), () => startDynsec(mqttUrl, mqttDynsec, db, app.log)) : null;
  const gatewaySync = new GatewaySync(db, clock, accessLists, app.log, config.mqttMaxPacketBytes);
  await gatewaySync.start();
  jobs.register(gatewaySync.pushJob());
  const listRebuilds = new ListRebuilds(db, accessLists, app.log);
  await listRebuilds.start();
  jobs.register(listRebuilds.job());
  const devices = await startDevices(config, db, clock, jobs, accessLog, app.log, gatewaySync, metrics);
  // UHPPOTE boards as a locking system (README "Real controllers"): they take remote unlocks from devices.unlock.
  const controllers = await startControllers({
    config,
    db,
    clock,
    jobs,
    secrets,
    access: accessLists,
    accessLog,
    lockingSystems,
    presence: devices.presence,
    unlock: devices.unlock,
    log: app.log,
    confirmKeys: (keyIds) => keys.confirmLockingSystemWrites(keyIds),
    runTasksNow: () => lockingSystemTasks.run(),
  });
  jobs.register(dispatcher.job());
  jobs.register(dispatcher.retentionJob());

  installHttpPlumbing(app);
  // A callback hook, cheap on every request: the route's pattern (never the URL) and the status.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  const limits = new RateLimits(clock, redis?.client ?? null, config.redisKeyPrefix, metrics);
  installAccessControl(app, {
    authenticator,
    limits,
    perMinute: config.apiRateLimitPerMinute,
    adminTokenHash: () => admin.hash(),
  });
  requestLog.install(app);
  idempotency.install(app);
  pages.install(app);

  const finishRoutes = trackRoutes(app);
  await registerOpenApiDocuments(app, { publicUrl: config.publicUrl, version: API_VERSION, brandName: config.brandName });
  registerApiDocs(app, config.brandName, { consoleEnabled: config.consoleEnabled });
  const probeLimits = new RateLimits(clock, null, config.redisKeyPrefix, metrics);
  healthRoutes(app, { database: await databaseProbe(db), mqtt: () => devices.linkState(), jobs: () => jobs.started }, probeLimits);

  catalogRoutes(app, catalog);
  const people = new PeopleService({
    db,
    clock,
    lockingSystems,
    brandName: config.brandName,
    log: app.log,
    keysOfPerson: (scope, id) => keys.keysOfPerson(scope, id),
    revokeEverythingOf: (tx, id, now) => keys.revokeEverythingOf(tx, id, now),
    personMoved: (tx, id, accountId) => keys.personMoved(tx, id, accountId),
    pages,
  });
  await people.start();
  peopleRoutes(app, people);
  keysRoutes(app, keys);
  eventsRoutes(app, accessLogReader);
  unlockRoutes(app, devices.unlock);
  webhooksRoutes(app, new WebhooksService({ db, clock, secrets, dispatcher, allowHosts: config.webhookAllowHosts }));
  await app.register(async (scope) => {
    // The setup page's form posts an empty urlencoded body; only these routes accept it.
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, _body, done) => done(null, {}));
    activationRoutes(scope as typeof app, keys.activation, config.brandName);
  });
  // The key holder's page (README "The key holder's page"): passkeys, /my-key, Open through the unlock path.
  const holder = new HolderService({
    db,
    clock,
    publicUrl: config.publicUrl,
    brandName: config.brandName,
    limits,
    unlock: devices.unlock,
    log: app.log,
    linkUsable: async (token) => {
      const link = await keys.activation.describeLink(token);
      return link ? { personName: link.invitation.person_name } : null;
    },
    activate: (token) => keys.activation.activate(token),
  });
  holderRoutes(app, holder, config.brandName);
  holderAdminRoutes(app, holder);
  operatorRoutes(
    app,
    new OperatorService({
      db,
      clock,
      gatewayMqttUrl: () => devices.gatewayUrl,
      gatewayAccounts: dynsec ?? NO_BROKER_ACCOUNTS,
      disconnectGateway: (gatewayId) => devices.disconnectGateway(gatewayId),
      access: accessLists,
    }),
  );
  controllerRoutes(app, controllers.service);
  if (config.consoleEnabled) {
    const consoleSessions = new ConsoleSessions(db, clock, secrets, () => admin.hash());
    const consoleProxy = new ConsoleProxy(app, db, secrets, () => authenticator.invalidate());
    // At start too: the sessions of an operator token that has just been changed end now, with their keys.
    await consoleSessions.purge();
    jobs.register(consoleSessions.purgeJob());
    const live = new LiveUpdates((hash) => consoleSessions.isLive(hash));
    await live.start(db);
    // Open streams would hold app.close() until the browsers leave.
    app.addHook('preClose', async () => live.close());
    consoleRoutes(app, { sessions: consoleSessions, proxy: consoleProxy, live, limits, publicUrl: config.publicUrl });
    consoleAssetRoutes(app, { brandName: config.brandName });
  }
  if (config.mqttHttpAuthSecret) brokerAuthRoutes(app, { db, limits, secret: config.mqttHttpAuthSecret });
  if (sandboxClock) {
    const sandbox = new SandboxService(db, sandboxClock, jobs);
    await sandbox.start();
    sandboxRoutes(app, sandbox);
    lockingSystemSandboxRoutes(app, db);
    keysSandboxRoutes(app, keys);
    outboxSandboxRoutes(app, db);
    mqttSandboxRoutes(app, devices.unlock);
  }
  finishRoutes();
  await app.ready();

  // Gauges read at scrape time, each within SCRAPE_QUERY_TIMEOUT_MS.
  const pending = shared(() => dispatcher.pending());
  metrics.gauge('latchkey_webhook_deliveries_pending', 'Webhook deliveries waiting to be sent or sent again.', async () => (await pending()).count);
  metrics.gauge(
    'latchkey_webhook_oldest_pending_age_seconds',
    'Age of the oldest pending webhook delivery (0 when none is pending).',
    async () => (await pending()).oldestAgeSeconds ?? 0,
  );
  metrics.gauge(
    'latchkey_gateways_connected',
    'Gateways connected: to the embedded broker; with MQTT_URL, those the store holds online.',
    () => devices.connectedGateways(),
  );
  metrics.gauge(
    'latchkey_mqtt_subscriptions_missing',
    "The service's gateway topic filters not subscribed at MQTT_URL's broker now (all of them while disconnected); always 0 with the embedded broker.",
    () => devices.missingSubscriptions(),
  );
  if (db.poolStats?.()) {
    metrics.gauge('latchkey_database_pool_connections', 'Open connections of the PostgreSQL pool, idle or in use.', () => db.poolStats?.()?.total);
    metrics.gauge('latchkey_database_pool_idle_connections', 'Idle connections of the PostgreSQL pool.', () => db.poolStats?.()?.idle);
    metrics.gauge('latchkey_database_pool_waiting_clients', 'Statements waiting for a connection of the PostgreSQL pool.', () => db.poolStats?.()?.waiting);
  }
  let metricsListener: Awaited<ReturnType<typeof listenForScrapes>> | null = null;
  if (config.metricsPort !== null) {
    metrics.collectProcessMetrics();
    metricsListener = await listenForScrapes(metrics, config.metricsPort, config.metricsHost);
  }
  const metricsUrl = metricsListener ? `http://${config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost}:${metricsListener.port}/metrics` : null;

  return {
    app,
    clock,
    jobs,
    mqttUrl: devices.embeddedUrl,
    metrics,
    metricsUrl,
    keepGeneratedAdminToken: () => admin.keepGenerated(),
    async close() {
      await app.close();
      if (metricsListener) {
        const { server } = metricsListener;
        await new Promise((resolve) => {
          server.close(resolve);
          server.closeAllConnections(); // a scraper's keep-alive connection would hold close() open
        });
      }
      await jobs.stop();
      await controllers.close();
      await devices.close();
      await dynsec?.close();
      await requestLog.close();
      await dispatcher.close();
      await redis?.close();
    },
  };
}
