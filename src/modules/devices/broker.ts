// The embedded MQTT broker (Aedes), used when MQTT_URL is unset. Gateways authenticate with the
// credentials of POST /admin/v1/gateways (password stored hashed) and may use only what the gateway
// protocol (README "Gateways") gives them under `{prefix}/gateways/{id}/`. The service itself is linked in
// process (no socket, no second parse): it handles each gateway message as Aedes authorises it, so that a
// QoS 1 message is acknowledged only once it is committed (Aedes writes PUBACK after authorizePublish).
import { Aedes, type AuthenticateError, type Client, type PublishPacket } from 'aedes';
import type { FastifyBaseLogger } from 'fastify';
import { createServer, type Server } from 'node:net';
import type { Database } from '../../platform/db/index.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { mayPublish, maySubscribe } from './gateway-access.ts';
import { encodePayload } from './payload.ts';
import { gatewayTopicPrefix } from './topics.ts';
import { routeGatewayMessage, type DeviceLink, type GatewayMessageHandler } from './link.ts';
import { limitPacketSize } from './packet-size.ts';
import { gatewayByUsername } from './store.ts';
import { SubscribeRefusals } from './subscribe-refusals.ts';

const BAD_CREDENTIALS = 4;
const NOT_AUTHORIZED = 5;
/** A connection that has not sent its CONNECT packet by then is closed (Aedes's default is 30 s). */
export const CONNECT_TIMEOUT_MS = 5000;
/** The one kind of gateway message that may be retained (its last presence, for services that start later). */
const RETAINED_GATEWAY_PUBLISH = 'presence';
/**
 * Messages waiting for a connection's socket to drain: past this many it is not reading, and is closed. Each holds one
 * of Aedes's deliveries in flight until the socket drains, and when they are all held no gateway gets anything (a
 * gateway that stopped reading and asked thousands of questions stalled every account's answers for a minute). The
 * service sends a list part by part, each after the last was taken, so a gateway that reads, even slowly, stays far
 * below it.
 */
export const MAX_UNDRAINED_FORWARDS = 32;
/** Aedes's deliveries in flight at once (its default 100): room for many slow gateways beside the others. */
const DELIVERIES_IN_FLIGHT = 1000;
/** How long a delivery may wait for a connection's socket to drain before the connection is closed (Aedes's default 60 s). */
const DRAIN_TIMEOUT_MS = 15_000;
/** How often the deliveries held by connections that have not drained are counted, all connections together (see sweep). */
const HELD_SWEEP_MS = 250;

/** Aedes 1.x keeps a connection's deliveries waiting for its socket to drain in `_pendingDrains` (a test pins it). */
type AedesClientInternals = { _pendingDrains?: unknown[] };

/** The deliveries Aedes holds for this connection until its socket drains (each holds one of those in flight). */
function heldDeliveries(client: Client): number {
  const pending = (client as unknown as AedesClientInternals)._pendingDrains;
  if (Array.isArray(pending)) return pending.length;
  return client.conn.writableNeedDrain ? 1 : 0; // another Aedes: at least whether it waits
}

function authError(code: number, message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode: code }) as AuthenticateError;
}

/** What the broker tells the device module about gateway connections. */
export interface GatewayConnections {
  /** A gateway logged in (contact, even when its previous connection is still open). */
  connected(gatewayId: number): void;
  /** The last open connection of a gateway ended. */
  disconnected(gatewayId: number): void;
  /** A login as the gateway was refused: a wrong password, or a client id that is not its user name. */
  refused(gatewayId: number): void;
}

export class EmbeddedBroker {
  private server: Server | null = null;
  private broker: Aedes | null = null;
  /**
   * The gateway of each authenticated connection. Keyed by connection, not client id: a gateway that
   * reconnects while its old connection is open has two for a moment (until Aedes closes the old one),
   * and the old one's end must not undo the new login.
   */
  private readonly gatewayOf = new Map<Client, number>();
  /** The open authenticated connections of each gateway. */
  private readonly connectionsOf = new Map<number, Set<Client>>();
  /**
   * When each gateway was last cut off (a count of cuts): a login whose password was read before it is
   * refused, so a connection checked against the old password during a rotation does not stay open.
   */
  private readonly cutOffAt = new Map<number, number>();
  private cuts = 0;
  private readonly subscribeRefusals: SubscribeRefusals;
  /** Connections closed for not reading (their close is under way): forwarded nothing more, said once. */
  private readonly closingNotReading = new WeakSet<Client>();
  /** The deliveries held by all connections at the last sweep. */
  private heldByAll = 0;
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database,
    private readonly connections: GatewayConnections,
    private readonly onMessage: GatewayMessageHandler,
    private readonly maxPacketBytes: number,
    private readonly log: FastifyBaseLogger,
    /** Aedes's deliveries in flight (a test makes it small). */
    private readonly deliveriesInFlight = DELIVERIES_IN_FLIGHT,
  ) {
    this.subscribeRefusals = new SubscribeRefusals(log);
  }

  async start(port: number, host: string): Promise<number> {
    const broker = await Aedes.createBroker({
      connectTimeout: CONNECT_TIMEOUT_MS,
      concurrency: this.deliveriesInFlight,
      drainTimeout: DRAIN_TIMEOUT_MS,
      authenticate: (client, username, password, done) => {
        void this.authenticate(client, username, password).then(
          (ok) => done(ok ? null : authError(BAD_CREDENTIALS, 'bad user name or password'), ok),
          () => done(authError(3, 'server unavailable'), false),
        );
      },
      // MQTT 3.1.1 cannot refuse one publish: Aedes closes the connection, and nothing is stored or forwarded.
      // An allowed gateway message is handled here; Aedes acknowledges it (PUBACK) once this calls back, and
      // reads the gateway's next packets only once every packet of its last read is done: so a door event or
      // command result is acknowledged when committed, and a gateway's backlog stays in the gateway and TCP.
      // Nothing subscribes to what gateways publish, so Aedes forwards it nowhere.
      authorizePublish: (client, packet, callback) => {
        if (!client) return callback(null); // the service's own publishes (commands), in process
        const refusal = this.publishRefusal(client, packet);
        if (refusal) return callback(authError(NOT_AUTHORIZED, refusal));
        const handled = routeGatewayMessage(packet.topic, Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload), this.onMessage, this.log);
        if (handled) void handled.then(() => callback(null));
        else callback(null);
      },
      authorizeForward: (client, packet) => (this.notReading(client) ? null : packet),
      // A filter it may not have closes the connection, as a refused publish does (README "Security"): a
      // SUBACK failure code per filter kept it open for the next packet of thousands. Logged once (subscribe-refusals.ts).
      authorizeSubscribe: (client, subscription, callback) => {
        const gatewayId = this.gatewayOf.get(client);
        if (gatewayId !== undefined && maySubscribe(gatewayId, subscription.topic)) return callback(null, subscription);
        this.subscribeRefusals.note(client, gatewayId, subscription.topic);
        callback(authError(NOT_AUTHORIZED, 'subscription not allowed'), null);
      },
    });
    this.broker = broker;
    // noDelay: without it Nagle's algorithm holds small QoS 1 packets back (measured: 48 ms vs 8–13 ms).
    this.server = createServer({ noDelay: true }, (socket) => {
      const client = broker.handle(socket);
      limitPacketSize(socket, this.maxPacketBytes, () =>
        this.log.warn({ gatewayId: this.gatewayOf.get(client), maxBytes: this.maxPacketBytes }, 'mqtt packet over MQTT_MAX_PACKET_BYTES (or its length malformed); connection closed'),
      );
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(port, host, () => resolve());
    });
    this.sweepTimer = setInterval(() => this.sweep(), HELD_SWEEP_MS);
    this.sweepTimer.unref();
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : port;
  }

  /** The service's side of the broker, in process: commands are published straight through Aedes. */
  link(): DeviceLink {
    const broker = this.broker;
    if (!broker) throw new Error('the embedded broker is not started');
    return {
      start: async () => undefined,
      publish: (topic, payload) =>
        new Promise<void>((resolve, reject) =>
          broker.publish({ cmd: 'publish', topic, payload: Buffer.from(encodePayload(payload)), qos: 1, retain: false, dup: false }, (error) =>
            error ? reject(error) : resolve(),
          ),
        ),
      state: () => (this.server?.listening === true && !broker.closed ? 'ok' : 'down'),
      missingSubscriptions: () => 0,
      close: async () => undefined,
    };
  }

  /** Gateways with a connection open now (latchkey_gateways_connected). */
  get connectedGateways(): number {
    return this.connectionsOf.size;
  }

  /**
   * Whether a connection has stopped reading what it is sent (then closed, and sent nothing more): it holds more
   * than MAX_UNDRAINED_FORWARDS deliveries. Read from what Aedes holds, not counted here: the forwards of one turn of
   * the event loop are all authorised before Aedes writes any, so a count kept here misses them.
   */
  private notReading(client: Client): boolean {
    if (this.closingNotReading.has(client)) return true;
    const held = heldDeliveries(client);
    if (held <= MAX_UNDRAINED_FORWARDS) return false;
    this.closeNotReading(client, held);
    return true;
  }

  /**
   * Every HELD_SWEEP_MS: a connection holding more than MAX_UNDRAINED_FORWARDS is closed (what one turn forwarded to
   * it is seen here, as no next message may come); and when the connections together hold half of the deliveries in
   * flight, those holding most are closed until they hold a quarter. The bound per connection alone let about 31
   * gateways that stop reading (or fewer, each sent a burst in one turn) hold every delivery, and no gateway of any
   * account got anything until the drain time-out. A gateway that reads, even slowly, holds few and is closed last.
   */
  private sweep(): void {
    let total = 0;
    const holding: Array<{ client: Client; held: number }> = [];
    for (const client of this.gatewayOf.keys()) {
      const held = heldDeliveries(client);
      if (held === 0 || this.closingNotReading.has(client)) continue;
      if (held > MAX_UNDRAINED_FORWARDS) this.closeNotReading(client, held);
      else {
        total += held;
        holding.push({ client, held });
      }
    }
    if (total >= this.deliveriesInFlight / 2) {
      holding.sort((a, b) => b.held - a.held);
      for (const { client, held } of holding) {
        if (total < this.deliveriesInFlight / 4) break;
        this.closeNotReading(client, held);
        total -= held;
      }
    }
    this.heldByAll = total;
  }

  private closeNotReading(client: Client, held: number): void {
    this.closingNotReading.add(client);
    this.log.warn({ gatewayId: this.gatewayOf.get(client), held, heldByAll: this.heldByAll }, 'mqtt connection not reading what it is sent; closed');
    // Closing fails the deliveries waiting for its socket at once, which frees them for the other gateways.
    setImmediate(() => client.close());
  }

  /** The deliveries held by connections that have not drained, at the last sweep (a test reads it). */
  get heldByConnectionsNotDrained(): number {
    return this.heldByAll;
  }

  /** Why a gateway's publish is refused, or null. */
  private publishRefusal(client: Client, packet: PublishPacket): string | null {
    const gatewayId = this.gatewayOf.get(client);
    if (gatewayId === undefined) return 'not a gateway';
    // A closed connection publishing is its will. After a takeover the gateway is connected again: its
    // old will ({"online": false}) would mark it offline while it is there.
    if (client.closed && (this.connectionsOf.get(gatewayId)?.size ?? 0) > 1) return 'superseded will';
    let refusal: string | null = null;
    if (!mayPublish(gatewayId, packet.topic)) refusal = 'topic not allowed';
    else if (packet.retain && packet.topic !== gatewayTopicPrefix(gatewayId) + RETAINED_GATEWAY_PUBLISH) refusal = 'only presence may be retained';
    else if (packet.qos > 1) refusal = 'QoS 2 is not part of the gateway protocol';
    if (refusal) this.log.warn({ gatewayId, topic: packet.topic, reason: refusal }, 'mqtt publish refused; connection closed');
    return refusal;
  }

  private async authenticate(client: Client, username: string | undefined, password: Buffer | undefined): Promise<boolean> {
    if (!username || !password) return false;
    const readAt = this.cuts;
    const row = await gatewayByUsername(this.db, username);
    if (!row) return false;
    // The client id must be the gateway's user name, so a gateway cannot pose as another.
    if (client.id !== username || !sameHash(hashToken(password.toString()), row.password_hash)) {
      this.connections.refused(Number(row.id));
      return false;
    }
    // Gone while the password was checked: its 'close' has been emitted already.
    if (client.closed) return false;
    const gatewayId = Number(row.id);
    // Cut off (its password rotated, say) while the password was read: what was read may be the old one.
    if ((this.cutOffAt.get(gatewayId) ?? 0) > readAt) return false;
    this.gatewayOf.set(client, gatewayId);
    let open = this.connectionsOf.get(gatewayId);
    if (!open) this.connectionsOf.set(gatewayId, (open = new Set()));
    open.add(client);
    client.conn.once('close', () => this.connectionClosed(client, gatewayId));
    this.connections.connected(gatewayId);
    return true;
  }

  private connectionClosed(client: Client, gatewayId: number): void {
    this.gatewayOf.delete(client);
    const open = this.connectionsOf.get(gatewayId);
    open?.delete(client);
    if (open && open.size > 0) return; // a takeover: the gateway is still connected
    this.connectionsOf.delete(gatewayId);
    this.connections.disconnected(gatewayId);
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    await new Promise<void>((resolve) => (this.broker ? this.broker.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.unref();
  }

  /** Drops a gateway's live connection (its password was rotated or it was deleted): it must connect anew. */
  disconnectGateway(gatewayId: number): void {
    this.cutOffAt.set(gatewayId, ++this.cuts);
    for (const client of this.connectionsOf.get(gatewayId) ?? []) client.close();
  }
}
