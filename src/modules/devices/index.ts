// The device side of the service: the embedded broker (MQTT_URL unset) or an external one, and what the
// service does with gateway messages (presence, door events, unlock results), each gateway's in order.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { JobRunner } from '../../platform/jobs.ts';
import { AccessLog, parseGatewayEvent, type GatewayEvent } from '../events/access-log.ts';
import { EmbeddedBroker } from './broker.ts';
import { MqttLink, type DeviceLink, type GatewayTopic } from './link.ts';
import { PresenceService } from './presence.ts';
import { UnlockService } from './unlock.ts';

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): the rows, not the database. */
const REFUSED_AS_DATA = /^2[23]/;
/** Door events of one gateway waiting to be written beyond which its next packets are not read. */
const WAITING_EVENTS_LIMIT = 1000;
/** The longest wait between two attempts to store door events while the database is away. */
const STORE_RETRY_MAX_MS = 5000;

export interface Devices {
  /** Where gateways dial (POST /admin/v1/gateways answers it). */
  gatewayUrl: string;
  /** The embedded broker's URL, when it runs. */
  embeddedUrl: string | null;
  unlock: UnlockService;
  /**
   * A gateway's password was rotated or it was deleted: its connection to the embedded broker drops (with
   * MQTT_URL, the broker's accounts see to that), and it reads offline until it says `{"online": true}` again
   * (Mosquitto sends no will for a client it disconnects itself).
   */
  disconnectGateway(gatewayId: number): void;
  close(): Promise<void>;
}

export async function startDevices(
  config: Config,
  db: Database,
  clock: Clock,
  jobs: JobRunner,
  accessLog: AccessLog,
  log: FastifyBaseLogger,
): Promise<Devices> {
  // Messages of one gateway are handled in order of arrival (an online followed by an offline must end offline).
  const queues = new Map<number, Promise<void>>();
  const handle = (gatewayId: number, work: () => Promise<unknown>) => {
    const next = (queues.get(gatewayId) ?? Promise.resolve())
      .then(work)
      .catch((error: unknown) => log.error({ err: error, gatewayId }, 'gateway message failed'))
      .then(() => undefined);
    queues.set(gatewayId, next);
    void next.then(() => {
      if (queues.get(gatewayId) === next) queues.delete(gatewayId);
    });
  };
  const presence = new PresenceService(db, clock, log, handle);
  jobs.register(presence.quietJob());
  // Door events are kept until stored: a database that is away is retried (the gateway's later events wait
  // behind, in order), and a batch the database refuses as data is written event by event, so that the one
  // bad event is all that is lost (logged whole, for replay). Resolves true once every event is stored or
  // refused, false when the service shut down first.
  let closing = false;
  const storeEvents = async (gatewayId: number, events: GatewayEvent[]): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await accessLog.ingestBatch(gatewayId, events);
        return true;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'string' && REFUSED_AS_DATA.test(code)) {
          if (events.length === 1) {
            log.error({ err: error, gatewayId, event: events[0] }, 'door event refused by the database; dropped');
            return true;
          }
          let settled = true;
          for (const event of events) settled = (await storeEvents(gatewayId, [event])) && settled;
          return settled;
        }
        if (closing) {
          log.error({ err: error, gatewayId, events }, 'door events not stored before shutdown');
          return false;
        }
        log.warn({ err: error, gatewayId, attempt }, 'door events not stored yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(STORE_RETRY_MAX_MS, 100 * 2 ** attempt)));
      }
    }
  };
  // Door events that arrive while earlier work of the gateway is still being written wait in one batch,
  // stored in one write when its turn comes: in order, and far fewer statements under load. Once a
  // gateway has WAITING_EVENTS_LIMIT events waiting (the database slow or away), onEvent hands back a
  // promise that settles when they are stored: the embedded broker then reads that gateway's next packets
  // only after, so the backlog stays in the gateway and TCP instead of growing here.
  const waiting = new Map<number, { events: GatewayEvent[]; stored: Promise<void> }>();
  const onEvent = (gatewayId: number, event: GatewayEvent): Promise<void> | undefined => {
    let batch = waiting.get(gatewayId);
    if (!batch) {
      let settle: () => void = () => undefined;
      const events: GatewayEvent[] = [];
      batch = { events, stored: new Promise<void>((resolve) => (settle = resolve)) };
      waiting.set(gatewayId, batch);
      handle(gatewayId, async () => {
        waiting.delete(gatewayId);
        if (await storeEvents(gatewayId, events)) settle();
      });
    }
    batch.events.push(event);
    return batch.events.length >= WAITING_EVENTS_LIMIT ? batch.stored : undefined;
  };
  const onMessage = (gatewayId: number, topic: GatewayTopic, payload: unknown): Promise<void> | undefined => {
    const announced = topic === 'presence' ? (payload as { online?: unknown }).online : undefined;
    if (announced === false) return void presence.lost(gatewayId);
    if (announced === true) presence.connected(gatewayId);
    else presence.heard(gatewayId); // any message from the gateway is contact
    if (topic === 'events') {
      const event = parseGatewayEvent(payload);
      if (!event) return void log.warn({ gatewayId }, 'malformed gateway event; dropped');
      return onEvent(gatewayId, event);
    }
    if (topic === 'commands/result') handle(gatewayId, () => unlock.result(gatewayId, payload));
    return undefined;
  };

  let broker: EmbeddedBroker | null = null;
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
  });
  jobs.register(unlock.timeoutJob());
  let gatewayUrl: string;
  if (config.mqttUrl) {
    link = new MqttLink(config.mqttUrl, onMessage, log);
    gatewayUrl = config.mqttUrl;
  } else {
    // Nobody is connected to a broker that is starting: what the store still holds online (a crash left
    // it so) goes offline, each gateway ahead of what its reconnection brings. One instance per embedded
    // broker: several instances share an external broker (MQTT_URL), whose connections outlive a restart.
    await presence.startWithNobodyConnected();
    broker = new EmbeddedBroker(
      db,
      { connected: (gatewayId) => presence.connected(gatewayId), disconnected: (gatewayId) => presence.lost(gatewayId) },
      config.mqttMaxPacketBytes,
      log,
    );
    const port = await broker.start(config.mqttPort, config.host);
    link = broker.link(onMessage, log);
    gatewayUrl = `mqtt://${new URL(config.publicUrl).hostname}:${port}`;
  }
  await link.start();
  return {
    gatewayUrl,
    embeddedUrl: broker ? gatewayUrl : null,
    unlock,
    disconnectGateway: (gatewayId) => {
      broker?.disconnectGateway(gatewayId);
      presence.lost(gatewayId);
    },
    async close() {
      closing = true;
      await link.close();
      await broker?.close();
      await Promise.allSettled([...queues.values()]);
    },
  };
}
