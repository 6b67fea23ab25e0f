// The service's MQTT connection: to the embedded broker, or to MQTT_URL. With an external broker several
// instances share the gateway topics through an MQTT 5 shared subscription, so each message is handled once.
import type { FastifyBaseLogger } from 'fastify';
import mqtt, { type MqttClient } from 'mqtt';
import { randomBytes } from 'node:crypto';
import { MQTT_TOPIC_PREFIX } from '../operator/service.ts';

export type GatewayTopic = 'presence' | 'heartbeat' | 'events' | 'commands/result';

export interface LinkOptions {
  url: string;
  username?: string;
  password?: string;
  clientId?: string;
  /** Share the subscriptions among instances (MQTT 5 `$share/latchkey/…`). */
  shared: boolean;
}

const TOPIC = new RegExp(`^${MQTT_TOPIC_PREFIX.replace('/', '\\/')}\\/gateways\\/(\\d+)\\/(presence|heartbeat|events|commands\\/result)$`);

export class MqttLink {
  private client: MqttClient | null = null;

  constructor(
    private readonly options: LinkOptions,
    private readonly onMessage: (gatewayId: number, topic: GatewayTopic, payload: unknown) => void,
    private readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    const { url, username, password, shared } = this.options;
    const client = await mqtt.connectAsync(url, {
      protocolVersion: shared ? 5 : 4,
      clientId: this.options.clientId ?? `latchkey-${randomBytes(6).toString('hex')}`,
      username,
      password,
      clean: true,
      reconnectPeriod: 1000,
    });
    // Small QoS 1 packets must not wait for Nagle's algorithm (a 40 ms stall per round trip otherwise).
    const noDelay = () => (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    noDelay();
    client.on('connect', noDelay);
    client.on('error', (error) => this.log.warn({ err: error }, 'mqtt error'));
    client.on('message', (topic, payload) => {
      const match = TOPIC.exec(topic);
      if (!match) return;
      let parsed: unknown;
      try {
        parsed = payload.length === 0 ? {} : JSON.parse(payload.toString('utf8'));
      } catch {
        this.log.warn({ topic }, 'mqtt payload is not JSON; dropped');
        return;
      }
      this.onMessage(Number(match[1]), match[2] as GatewayTopic, parsed);
    });
    const topics = ['presence', 'heartbeat', 'events', 'commands/result'].map((t) => `${MQTT_TOPIC_PREFIX}/gateways/+/${t}`);
    await client.subscribeAsync(
      topics.map((t) => (shared ? `$share/latchkey/${t}` : t)),
      { qos: 1 },
    );
    this.client = client;
  }

  /** Publishes at QoS 1 and resolves when the broker accepted it; throws when it refuses or cannot be reached. */
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
