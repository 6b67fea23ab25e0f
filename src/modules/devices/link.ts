// The service's link to the gateways: in process with the embedded broker (EmbeddedBroker.link), or an
// MQTT connection to MQTT_URL, where several instances share the gateway topics through an MQTT 5 shared
// subscription, so that each message is handled once.
import type { FastifyBaseLogger } from 'fastify';
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import { randomBytes } from 'node:crypto';
import { MQTT_TOPIC_PREFIX } from '../operator/service.ts';

export type GatewayTopic = 'presence' | 'heartbeat' | 'events' | 'commands/result';

/** What the device module needs of a link, whichever broker is behind it. */
export interface DeviceLink {
  start(): Promise<void>;
  /** Publishes at QoS 1 and resolves when the broker accepted it; throws when it refuses or cannot be reached. */
  publish(topic: string, payload: unknown): Promise<void>;
  close(): Promise<void>;
}

/**
 * Handles one gateway message; a promise means "delivered once it settles" (door events, once stored),
 * which the embedded broker uses as back-pressure on the gateway (EmbeddedBroker.link).
 */
export type GatewayMessageHandler = (gatewayId: number, topic: GatewayTopic, payload: unknown) => Promise<void> | undefined;

/** The topics the service listens to, one per kind of gateway message. */
export const GATEWAY_TOPIC_FILTERS = ['presence', 'heartbeat', 'events', 'commands/result'].map((t) => `${MQTT_TOPIC_PREFIX}/gateways/+/${t}`);

/** The presence topic of every gateway. */
export const PRESENCE_TOPIC_FILTER = `${MQTT_TOPIC_PREFIX}/gateways/+/presence`;

const TOPIC = new RegExp(`^${MQTT_TOPIC_PREFIX.replace('/', '\\/')}\\/gateways\\/(\\d+)\\/(presence|heartbeat|events|commands\\/result)$`);

/** Hands a gateway message to the handler: topics that are not a gateway's and payloads that are not JSON are dropped. */
export function routeGatewayMessage(topic: string, payload: Buffer, onMessage: GatewayMessageHandler, log: FastifyBaseLogger): Promise<void> | undefined {
  const match = TOPIC.exec(topic);
  if (!match) return undefined;
  let parsed: unknown;
  try {
    parsed = payload.length === 0 ? {} : JSON.parse(payload.toString('utf8'));
  } catch {
    log.warn({ topic }, 'mqtt payload is not JSON; dropped');
    return undefined;
  }
  return onMessage(Number(match[1]), match[2] as GatewayTopic, parsed);
}

/** Subscription identifiers (MQTT 5) of the external link: which subscription a message came through. */
const SHARED_SUBSCRIPTION = 1;
const PRESENCE_REPLAY_SUBSCRIPTION = 2;

function subscriptionIds(packet: IPublishPacket): number[] {
  const ids = packet.properties?.subscriptionIdentifier;
  return ids === undefined ? [] : Array.isArray(ids) ? ids : [ids];
}

/**
 * The link through an external broker (MQTT_URL; credentials, if any, in the URL). It subscribes through
 * MQTT 5 shared subscriptions (`$share/latchkey/…`), so that among instances each message is handled once.
 * Shared subscriptions get no retained messages, so a second, plain subscription to the presence topics
 * is there for the broker's replay of retained presence when it is made (at start and on every reconnect
 * to the broker): the broker's view of who is online, which a service that was down has missed. Its live
 * copies are dropped: the shared subscription carries those.
 */
export class MqttLink implements DeviceLink {
  private client: MqttClient | null = null;

  constructor(
    private readonly url: string,
    private readonly onMessage: GatewayMessageHandler,
    private readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    const client = await mqtt.connectAsync(this.url, {
      protocolVersion: 5,
      clientId: `latchkey-${randomBytes(6).toString('hex')}`,
      clean: true,
      reconnectPeriod: 1000,
    });
    // Small QoS 1 packets must not wait for Nagle's algorithm (a 40 ms stall per round trip otherwise).
    const noDelay = () => (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    noDelay();
    client.on('connect', noDelay);
    client.on('error', (error) => this.log.warn({ err: error }, 'mqtt error'));
    client.on('message', (topic, payload, packet) => {
      const ids = subscriptionIds(packet);
      // Through the replay subscription only, a message that is not retained is a live copy.
      if (!packet.retain && ids.includes(PRESENCE_REPLAY_SUBSCRIPTION) && !ids.includes(SHARED_SUBSCRIPTION)) return;
      void routeGatewayMessage(topic, payload, this.onMessage, this.log);
    });
    await client.subscribeAsync(
      GATEWAY_TOPIC_FILTERS.map((t) => `$share/latchkey/${t}`),
      { qos: 1, properties: { subscriptionIdentifier: SHARED_SUBSCRIPTION } },
    );
    await client.subscribeAsync(PRESENCE_TOPIC_FILTER, { qos: 1, properties: { subscriptionIdentifier: PRESENCE_REPLAY_SUBSCRIPTION } });
    this.client = client;
  }

  async publish(topic: string, payload: unknown): Promise<void> {
    const client = this.client;
    if (!client || !client.connected) throw new Error('not connected to the MQTT broker');
    await Promise.race([
      client.publishAsync(topic, JSON.stringify(payload), { qos: 1 }),
      new Promise((_, reject) => setTimeout(() => reject(new Error('the MQTT broker did not acknowledge the publish')), 5000).unref()),
    ]);
  }

  async close(): Promise<void> {
    await this.client?.endAsync();
    this.client = null;
  }
}
