// Builds the Latchkey HTTP app from its dependencies, without listening: tests and main.ts both use it.
// The shared parts first (the core), then the modules in dependency order (src/platform/module.ts), then
// the HTTP plumbing and every module's routes.
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { startAccess } from './modules/access/index.ts';
import { startCatalog } from './modules/catalog/index.ts';
import { startConsole } from './modules/console/index.ts';
import { startControllers } from './modules/controllers/index.ts';
import { startDevices } from './modules/devices/index.ts';
import { startEvents } from './modules/events/index.ts';
import { startHolder } from './modules/holder/index.ts';
import { invitationMessageSent, startKeys } from './modules/keys/index.ts';
import { startLockingSystem } from './modules/locking-system/index.ts';
import { startNotifications } from './modules/notifications/index.ts';
import { startOperator } from './modules/operator/index.ts';
import { startPeople } from './modules/people/index.ts';
import { startSandbox } from './modules/sandbox/index.ts';
import { startWebhooks } from './modules/webhooks/index.ts';
import { installAccessControl } from './platform/access.ts';
import { loadAdminToken } from './platform/admin-token.ts';
import { registerApiDocs } from './platform/api-docs.ts';
import { ApiKeyAuthenticator } from './platform/auth.ts';
import { SandboxClock, systemClock, type Clock } from './platform/clock.ts';
import type { Database } from './platform/db/index.ts';
import { reportingFailures } from './platform/db/observed.ts';
import { embeddedStatisticsJob } from './platform/db/statistics.ts';
import { databaseProbe, healthRoutes } from './platform/health.ts';
import { installHttpPlumbing } from './platform/http.ts';
import { Idempotency } from './platform/idempotency.ts';
import { JobRunner } from './platform/jobs.ts';
import { Metrics, listenForScrapes } from './platform/metrics.ts';
import type { Core, Module } from './platform/module.ts';
import { registerOpenApiDocuments } from './platform/openapi.ts';
import { PageCaches } from './platform/page-cache.ts';
import { RateLimits, connectRedis, readyWithin } from './platform/rate-limit.ts';
import { RequestLog } from './platform/request-log.ts';
import { trackRoutes } from './platform/route-table.ts';
import { SecretBox } from './platform/secret-box.ts';
import { createServer, type LoggerSetting } from './platform/server.ts';
import { VERSION } from './version.ts';

export const API_VERSION = '1.3.0';

/** How long start-up waits for REDIS_URL's connection before it counts in memory (README: Faults). */
const REDIS_START_WAIT_MS = 2000;

export interface AppDeps {
  config: Config;
  db: Database;
  /** Defaults to the system clock, or a sandbox clock with SANDBOX=true. */
  clock?: Clock;
  /** The service's logger (main.ts), or options for one (tests: a stream to read); false silences it (tests). */
  logger?: LoggerSetting;
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

export async function buildApp(deps: AppDeps): Promise<Latchkey> {
  const { config } = deps;
  // Every app counts in a registry of its own; every failed statement is counted (README: Operations).
  const metrics = new Metrics();
  metrics.buildInfo(VERSION);
  const db = reportingFailures(deps.db, (unavailable) => metrics.queryFailed(unavailable));
  const sandboxClock = config.sandbox ? new SandboxClock() : null;
  const clock = deps.clock ?? sandboxClock ?? systemClock;
  const app = createServer(config, deps.logger);

  // The core: what every module may use.
  const jobs = new JobRunner(app.log);
  // PGlite has no autovacuum: its planner learns how the tables grew from this job (server PostgreSQL analyzes by itself).
  if (db.engine === 'pglite') jobs.register(embeddedStatisticsJob(db));
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, app.log) : null;
  if (redis) await readyWithin(redis, REDIS_START_WAIT_MS);
  const admin = await loadAdminToken(db, config.adminToken);
  const authenticator = new ApiKeyAuthenticator(db, clock);
  await authenticator.start();
  const requestLog = new RequestLog(db, clock, app.log);
  jobs.register(requestLog.purgeJob());
  // The server key: webhook signing secrets, stored idempotent responses and queued setup links.
  const secrets = await SecretBox.open(db, config.webhookSecretKey);
  const idempotency = new Idempotency(db, clock, secrets);
  jobs.register(idempotency.purgeJob());
  const limits = new RateLimits(clock, redis?.client ?? null, config.redisKeyPrefix, metrics);
  const pages = new PageCaches(config.pageCacheEnabled);
  const core: Core = { config, db, clock, jobs, log: app.log, metrics, secrets, pages, limits, adminTokenHash: () => admin.hash() };

  // The modules, each after those it names (its routes are registered in this order too).
  const sandbox = sandboxClock ? await startSandbox(core, sandboxClock) : null; // first: the others start at the sandbox's time
  const catalog = await startCatalog(core);
  const lockingSystem = startLockingSystem(core);
  const notifications = startNotifications(core, { invitationSent: invitationMessageSent });
  const access = await startAccess(core);
  const keys = await startKeys(core, { lockingSystems: lockingSystem.systems, messages: notifications.messages, access: access.lists });
  const people = await startPeople(core, { lockingSystems: lockingSystem.systems, keys: keys.area });
  const events = await startEvents(core);
  const devices = await startDevices(core, { accessLog: events.writer, access: access.sync });
  const webhooks = await startWebhooks(core, { messages: notifications.messages });
  const holder = startHolder(core, { unlock: devices.unlock, links: keys.links });
  const operator = startOperator(core, {
    gatewayMqttUrl: () => devices.gatewayUrl,
    gatewayAccounts: devices.gatewayAccounts,
    disconnectGateway: (gatewayId) => devices.disconnectGateway(gatewayId),
    access: access.lists,
  });
  // UHPPOTE boards as a locking system (README "Real controllers"): they take remote unlocks from devices.unlock.
  const controllers = await startControllers(core, {
    access: access.lists,
    accessLog: events.writer,
    lockingSystems: lockingSystem.systems,
    presence: devices.presence,
    unlock: devices.unlock,
    confirmKeys: (keyIds) => keys.area.confirmLockingSystemWrites(keyIds),
    runTasksNow: () => lockingSystem.runTasksNow(),
  });
  const consoleModule = config.consoleEnabled ? await startConsole(core, { forgetApiKeys: () => authenticator.invalidate() }) : null;
  const modules: Module[] = [sandbox, catalog, lockingSystem, notifications, access, keys, people, events, devices, webhooks, holder, operator, controllers, consoleModule].filter(
    (module): module is Module => module !== null,
  );

  installHttpPlumbing(app);
  // A callback hook, cheap on every request: the route's pattern (never the URL) and the status.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
  installAccessControl(app, { authenticator, limits, perMinute: config.apiRateLimitPerMinute, adminTokenHash: () => admin.hash() });
  requestLog.install(app);
  idempotency.install(app);
  pages.install(app);

  const finishRoutes = trackRoutes(app);
  await registerOpenApiDocuments(app, { publicUrl: config.publicUrl, version: API_VERSION, brandName: config.brandName });
  registerApiDocs(app, config.brandName, { consoleEnabled: config.consoleEnabled });
  const probeLimits = new RateLimits(clock, null, config.redisKeyPrefix, metrics);
  healthRoutes(app, { database: await databaseProbe(db), mqtt: () => devices.linkState(), jobs: () => jobs.started }, probeLimits);
  for (const module of modules) await module.routes?.(app);
  if (sandboxClock) for (const module of modules) module.sandboxRoutes?.(app);
  finishRoutes();
  await app.ready();

  if (db.poolStats?.()) {
    // Read once the scrape's own statements (other gauges') have their connections: pg-pool queues a statement even
    // when a connection is idle and hands it one on the next tick, so read at once an idle pool had 2 waiting.
    const poolStats = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return db.poolStats?.();
    };
    metrics.gauge('latchkey_database_pool_connections', 'Open connections of the PostgreSQL pool, idle or in use.', async () => (await poolStats())?.total);
    metrics.gauge('latchkey_database_pool_idle_connections', 'Idle connections of the PostgreSQL pool.', async () => (await poolStats())?.idle);
    metrics.gauge('latchkey_database_pool_waiting_clients', 'Statements waiting for a connection of the PostgreSQL pool.', async () => (await poolStats())?.waiting);
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
      for (const module of [...modules].reverse()) await module.close?.();
      await requestLog.close();
      await redis?.close();
    },
  };
}
