// The device side of the service: the embedded broker (MQTT_URL unset) or an external one, and what the
// service does with gateway messages (presence, door events, unlock results), each gateway's in order.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { JobRunner } from '../../platform/jobs.ts';
import { parseGatewayEvent, type AccessLogWriter, type GatewayEvent } from '../events/index.ts';
import { EmbeddedBroker } from './broker.ts';
import { MqttLink, type DeviceLink } from './link.ts';
import type { GatewayTopic } from './topics.ts';
import { PresenceService } from './presence.ts';
import { UnlockService } from './unlock.ts';

// The devices module's surface for the rest of the service.
export { BrokerUnavailableError, gatewayUsername, type GatewayAccounts } from './broker-accounts.ts';
export { MQTT_TOPIC_PREFIX } from './topics.ts';

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): the rows, not the database. */
const REFUSED_AS_DATA = /^2[23]/;
/** The longest wait between two attempts to write a gateway's message while the database is away. */
const STORE_RETRY_MAX_MS = 5000;

function refusedAsData(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && REFUSED_AS_DATA.test(code);
}

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
  accessLog: AccessLogWriter,
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
  // A door event or command result is acknowledged to the gateway only once it is committed (README
  // "Gateways"), so nothing a gateway was told is stored can vanish in a crash. Until then it is retried
  // while the database is away (the gateway's later messages wait behind, in order); what the database
  // refuses as data is dropped and logged, since sending it again cannot help. Resolves true once written
  // or refused, false when the service shut down first: then it stays unacknowledged and the gateway (or
  // the external broker's session) sends it again.
  let closing = false;
  const untilWritten = async (gatewayId: number, write: () => Promise<void>, refused: (error: unknown) => Promise<boolean> | boolean): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        return true;
      } catch (error) {
        if (refusedAsData(error)) return refused(error);
        if (closing) return false;
        log.warn({ err: error, gatewayId, attempt }, 'gateway message not stored yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(STORE_RETRY_MAX_MS, 100 * 2 ** attempt)));
      }
    }
  };
  // Presence changes are retried like the rest, so a will that arrives while the database is away still
  // marks the gateway offline once it is back.
  const presence = new PresenceService(db, clock, log, (gatewayId, work) =>
    handle(gatewayId, () =>
      untilWritten(
        gatewayId,
        async () => void (await work()),
        (error) => {
          log.error({ err: error, gatewayId }, 'presence change refused by the database; dropped');
          return true;
        },
      ),
    ),
  );
  jobs.register(presence.quietJob());
  // A batch the database refuses as data is written event by event, so that the one bad event is all that
  // is lost (logged whole: ids, types and times, nothing personal).
  const storeEvents = (gatewayId: number, events: GatewayEvent[]): Promise<boolean> =>
    untilWritten(
      gatewayId,
      async () => void (await accessLog.ingestBatch(gatewayId, events)),
      async (error) => {
        if (events.length === 1) {
          log.error({ err: error, gatewayId, event: events[0] }, 'door event refused by the database; dropped');
          return true;
        }
        let settled = true;
        for (const event of events) settled = (await storeEvents(gatewayId, [event])) && settled;
        return settled;
      },
    );
  /** Resolves when `written` resolves true; never when the service shut down first (no acknowledgement). */
  const acknowledgeWhen = (written: Promise<boolean>): Promise<void> => new Promise<void>((resolve) => void written.then((ok) => ok && resolve()));
  // Door events that arrive while earlier work of the gateway is still being written wait in one batch,
  // stored in one write when its turn comes: in order, and far fewer statements under load. Each is
  // acknowledged when its batch is committed. The broker limits what arrives unacknowledged: the embedded
  // one reads a gateway's next packets only once those of its last read are acknowledged; an external one
  // sends at most RECEIVE_MAXIMUM (link.ts) unacknowledged messages per connection.
  // A copy of an event already waiting (a gateway that reconnected and sent again what was not acknowledged
  // yet) joins it instead of growing the batch: what waits stays bounded by the distinct events in flight.
  const waiting = new Map<number, { events: Map<string, GatewayEvent>; stored: Promise<void> }>();
  const onEvent = (gatewayId: number, event: GatewayEvent): Promise<void> => {
    let batch = waiting.get(gatewayId);
    if (!batch) {
      const events = new Map<string, GatewayEvent>();
      let written: (ok: boolean) => void = () => undefined;
      batch = { events, stored: acknowledgeWhen(new Promise<boolean>((resolve) => (written = resolve))) };
      waiting.set(gatewayId, batch);
      handle(gatewayId, async () => {
        waiting.delete(gatewayId);
        written(await storeEvents(gatewayId, [...events.values()]));
      });
    }
    if (!batch.events.has(event.id)) batch.events.set(event.id, event);
    return batch.stored;
  };
  const onResult = (gatewayId: number, payload: unknown): Promise<void> => {
    let written: (ok: boolean) => void = () => undefined;
    const acknowledged = acknowledgeWhen(new Promise<boolean>((resolve) => (written = resolve)));
    handle(gatewayId, async () =>
      written(
        await untilWritten(
          gatewayId,
          () => unlock.result(gatewayId, payload),
          (error) => {
            log.error({ err: error, gatewayId }, 'command result refused by the database; dropped');
            return true;
          },
        ),
      ),
    );
    return acknowledged;
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
    if (topic === 'commands/result') return onResult(gatewayId, payload);
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
    link = new MqttLink(config, onMessage, log);
    gatewayUrl = config.mqttUrl;
  } else {
    // Nobody is connected to a broker that is starting: what the store still holds online (a crash left
    // it so) goes offline, each gateway ahead of what its reconnection brings. One instance per embedded
    // broker: several instances share an external broker (MQTT_URL), whose connections outlive a restart.
    await presence.startWithNobodyConnected();
    broker = new EmbeddedBroker(
      db,
      { connected: (gatewayId) => presence.connected(gatewayId), disconnected: (gatewayId) => presence.lost(gatewayId) },
      onMessage,
      config.mqttMaxPacketBytes,
      log,
    );
    const port = await broker.start(config.mqttPort, config.host);
    link = broker.link();
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
