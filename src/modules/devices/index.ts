// The device side of the service: the embedded broker (MQTT_URL unset) or an external one, and what the
// service does with gateway messages (presence, door events, unlock results), each gateway's in order.
import { CoalescedCalls } from '../../platform/coalesced-calls.ts';
import type { Core, Module } from '../../platform/module.ts';
import { parts, startPart } from '../../platform/startup.ts';
import type { GatewaySync } from '../access/index.ts';
import { parseGatewayEvent, type AccessLogWriter, type GatewayEvent } from '../events/index.ts';
import { NO_BROKER_ACCOUNTS, type GatewayAccounts } from './broker-accounts.ts';
import { brokerAuthRoutes } from './broker-auth-routes.ts';
import { EmbeddedBroker } from './broker.ts';
import { MqttLink, UNREADABLE, type DeviceLink, type GatewayMessageHandler, type LinkState } from './link.ts';
import { GatewayMessagePipeline, refusedAsData } from './message-pipeline.ts';
import { RefusedLogins } from './refused-logins.ts';
import { startDynsec } from './mosquitto-dynsec.ts';
import { PresenceService } from './presence.ts';
import { mqttSandboxRoutes, unlockRoutes } from './routes.ts';
import { UnlockService } from './unlock.ts';
import { onlineGatewayCount } from './store.ts';
import { JsonText } from './payload.ts';
import { serviceTopic } from './topics.ts';

// The devices module's surface for the rest of the service.
export { BrokerUnavailableError, gatewayUsername, type GatewayAccounts } from './broker-accounts.ts';
export { MQTT_TOPIC_PREFIX } from './topics.ts';
export type { KeyHolder, UnlockHandOff, UnlockService } from './unlock.ts';
export { KEY_CHANGED } from './unlock.ts';

/** Writes of door events at once on PostgreSQL (a few of the pool's connections; the cores commit them in parallel). */
const EVENT_WRITES_AT_ONCE = 3;
/**
 * On the embedded database, a write of door events starts no sooner than this after the one before it. A write
 * costs PGlite about 2.6 ms whatever its size, plus 0.07 ms an event (bench/RESULTS.md), and its thread shares the
 * service's core: at 1,200 events a second, writes as soon as each ended took 8 events each and 70% of a core. An
 * event waits at most this long more for its acknowledgement; decisions are answered before they are logged, and
 * after a quiet moment a write starts at once.
 */
const EMBEDDED_EVENT_GATHER_MS = 20;

export interface Devices extends Module {
  /** Where gateways dial (POST /admin/v1/gateways answers it). */
  gatewayUrl: string;
  /** The embedded broker's URL, when it runs. */
  embeddedUrl: string | null;
  /** Gateways' broker accounts: Mosquitto's dynamic security when configured, else none to keep. */
  gatewayAccounts: GatewayAccounts;
  unlock: UnlockService;
  /** Gateway presence, for gateways whose contact is not an MQTT connection (UHPPOTE controllers' polls). */
  presence: Pick<PresenceService, 'heard' | 'connected' | 'lost'>;
  /**
   * A gateway's password was rotated or it was deleted: its connection to the embedded broker drops (with
   * MQTT_URL, the broker's accounts see to that), and it reads offline until it says `{"online": true}` again
   * (Mosquitto sends no will for a client it disconnects itself).
   */
  disconnectGateway(gatewayId: number): void;
  /** The MQTT link: the embedded broker listens, or the client is connected to MQTT_URL with every subscription. */
  linkState(): LinkState;
  close(): Promise<void>;
}

export interface DevicesDeps {
  /** Door events and unlock outcomes go to the access log. */
  accessLog: AccessLogWriter;
  /** The access side of the gateway protocol (requests, list syncs, applied changes). */
  access: GatewaySync;
}

/** Starts the device side (src/platform/module.ts): Mosquitto's dynamic security first when configured, then the broker or link. */
export async function startDevices(core: Core, deps: DevicesDeps): Promise<Devices> {
  const { config, db, clock, jobs, log, metrics } = core;
  const { accessLog, access } = deps;
  // Mosquitto's dynamic security: the service's own broker user gets its role before the link subscribes.
  const { mqttUrl, mqttDynsec } = config;
  const dynsec = mqttUrl && mqttDynsec ? await startPart(parts.dynsec(config), () => startDynsec(mqttUrl, mqttDynsec, db, log)) : null;
  // Assigned below, before any message can arrive.
  let link: DeviceLink;
  const unlock = new UnlockService({
    db,
    clock,
    accessLog,
    publish: (topic, payload) => link.publish(topic, payload),
    timeoutSeconds: config.unlockTimeoutSeconds,
    sandbox: config.sandbox,
    log,
    metrics,
  });
  // Each gateway's batches in its own order (the pipeline); the batches of several gateways whose turn comes
  // while writes run go to the database together (many gateways, one door each, stay cheap). PostgreSQL commits
  // a few writes in parallel on its cores; PGlite runs one statement at a time, so one write gathers the most.
  const eventWrites = new CoalescedCalls((items: Array<{ gatewayId: number; event: GatewayEvent }>) => accessLog.ingestAcross(items), refusedAsData, {
    maxAtOnce: db.engine === 'postgres' ? EVENT_WRITES_AT_ONCE : 1,
    gatherMs: db.engine === 'postgres' ? 0 : EMBEDDED_EVENT_GATHER_MS,
  });
  const pipeline = new GatewayMessagePipeline(
    {
      events: async (gatewayId, events) => {
        const stored = await eventWrites.call(events.map((event) => ({ gatewayId, event })));
        metrics.batchWritten(events.length, stored.filter((event) => event !== null).length);
      },
      result: (gatewayId, payload) => unlock.result(gatewayId, payload),
    },
    log,
    { onEventRefused: () => metrics.dropped('refused') },
  );
  const presence = new PresenceService(db, clock, log, (gatewayId, change) => pipeline.presence(gatewayId, change));
  const refusedLogins = new RefusedLogins(db, clock, log);
  jobs.register(presence.quietJob());
  jobs.register(unlock.timeoutJob());

  /** A door event through the pipeline: batched with the gateway's others, resolved once committed. */
  const recordEvent = (gatewayId: number, event: GatewayEvent): Promise<void> => {
    metrics.received();
    const receivedAt = performance.now();
    const stored = pipeline.event(gatewayId, event);
    void stored.then(() => metrics.ingested((performance.now() - receivedAt) / 1000));
    return stored;
  };
  access.attach({
    publish: (gatewayId, topic, payload, text) => link.publish(serviceTopic(gatewayId, topic), text ? new JsonText(payload as string) : payload),
    record: recordEvent,
  });

  /** What each gateway last said of its list in a presence (`access_list.expired`). */
  const listExpiredSaid = new Map<number, unknown>();
  const onMessage: GatewayMessageHandler = (gatewayId, topic, payload) => {
    // Dropped (routeGatewayMessage said why), but a message from the gateway is contact: a heartbeat of any text.
    // Not on presence: an external broker replays a retained presence on every reconnection of the service, and a
    // malformed one of a gateway long gone would bring it online again.
    if (payload === UNREADABLE) return topic === 'presence' ? undefined : void presence.heard(gatewayId);
    const message = payload as Record<string, unknown>;
    const announced = topic === 'presence' ? message.online : undefined;
    if (typeof announced === 'boolean') {
      const acted = presence.announce(gatewayId, announced);
      // What it says of its copy of the list is written when it says something new, in its order of messages (retried
      // while the database is away); the embedded broker reads on once it is written, so alternating it is no flood.
      const listExpired = (message.access_list as { expired?: unknown } | undefined)?.expired;
      if (announced && (acted || listExpired !== listExpiredSaid.get(gatewayId))) {
        listExpiredSaid.set(gatewayId, listExpired);
        pipeline.presence(gatewayId, () => access.presence(gatewayId, message));
      }
      // Read on once what it changed is written (the embedded broker waits for this), so that a flood waits in the gateway.
      return pipeline.settled(gatewayId);
    }
    presence.heard(gatewayId); // any message from the gateway is contact
    if (topic === 'events') {
      const parsed = parseGatewayEvent(payload);
      if ('problem' in parsed) {
        metrics.dropped('malformed');
        return void log.warn({ gatewayId, eventId: parsed.eventId, problem: parsed.problem }, 'malformed gateway event; dropped');
      }
      return recordEvent(gatewayId, parsed.event);
    }
    if (topic === 'commands/result') return pipeline.result(gatewayId, payload);
    if (topic === 'access/request') return access.request(gatewayId, message);
    if (topic === 'access/sync') return access.sync(gatewayId, message);
    if (topic === 'access/applied') return access.applied(gatewayId, message);
    return undefined;
  };

  let broker: EmbeddedBroker | null = null;
  let gatewayUrl: string;
  if (config.mqttUrl) {
    link = new MqttLink(config, onMessage, log, {
      retainedDropped: (_gatewayId, kind) => {
        if (kind === 'events') metrics.dropped('retained');
      },
      overloadDropped: (_gatewayId, kind) => {
        if (kind === 'events') metrics.dropped('overload');
      },
    });
    gatewayUrl = config.gatewayMqttUrl ?? withoutCredentials(config.mqttUrl);
  } else {
    // Nobody is connected to a broker that is starting: what the store still holds online (a crash left
    // it so) goes offline, each gateway ahead of what its reconnection brings. One instance per embedded
    // broker: several instances share an external broker (MQTT_URL), whose connections outlive a restart.
    await presence.startWithNobodyConnected();
    broker = new EmbeddedBroker(
      db,
      // Bounded as its `{"online": …}` is: a gateway reconnecting in a loop flipped its state (a transaction, a
      // webhook per lock, every account's cached facts) once per connection.
      {
        connected: (gatewayId) => presence.announce(gatewayId, true),
        disconnected: (gatewayId) => presence.announce(gatewayId, false),
        refused: (gatewayId) => refusedLogins.refused(gatewayId),
      },
      onMessage,
      config.mqttMaxPacketBytes,
      log,
    );
    const embedded = broker;
    const port = await startPart(parts.broker(config), () => embedded.start(config.mqttPort, config.mqttHost));
    link = broker.link();
    gatewayUrl = config.gatewayMqttUrl ?? `mqtt://${new URL(config.publicUrl).hostname}:${port}`;
  }
  await startPart(parts.broker(config), () => link.start());
  const connectedGateways = async () => (broker ? broker.connectedGateways : onlineGatewayCount(db));
  metrics.gauge('latchkey_gateways_connected', 'Gateways connected: to the embedded broker; with MQTT_URL, those the store holds online.', connectedGateways);
  metrics.gauge(
    'latchkey_mqtt_subscriptions_missing',
    "The service's gateway topic filters not subscribed at MQTT_URL's broker now (all of them while disconnected); always 0 with the embedded broker.",
    () => link.missingSubscriptions(),
  );
  const brokerAuthSecret = config.mqttHttpAuthSecret;
  return {
    gatewayUrl,
    embeddedUrl: broker ? gatewayUrl : null,
    gatewayAccounts: dynsec ?? NO_BROKER_ACCOUNTS,
    unlock,
    presence,
    disconnectGateway: (gatewayId) => {
      broker?.disconnectGateway(gatewayId);
      presence.lost(gatewayId);
    },
    linkState: () => link.state(),
    routes(app) {
      unlockRoutes(app, unlock);
      if (brokerAuthSecret) brokerAuthRoutes(app, { db, limits: core.limits, secret: brokerAuthSecret, refused: (gatewayId) => refusedLogins.refused(gatewayId) });
    },
    sandboxRoutes: (app) => mqttSandboxRoutes(app, unlock),
    async close() {
      pipeline.stopRetrying();
      presence.close();
      await link.close();
      await broker?.close();
      await pipeline.drained();
      await dynsec?.close();
    },
  };
}

/** The service's broker URL as gateways may be shown it: never the service's own user and password. */
export function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString().replace(/\/$/, '');
}
