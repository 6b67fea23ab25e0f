// The service's link to the gateways: in process with the embedded broker (EmbeddedBroker.link), or an
// MQTT connection to MQTT_URL, where every instance subscribes to every gateway message for itself (each
// handled by every instance, the stores dropping repeats), so that no instance's absence holds any back.
import type { FastifyBaseLogger } from 'fastify';
import type { IPublishPacket, MqttClient, Packet } from 'mqtt';
import type { Config } from '../../config.ts';
import { logConnection } from './connection-log.ts';
import { encodePayload } from './payload.ts';
import { GATEWAY_TOPIC_FILTERS, parseGatewayTopic, type GatewayTopic } from './topics.ts';

/** `ok`; `down`: not connected (or not listening); `not_subscribed`: connected, some gateway topics not subscribed. */
export type LinkState = 'ok' | 'down' | 'not_subscribed';

/** What the device module needs of a link, whichever broker is behind it. */
export interface DeviceLink {
  start(): Promise<void>;
  /** Publishes at QoS 1 and resolves when the broker accepted it; throws when it refuses or cannot be reached. */
  publish(topic: string, payload: unknown): Promise<void>;
  /** Whether the link is up now (GET /readyz): the embedded broker listens, or the client is connected to MQTT_URL and subscribed. */
  state(): LinkState;
  /** The service's gateway topic filters not subscribed now: all of them while disconnected (latchkey_mqtt_subscriptions_missing). */
  missingSubscriptions(): number;
  close(): Promise<void>;
}

/**
 * Handles one gateway message (a JSON object, or UNREADABLE); a promise means "acknowledge it once this resolves"
 * (door events and command results, once committed). It never resolves when the service shuts down first: the message stays
 * unacknowledged and is sent again.
 */
export type GatewayMessageHandler = (gatewayId: number, topic: GatewayTopic, payload: unknown) => Promise<void> | undefined;

/**
 * What the handler is given for a payload that is not a JSON object: dropped (and so acknowledged: sending it again
 * cannot help), but still a message from the gateway, which the contract counts as a heartbeat.
 */
export const UNREADABLE = Symbol('unreadable gateway payload');

/**
 * Hands a gateway message to the handler: topics that are not a gateway's are dropped; a payload that is not a JSON
 * object reaches it as UNREADABLE. It never throws: it runs inside the broker's and the MQTT client's callbacks,
 * where an exception would end the process.
 */
export function routeGatewayMessage(topic: string, payload: Buffer, onMessage: GatewayMessageHandler, log: FastifyBaseLogger): Promise<void> | undefined {
  const match = parseGatewayTopic(topic);
  if (!match) return undefined;
  let parsed: unknown;
  try {
    parsed = payload.length === 0 ? {} : JSON.parse(payload.toString('utf8'));
  } catch {
    log.warn({ topic }, 'mqtt payload is not JSON; dropped');
    parsed = UNREADABLE;
  }
  if (parsed !== UNREADABLE && (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))) {
    log.warn({ topic }, 'mqtt payload is not a JSON object; dropped');
    parsed = UNREADABLE;
  }
  try {
    return onMessage(match.gatewayId, match.kind, parsed);
  } catch (error) {
    log.error({ err: error, topic }, 'gateway message failed; dropped');
    return undefined;
  }
}

/** How many unacknowledged messages the external broker may send the service at once (MQTT 5 Receive Maximum). */
const RECEIVE_MAXIMUM = 1000;
/**
 * Receive Maximum bounds QoS 1 only: a gateway publishing at QoS 0 (the contract's QoS 1 topics too: a broker's
 * ACLs cannot tell) had no bound, and 25 s of QoS 0 door events took the service to 2.3 GB. A QoS 0 message of a
 * gateway with this many of its messages still being handled is dropped (at most once: the gateway chose so).
 */
export const MAX_QOS0_BEHIND = 200;
/** A gateway whose QoS 0 messages are dropped is logged at most this often. */
const OVERLOAD_LOG_MS = 60_000;
/** A gateway topic's retained message (not presence) is cleared on the broker at most this often. */
const CLEAR_RETAINED_EVERY_MS = 10_000;
/** How long the external broker has to acknowledge a command before the unlock answers 502. */
const PUBLISH_TIMEOUT_MS = 5000;
/** At shutdown, how long messages being written may take to be acknowledged. */
const CLOSE_WAIT_MS = 5000;
/** While some subscriptions are missing (refused, or the SUBSCRIBE failed), how often they are asked for again. */
const RESUBSCRIBE_MS = 5000;
/** The shared subscriptions of earlier versions, left in sessions they made (see subscribeAll). */
const SHARED_FILTERS = GATEWAY_TOPIC_FILTERS.map((t) => `$share/latchkey/${t}`);

type SendPacket = (packet: Packet, callback?: (error?: Error) => void, ...rest: unknown[]) => void;

export interface MqttLinkOptions {
  /** A gateway message other than presence came retained, and was dropped (the embedded broker refuses it). */
  retainedDropped?: (gatewayId: number, kind: GatewayTopic) => void;
  /** A QoS 0 message of a gateway with MAX_QOS0_BEHIND of its messages still being handled, dropped. */
  overloadDropped?: (gatewayId: number, kind: GatewayTopic) => void;
  /** How often refused subscriptions are asked for again (RESUBSCRIBE_MS; shorter in tests). */
  resubscribeMs?: number;
}

/**
 * The link through an external broker (MQTT_URL; credentials, if any, in the URL). Every instance subscribes
 * to every gateway topic itself, not through a shared subscription: a broker keeps handing a share to the
 * session of an instance that died (Mosquitto and EMQX alike, until the session expires), and Mosquitto 2.0
 * does not restore shared subscriptions from persistence. So every message reaches every live instance;
 * door events are stored once by (gateway, id), a command ends once, and presence changes fire once.
 *
 * Subscriptions are made anew on every connection, whatever the broker says of the session: a session that
 * is "present" may have lost them. Retain As Published shows which messages were sent retained: presence
 * (the broker's replay of it is the gateways' state, missed by a service that was away), and nothing else.
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
  /** Gateway topic filters granted on the current connection. */
  private granted = new Set<string>();
  /** Each gateway's messages being handled (see MAX_QOS0_BEHIND), and when its dropping was last logged. */
  private readonly handling = new Map<number, number>();
  private readonly overloadLoggedAt = new Map<number, number>();
  /** When each gateway topic's retained message was last cleared (see retainedRefused). */
  private readonly clearedAt = new Map<string, number>();
  private resubscribeTimer: NodeJS.Timeout | null = null;
  /** The subscribing of the latest connection. */
  private subscribing: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: Pick<Config, 'mqttUrl' | 'mqttClientId' | 'mqttSessionExpirySeconds' | 'mqttMaxPacketBytes'>,
    private readonly onMessage: GatewayMessageHandler,
    private readonly log: FastifyBaseLogger,
    private readonly options: MqttLinkOptions = {},
  ) {}

  async start(): Promise<void> {
    // Every handler is in place before the connection is: a resumed session delivers what it kept right
    // after CONNACK, and a message without its handler would be acknowledged unhandled.
    // mqtt.js is loaded only for an external broker (the embedded one needs no client).
    const { connect } = await import('mqtt');
    const client = connect(this.config.mqttUrl ?? '', {
      protocolVersion: 5,
      clientId: this.config.mqttClientId,
      clean: false,
      // The same limit as the embedded broker's: the broker sends nothing larger to the service.
      properties: { sessionExpiryInterval: this.config.mqttSessionExpirySeconds, receiveMaximum: RECEIVE_MAXIMUM, maximumPacketSize: this.config.mqttMaxPacketBytes },
      reconnectPeriod: 1000,
      // subscribeAll does it, on every connection (mqtt.js would only when the session is not present).
      resubscribe: false,
    });
    this.holdAcknowledgements(client);
    // Small QoS 1 packets must not wait for Nagle's algorithm (a 40 ms stall per round trip otherwise).
    const noDelay = () => (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    noDelay();
    client.on('connect', noDelay);
    // A new connection: acknowledgements still held belong to the old one; the broker sends those messages
    // again (the repeats are dropped by (gateway, id)) and they are acknowledged then.
    client.on('connect', () => {
      this.pending = new Map();
      this.granted = new Set();
      this.subscribing = this.subscribeAll(client);
    });
    client.on('close', () => (this.granted = new Set()));
    logConnection(client, this.log, { name: 'mqtt connection', clientId: this.config.mqttClientId, clientIdSetting: 'MQTT_CLIENT_ID' });
    client.on('disconnect', (packet) => {
      // 0x8E: another connection took the session over, i.e. another process uses the same MQTT_CLIENT_ID.
      if (packet.reasonCode === 0x8e) this.log.error({ clientId: this.config.mqttClientId }, 'another process connected with this MQTT_CLIENT_ID; every instance needs its own');
    });
    client.on('message', (topic, payload, packet) => {
      if (this.retainedRefused(client, topic, payload, packet)) return;
      const match = parseGatewayTopic(topic);
      if (match && packet.qos === 0 && this.overloaded(match.gatewayId, match.kind)) return;
      const handled = routeGatewayMessage(topic, payload, this.onMessage, this.log);
      if (handled && match) this.behind(match.gatewayId, handled);
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
    await this.subscribing;
    this.client = client;
  }

  /**
   * Subscribes to every gateway topic (QoS 1, Retain As Published) and notes what the broker granted; what it
   * refused is asked for again every RESUBSCRIBE_MS while this connection lasts. Shared subscriptions a
   * session of an earlier version holds are left, so that they stop taking a share of the messages.
   */
  private async subscribeAll(client: MqttClient): Promise<void> {
    if (this.resubscribeTimer) clearTimeout(this.resubscribeTimer);
    this.resubscribeTimer = null;
    const wanted = GATEWAY_TOPIC_FILTERS.filter((filter) => !this.granted.has(filter));
    try {
      // mqtt.js refuses an empty list ("Invalid topic empty_topic_list"), and there is nothing to ask for.
      if (wanted.length > 0) {
        const grants = await client.subscribeAsync(wanted, { qos: 1, rap: true });
        for (const grant of grants) if (grant.qos < 0x80) this.granted.add(grant.topic);
      }
      await client.unsubscribeAsync(SHARED_FILTERS).catch(() => undefined);
    } catch (error) {
      // A SUBACK refusing some filters rejects the whole call; the others were granted all the same.
      const codes = subackCodes(error);
      if (codes) codes.forEach((code, index) => code < 0x80 && wanted[index] !== undefined && this.granted.add(wanted[index]));
      else this.log.warn({ err: error }, 'mqtt subscription failed');
    }
    // Of this connection, not this.client: start() sets that only once this first subscribing is done.
    const missing = this.missingOn(client);
    if (missing === 0 || !client.connected) return;
    this.log.error({ missing }, 'the MQTT broker refused some of the service\'s gateway subscriptions; asking again');
    this.resubscribeTimer = setTimeout(() => {
      if (client.connected && this.client === client) this.subscribing = this.subscribeAll(client);
    }, this.options.resubscribeMs ?? RESUBSCRIBE_MS);
    this.resubscribeTimer.unref();
  }

  /**
   * A retained gateway message other than presence: dropped (the embedded broker refuses it), and cleared on
   * the broker with an empty retained message, so that it is not replayed to every subscription made later.
   * An empty one is such a clearing. The clearing needs the service's broker role to allow publishing there.
   */
  /** Counts a gateway's message being handled until it is. */
  private behind(gatewayId: number, handled: Promise<void>): void {
    this.handling.set(gatewayId, (this.handling.get(gatewayId) ?? 0) + 1);
    const done = () => {
      const left = (this.handling.get(gatewayId) ?? 1) - 1;
      if (left > 0) this.handling.set(gatewayId, left);
      else this.handling.delete(gatewayId);
    };
    handled.then(done, done); // not finally(): a rejection would come back unhandled and end the process
  }

  /** Whether a QoS 0 message of the gateway is dropped: MAX_QOS0_BEHIND of its messages are being handled. */
  private overloaded(gatewayId: number, kind: GatewayTopic): boolean {
    if ((this.handling.get(gatewayId) ?? 0) < MAX_QOS0_BEHIND) return false;
    this.options.overloadDropped?.(gatewayId, kind);
    const now = Date.now();
    if ((this.overloadLoggedAt.get(gatewayId) ?? -Infinity) <= now - OVERLOAD_LOG_MS) {
      this.overloadLoggedAt.set(gatewayId, now);
      this.log.warn({ gatewayId, behind: MAX_QOS0_BEHIND }, 'gateway sends QoS 0 messages faster than they are handled; dropping them');
    }
    return true;
  }

  private retainedRefused(client: MqttClient, topic: string, payload: Buffer, packet: IPublishPacket): boolean {
    if (!packet.retain) return false;
    const match = parseGatewayTopic(topic);
    if (!match || match.kind === 'presence') return false;
    if (payload.length === 0) return true;
    this.options.retainedDropped?.(match.gatewayId, match.kind);
    // Cleared once a while per topic: a flood of retained messages is not a flood of clearings queued in the client.
    const now = Date.now();
    if ((this.clearedAt.get(topic) ?? -Infinity) > now - CLEAR_RETAINED_EVERY_MS) return true;
    this.clearedAt.set(topic, now);
    this.log.warn({ gatewayId: match.gatewayId, topic }, 'retained gateway message dropped; clearing it on the broker');
    client.publishAsync(topic, '', { qos: 1, retain: true }).catch((error: unknown) => this.log.warn({ err: error, topic }, 'the retained gateway message could not be cleared'));
    return true;
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

  state(): LinkState {
    if (this.client?.connected !== true) return 'down';
    return this.missingSubscriptions() === 0 ? 'ok' : 'not_subscribed';
  }

  missingSubscriptions(): number {
    return this.client ? this.missingOn(this.client) : GATEWAY_TOPIC_FILTERS.length;
  }

  private missingOn(client: MqttClient): number {
    return client.connected ? GATEWAY_TOPIC_FILTERS.length - this.granted.size : GATEWAY_TOPIC_FILTERS.length;
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
   * Lets what is being written be acknowledged, then disconnects. The subscriptions stay in the session:
   * if this was the last instance, the broker queues the gateways' messages for it while it is away.
   */
  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (this.resubscribeTimer) clearTimeout(this.resubscribeTimer);
    if (!client) return;
    if (client.connected) {
      const settled = Promise.allSettled([...this.pending.values()]);
      await Promise.race([settled, new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS).unref())]);
      // The last acknowledgements are on their way out once their commit resolved.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await client.endAsync();
  }
}

/** The reason codes of the SUBACK that mqtt.js rejected a subscribe with (one refused filter), in request order. */
function subackCodes(error: unknown): number[] | null {
  const packet = (error as { packet?: { cmd?: unknown; granted?: unknown } } | null)?.packet;
  if (packet?.cmd !== 'suback' || !Array.isArray(packet.granted)) return null;
  return packet.granted.map((code: unknown) => (typeof code === 'number' ? code : 0x80));
}
