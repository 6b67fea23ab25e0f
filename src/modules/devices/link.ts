// The service's link to the gateways: in process with the embedded broker (EmbeddedBroker.link), or an
// MQTT connection to MQTT_URL, where several instances share the gateway topics through an MQTT 5 shared
// subscription, so that each message is handled once.
import type { FastifyBaseLogger } from 'fastify';
import mqtt, { type IPublishPacket, type MqttClient, type Packet } from 'mqtt';
import type { Config } from '../../config.ts';
import { encodePayload } from './payload.ts';
import { GATEWAY_TOPIC_FILTERS, parseGatewayTopic, PRESENCE_TOPIC_FILTER, type GatewayTopic } from './topics.ts';

/** What the device module needs of a link, whichever broker is behind it. */
export interface DeviceLink {
  start(): Promise<void>;
  /** Publishes at QoS 1 and resolves when the broker accepted it; throws when it refuses or cannot be reached. */
  publish(topic: string, payload: unknown): Promise<void>;
  /** Whether the link is up now: the embedded broker listens, or the client is connected to MQTT_URL (GET /readyz). */
  connected(): boolean;
  close(): Promise<void>;
}

/**
 * Handles one gateway message; a promise means "acknowledge it once this resolves" (door events and command
 * results, once committed). It never resolves when the service shuts down first: the message stays
 * unacknowledged and is sent again.
 */
export type GatewayMessageHandler = (gatewayId: number, topic: GatewayTopic, payload: unknown) => Promise<void> | undefined;

/**
 * Hands a gateway message to the handler: topics that are not a gateway's and payloads that are not a JSON
 * object are dropped (and so acknowledged: sending them again cannot help). It never throws: it runs inside
 * the broker's and the MQTT client's callbacks, where an exception would end the process.
 */
export function routeGatewayMessage(topic: string, payload: Buffer, onMessage: GatewayMessageHandler, log: FastifyBaseLogger): Promise<void> | undefined {
  const match = parseGatewayTopic(topic);
  if (!match) return undefined;
  let parsed: unknown;
  try {
    parsed = payload.length === 0 ? {} : JSON.parse(payload.toString('utf8'));
  } catch {
    log.warn({ topic }, 'mqtt payload is not JSON; dropped');
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    log.warn({ topic }, 'mqtt payload is not a JSON object; dropped');
    return undefined;
  }
  try {
    return onMessage(match.gatewayId, match.kind, parsed);
  } catch (error) {
    log.error({ err: error, topic }, 'gateway message failed; dropped');
    return undefined;
  }
}

/** Subscription identifiers (MQTT 5) of the external link: which subscription a message came through. */
const SHARED_SUBSCRIPTION = 1;
const PRESENCE_REPLAY_SUBSCRIPTION = 2;

function subscriptionIds(packet: IPublishPacket): number[] {
  const ids = packet.properties?.subscriptionIdentifier;
  return ids === undefined ? [] : Array.isArray(ids) ? ids : [ids];
}

/** How many unacknowledged messages the external broker may send the service at once (MQTT 5 Receive Maximum). */
const RECEIVE_MAXIMUM = 1000;
/** How long the external broker has to acknowledge a command before the unlock answers 502. */
const PUBLISH_TIMEOUT_MS = 5000;
/** At shutdown, how long messages being written may take to be acknowledged. */
const CLOSE_WAIT_MS = 5000;

type SendPacket = (packet: Packet, callback?: (error?: Error) => void, ...rest: unknown[]) => void;

/**
 * The link through an external broker (MQTT_URL; credentials, if any, in the URL). It subscribes through
 * MQTT 5 shared subscriptions (`$share/latchkey/…`), so that among instances each message is handled once.
 * Shared subscriptions get no retained messages, so a second, plain subscription to the presence topics
 * is there for the broker's replay of retained presence when it is made (at start and on every reconnect
 * to the broker): the broker's view of who is online, which a service that was down has missed. Its live
 * copies are dropped: the shared subscription carries those.
 *
 * Door events and command results are acknowledged to the broker only once committed. The session is
 * persistent (MQTT_CLIENT_ID, MQTT_SESSION_EXPIRY_SECONDS): what the service had not acknowledged when it
 * died, and what arrived while it was away, is delivered again when it reconnects. mqtt.js sends a PUBACK as
 * soon as the message handler is done and reads the next packet only then, so waiting there would handle
 * one message per commit; instead the PUBACK itself is held back (see holdAcknowledgements) while the
 * connection reads on, the broker sending at most RECEIVE_MAXIMUM unacknowledged messages.
 */
export class MqttLink implements DeviceLink {
  private client: MqttClient | null = null;
  /** Acknowledgements waiting for their message to be committed, by message id, on the current connection. */
  private pending = new Map<number, Promise<void>>();

  constructor(
    private readonly config: Pick<Config, 'mqttUrl' | 'mqttClientId' | 'mqttSessionExpirySeconds'>,
    private readonly onMessage: GatewayMessageHandler,
    private readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    // Every handler is in place before the connection is: a resumed session delivers what it kept right
    // after CONNACK, and a message without its handler would be acknowledged unhandled.
    const client = mqtt.connect(this.config.mqttUrl ?? '', {
      protocolVersion: 5,
      clientId: this.config.mqttClientId,
      clean: false,
      properties: { sessionExpiryInterval: this.config.mqttSessionExpirySeconds, receiveMaximum: RECEIVE_MAXIMUM },
      reconnectPeriod: 1000,
    });
    this.holdAcknowledgements(client);
    // Small QoS 1 packets must not wait for Nagle's algorithm (a 40 ms stall per round trip otherwise).
    const noDelay = () => (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    noDelay();
    client.on('connect', noDelay);
    // A new connection: acknowledgements still held belong to the old one; the broker sends those messages
    // again (the repeats are dropped by (gateway, id)) and they are acknowledged then.
    client.on('connect', () => (this.pending = new Map()));
    // mqtt.js does not subscribe again on a resumed session, so the broker would not replay the retained
    // presence it holds: on every reconnect the replay subscription is made anew (the first one is below).
    let connections = 0;
    client.on('connect', () => {
      if (++connections > 1) client.subscribe(PRESENCE_TOPIC_FILTER, { qos: 1, properties: { subscriptionIdentifier: PRESENCE_REPLAY_SUBSCRIPTION } });
    });
    client.on('error', (error) => this.log.warn({ err: error }, 'mqtt error'));
    client.on('disconnect', (packet) => {
      // 0x8E: another connection took the session over, i.e. another process uses the same MQTT_CLIENT_ID.
      if (packet.reasonCode === 0x8e) this.log.error({ clientId: this.config.mqttClientId }, 'another process connected with this MQTT_CLIENT_ID; every instance needs its own');
    });
    client.on('message', (topic, payload, packet) => {
      const ids = subscriptionIds(packet);
      // Through the replay subscription only, a message that is not retained is a live copy.
      if (!packet.retain && ids.includes(PRESENCE_REPLAY_SUBSCRIPTION) && !ids.includes(SHARED_SUBSCRIPTION)) return;
      const handled = routeGatewayMessage(topic, payload, this.onMessage, this.log);
      if (handled && packet.qos === 1 && packet.messageId !== undefined) this.pending.set(packet.messageId, handled);
    });
    await new Promise<void>((resolve, reject) => {
      const failed = (error: Error) => {
        client.end(true);
        reject(error);
      };
      client.once('error', failed);
      client.once('connect', () => {
        client.off('error', failed);
        resolve();
      });
    });
    await client.subscribeAsync(
      GATEWAY_TOPIC_FILTERS.map((t) => `$share/latchkey/${t}`),
      { qos: 1, properties: { subscriptionIdentifier: SHARED_SUBSCRIPTION } },
    );
    await client.subscribeAsync(PRESENCE_TOPIC_FILTER, { qos: 1, properties: { subscriptionIdentifier: PRESENCE_REPLAY_SUBSCRIPTION } });
    this.client = client;
  }

  /**
   * Holds each PUBACK until its message is committed, letting the connection read on meanwhile. mqtt.js has
   * no public hook for this (handleMessage delays the next packet as well), so its packet writer is wrapped;
   * test/devices/crash-*.test.ts fail if an upgrade changes that writer.
   */
  private holdAcknowledgements(client: MqttClient): void {
    const target = client as unknown as { _sendPacket?: SendPacket };
    // package.json pins mqtt's exact version; an upgrade that renamed the writer must not start silently.
    if (typeof target._sendPacket !== 'function') throw new Error('mqtt.js has no _sendPacket: acknowledgements cannot wait for commits');
    const send: SendPacket = target._sendPacket.bind(client);
    target._sendPacket = (packet, callback, ...rest) => {
      if (packet.cmd !== 'puback' || packet.messageId === undefined) return send(packet, callback, ...rest);
      const committed = this.pending.get(packet.messageId);
      if (!committed) return send(packet, callback, ...rest);
      const pending = this.pending;
      pending.delete(packet.messageId);
      callback?.(); // the connection goes on reading
      void committed.then(() => {
        // Not on a later connection: the broker delivers the message again there.
        if (this.pending === pending && client.connected) send(packet, undefined, ...rest);
      });
    };
  }

  connected(): boolean {
    return this.client?.connected === true;
  }

  /**
   * A publish the broker does not acknowledge in time counts as refused (the unlock answers 502), so it is
   * also taken out of mqtt.js's outgoing store: sent again after a reconnect, it would open the door after
   * the caller was told it failed. (A packet already on the wire to a broker that is only stalled can still
   * arrive; the command's `expires_at` is the gateway's guard then.)
   */
  async publish(topic: string, payload: unknown): Promise<void> {
    const client = this.client;
    if (!client || !client.connected) throw new Error('not connected to the MQTT broker');
    const body = encodePayload(payload);
    let messageId: number | undefined;
    const noteId = (packet: Packet) => {
      if (packet.cmd === 'publish' && packet.payload === body) messageId = packet.messageId;
    };
    client.on('packetsend', noteId);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.publishAsync(topic, body, { qos: 1 }),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the MQTT broker did not acknowledge the publish')), PUBLISH_TIMEOUT_MS))),
      ]);
    } catch (error) {
      if (messageId !== undefined) client.removeOutgoingMessage(messageId);
      throw error;
    } finally {
      clearTimeout(timer);
      client.off('packetsend', noteId);
    }
  }

  /**
   * Leaves the shared subscription first, so that the broker hands new messages to the other instances
   * instead of queueing them for this one while it is away; then lets what is being written be acknowledged.
   */
  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (!client) return;
    if (client.connected) {
      await client.unsubscribeAsync(GATEWAY_TOPIC_FILTERS.map((t) => `$share/latchkey/${t}`)).catch(() => undefined);
      const settled = Promise.allSettled([...this.pending.values()]);
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
      // The last acknowledgements are on their way out once their commit resolved.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await client.endAsync();
  }
}
