// The embedded MQTT broker (Aedes), used when MQTT_URL is unset. Gateways authenticate with the
// credentials of POST /admin/v1/gateways (password stored hashed) and may publish and subscribe only
// under `{prefix}/gateways/{id}/`. The service itself is linked in process (no socket, no second parse).
import { Aedes, type AedesPublishPacket, type AuthenticateError, type Client } from 'aedes';
import type { FastifyBaseLogger } from 'fastify';
import { createServer, type Server } from 'node:net';
import type { Database } from '../../platform/db/index.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { MQTT_TOPIC_PREFIX } from '../operator/service.ts';
import { GATEWAY_TOPIC_FILTERS, routeGatewayMessage, type DeviceLink, type GatewayMessageHandler } from './link.ts';

const BAD_CREDENTIALS = 4;
const NOT_AUTHORIZED = 5;

function authError(code: number, message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode: code }) as AuthenticateError;
}

export class EmbeddedBroker {
  private server: Server | null = null;
  private broker: Aedes | null = null;
  /** Gateway id of each connected gateway client. */
  private readonly gatewayOf = new Map<string, number>();

  constructor(
    private readonly db: Database,
    private readonly onGatewayDisconnect: (gatewayId: number) => void,
  ) {}

  async start(port: number, host: string): Promise<number> {
    const broker = await Aedes.createBroker({
      // Messages being delivered at once, across all clients. Held-back door events stay "being delivered"
      // until stored (see link()); with the default of 100, commands to gateways would queue behind them.
      concurrency: 2000,
      authenticate: (client, username, password, done) => {
        void this.authenticate(client, username, password).then(
          (ok) => done(ok ? null : authError(BAD_CREDENTIALS, 'bad user name or password'), ok),
          () => done(authError(3, 'server unavailable'), false),
        );
      },
      authorizePublish: (client, packet, callback) => {
        if (!client || packet.topic.startsWith(this.ownPrefix(client))) return callback(null);
        callback(authError(NOT_AUTHORIZED, 'topic not allowed'));
      },
      authorizeSubscribe: (client, subscription, callback) => {
        if (subscription.topic.startsWith(this.ownPrefix(client))) return callback(null, subscription);
        callback(authError(NOT_AUTHORIZED, 'topic not allowed'));
      },
    });
    broker.on('clientDisconnect', (client) => {
      const gatewayId = this.gatewayOf.get(client.id);
      if (gatewayId === undefined) return;
      this.gatewayOf.delete(client.id);
      this.onGatewayDisconnect(gatewayId);
    });
    this.broker = broker;
    // noDelay: without it Nagle's algorithm holds small QoS 1 packets back (measured: 48 ms vs 8–13 ms).
    this.server = createServer({ noDelay: true }, broker.handle);
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject);
      this.server?.listen(port, host, () => resolve());
    });
    const address = this.server.address();
    return typeof address === 'object' && address ? address.port : port;
  }

  /**
   * The service's side of the broker, in process: subscriptions and publishes go straight through Aedes.
   * The broker starts with the service, so there are no retained messages to replay. A message whose
   * handling returns a promise (a door event beyond the waiting limit) counts as delivered only once it
   * settles: Aedes acknowledges a QoS 1 publish on receipt, but reads a gateway's next packets only when
   * those of the last read are delivered, so a backlog stays in the gateway and TCP, not here.
   */
  link(onMessage: GatewayMessageHandler, log: FastifyBaseLogger): DeviceLink {
    const broker = this.broker;
    if (!broker) throw new Error('the embedded broker is not started');
    const deliver = (packet: AedesPublishPacket, done: () => void) => {
      const handled = routeGatewayMessage(packet.topic, Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload), onMessage, log);
      if (handled) void handled.then(done);
      else done();
    };
    const each = (act: (topic: string, callback: () => void) => void) =>
      Promise.all(GATEWAY_TOPIC_FILTERS.map((topic) => new Promise<void>((resolve) => act(topic, resolve))));
    return {
      start: async () => void (await each((topic, callback) => broker.subscribe(topic, deliver, callback))),
      publish: (topic, payload) =>
        new Promise<void>((resolve, reject) =>
          broker.publish({ cmd: 'publish', topic, payload: Buffer.from(JSON.stringify(payload)), qos: 1, retain: false, dup: false }, (error) =>
            error ? reject(error) : resolve(),
          ),
        ),
      close: async () => void (await each((topic, callback) => broker.unsubscribe(topic, deliver, callback))),
    };
  }

  private ownPrefix(client: Client): string {
    const gatewayId = this.gatewayOf.get(client.id);
    // A client that is not a known gateway gets a prefix no topic starts with.
    return gatewayId === undefined ? '\u0000' : `${MQTT_TOPIC_PREFIX}/gateways/${gatewayId}/`;
  }

  private async authenticate(client: Client, username: string | undefined, password: Buffer | undefined): Promise<boolean> {
    if (!username || !password) return false;
    // The client id must be the gateway's user name, so a gateway cannot pose as another.
    if (client.id !== username) return false;
    const [row] = await this.db.query<{ id: number; password_hash: string }>('SELECT id, password_hash FROM gateways WHERE mqtt_username = $1', [username]);
    if (!row || !sameHash(hashToken(password.toString()), row.password_hash)) return false;
    this.gatewayOf.set(client.id, row.id);
    return true;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => (this.broker ? this.broker.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.unref();
  }

  /** Drops a gateway's live connection (its password was rotated or it was deleted): it must connect anew. */
  disconnectGateway(gatewayId: number): void {
    // Aedes keeps its connected clients by id; its typings do not declare that map.
    const clients = (this.broker as unknown as { clients?: Record<string, Client | undefined> } | null)?.clients ?? {};
    for (const [clientId, id] of this.gatewayOf) if (id === gatewayId) clients[clientId]?.close();
  }
}
