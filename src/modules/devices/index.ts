// The device link: the embedded broker (MQTT_URL unset) or an external one, and what the service does with
// gateway messages. Presence now; door events and unlock commands build on the same link.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { JobRunner } from '../../platform/jobs.ts';
import { AccessLog, parseGatewayEvent } from '../events/access-log.ts';
import { EmbeddedBroker } from './broker.ts';
import { MqttLink, type GatewayTopic } from './link.ts';
import { PresenceService } from './presence.ts';
import { UnlockService } from './unlock.ts';

export interface Devices {
  /** Where gateways dial (POST /admin/v1/gateways answers it). */
  gatewayUrl: string;
  /** The embedded broker's URL, when it runs. */
  embeddedUrl: string | null;
  unlock: UnlockService;
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
  const presence = new PresenceService(db, clock, log);
  jobs.register(presence.quietJob());

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
  const onMessage = (gatewayId: number, topic: GatewayTopic, payload: unknown) =>
    handle(gatewayId, async () => {
      await presence.heard(gatewayId);
      if (topic === 'presence' && typeof (payload as { online?: unknown }).online === 'boolean') {
        await presence.setOnline(gatewayId, (payload as { online: boolean }).online);
      } else if (topic === 'commands/result') {
        await unlock.result(gatewayId, payload);
      } else if (topic === 'events') {
        const event = parseGatewayEvent(payload);
        if (!event) return log.warn({ gatewayId }, 'malformed gateway event; dropped');
        await accessLog.ingest(gatewayId, event);
      }
    });

  let broker: EmbeddedBroker | null = null;
  // Assigned below, before any message can arrive.
  let link: MqttLink;
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
    link = new MqttLink({ url: config.mqttUrl, shared: true }, onMessage, log);
    gatewayUrl = config.mqttUrl;
  } else {
    broker = new EmbeddedBroker(db, (gatewayId) => handle(gatewayId, () => presence.setOnline(gatewayId, false)));
    const port = await broker.start(config.mqttPort, config.host);
    link = new MqttLink(
      { url: `mqtt://127.0.0.1:${port}`, username: broker.internal.username, password: broker.internal.password, clientId: broker.internal.username, shared: false },
      onMessage,
      log,
    );
    gatewayUrl = `mqtt://${new URL(config.publicUrl).hostname}:${port}`;
  }
  await link.start();
  return {
    gatewayUrl,
    embeddedUrl: broker ? gatewayUrl : null,
    unlock,
    async close() {
      await link.close();
      await broker?.close();
      await Promise.allSettled([...queues.values()]);
    },
  };
}
