// Gateway accounts on Mosquitto 2.x through its dynamic-security plugin (MQTT_DYNSEC_USERNAME /
// MQTT_DYNSEC_PASSWORD): every gateway is a broker client of its own whose role allows exactly its topics
// (gateway-access.ts), kept in step with the operator API: created with the gateway, replaced when its
// password is rotated, removed with it. Commands go as JSON on `$CONTROL/dynamic-security/v1`; answers come
// on `…/response` (docs/brokers.md).
import type { FastifyBaseLogger } from 'fastify';
import type { MqttClient } from 'mqtt';
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../platform/db/index.ts';
import { logConnection } from './connection-log.ts';
import { GATEWAY_MESSAGE_TOPICS, GATEWAY_TOPIC_FILTERS, MQTT_TOPIC_PREFIX, SERVICE_MESSAGE_TOPICS } from './topics.ts';
import { BrokerUnavailableError, gatewayIdOf, gatewayUsername, type GatewayAccounts } from './broker-accounts.ts';
import { gatewayPermissions } from './gateway-access.ts';
import { allGatewayIds } from './store.ts';

const CONTROL_TOPIC = '$CONTROL/dynamic-security/v1';
const RESPONSE_TOPIC = `${CONTROL_TOPIC}/response`;
const COMMAND_TIMEOUT_MS = 5000;
/** The role every instance's own broker user gets: read every gateway's messages, send commands, access answers and lists. */
export const SERVICE_ROLE = 'latchkey-service';
/** The shared-subscription group of earlier versions (MqttLink leaves it); Mosquitto 2.0 checks `$share/…` filters as written. */
const SHARE_GROUP = '$share/latchkey/';
/** Gateway messages that must not stay retained on the broker: every kind but presence. */
const RETAINED_CLEARED = GATEWAY_MESSAGE_TOPICS.filter((kind) => kind !== 'presence');

export function gatewayRole(gatewayId: number): string {
  return `latchkey-gateway-${gatewayId}`;
}

interface Acl {
  acltype: 'publishClientSend' | 'publishClientReceive' | 'subscribeLiteral' | 'subscribePattern';
  topic: string;
  allow: true;
}

/** Exactly the gateway's topics; everything else falls to the default ACL, which refuses (docs/brokers.md). */
export function gatewayAcls(gatewayId: number): Acl[] {
  const { publish, subscribe } = gatewayPermissions(gatewayId);
  return [
    ...publish.map((topic): Acl => ({ acltype: 'publishClientSend', topic, allow: true })),
    ...subscribe.map((topic): Acl => ({ acltype: 'subscribeLiteral', topic, allow: true })),
    ...subscribe.map((topic): Acl => ({ acltype: 'publishClientReceive', topic, allow: true })),
  ];
}

export function serviceAcls(): Acl[] {
  return [
    ...GATEWAY_TOPIC_FILTERS.flatMap((filter): Acl[] => [
      { acltype: 'subscribePattern', topic: SHARE_GROUP + filter, allow: true },
      { acltype: 'subscribePattern', topic: filter, allow: true },
      { acltype: 'publishClientReceive', topic: filter, allow: true },
    ]),
    ...SERVICE_MESSAGE_TOPICS.map((topic): Acl => ({ acltype: 'publishClientSend', topic: `${MQTT_TOPIC_PREFIX}/gateways/+/${topic}`, allow: true })),
    // Only to clear what a gateway sent retained against the protocol (an empty retained message; link.ts).
    ...RETAINED_CLEARED.map((kind): Acl => ({ acltype: 'publishClientSend', topic: `${MQTT_TOPIC_PREFIX}/gateways/+/${kind}`, allow: true })),
  ];
}

type Command = { command: string } & Record<string, unknown>;
interface Response {
  command: string;
  error?: string;
  data?: unknown;
  correlationData?: string;
}

/**
 * An error a command may answer without anything being wrong: the thing to delete or add is already so, or
 * the thing looked up is not there (the caller reads the answer).
 */
function harmless(command: Command, error: string): boolean {
  if (command.command.startsWith('delete') || command.command.startsWith('get')) return /not found/i.test(error);
  if (command.command === 'createRole' || command.command === 'addRoleACL') return /already exists/i.test(error);
  return false;
}

export class DynsecAccounts implements GatewayAccounts {
  private readonly pending = new Map<string, { resolve: (responses: Response[]) => void; timer: NodeJS.Timeout }>();

  private constructor(
    private readonly client: MqttClient,
    private readonly log: FastifyBaseLogger,
  ) {
    client.on('message', (topic, payload) => {
      if (topic !== RESPONSE_TOPIC) return;
      let responses: Response[];
      try {
        responses = (JSON.parse(payload.toString('utf8')) as { responses: Response[] }).responses;
      } catch {
        return;
      }
      const requestId = responses?.[0]?.correlationData;
      const waiting = requestId === undefined ? undefined : this.pending.get(requestId);
      if (!waiting) return; // another instance's answer, or one that came too late
      this.pending.delete(requestId as string);
      clearTimeout(waiting.timer);
      waiting.resolve(responses);
    });
    logConnection(client, log, { name: 'dynamic-security control connection', clientId: client.options.clientId ?? '', connected: client.connected });
  }

  /**
   * Opens the control channel on the broker of MQTT_URL with the dynamic-security admin's credentials.
   * Fails when the broker cannot be reached or refuses them: the service does not start half-secured.
   */
  static async connect(mqttUrl: string, admin: { username: string; password: string }, log: FastifyBaseLogger): Promise<DynsecAccounts> {
    const url = new URL(mqttUrl);
    url.username = '';
    url.password = '';
    const { connectAsync } = await import('mqtt'); // loaded only for an external broker
    let client: MqttClient | null = null;
    try {
      client = await connectAsync(
        url.toString(),
        {
          protocolVersion: 5,
          clientId: `latchkey-dynsec-${randomBytes(6).toString('hex')}`,
          username: admin.username,
          password: admin.password,
          clean: true,
          reconnectPeriod: 1000,
          connectTimeout: COMMAND_TIMEOUT_MS,
          queueQoSZero: false,
        },
        false,
      );
      await client.subscribeAsync(RESPONSE_TOPIC, { qos: 1 });
    } catch (error) {
      await client?.endAsync(true).catch(() => undefined);
      throw new Error(`MQTT_DYNSEC_USERNAME: the broker's dynamic-security control channel is not available (${(error as Error).message})`);
    }
    return new DynsecAccounts(client, log);
  }

  /**
   * Runs commands in one message (the broker runs them in order) and returns the answers. Errors the
   * commands may harmlessly answer are ignored; any other fails the whole call.
   */
  async run(commands: Command[]): Promise<Response[]> {
    if (!this.client.connected) throw new BrokerUnavailableError('not connected to the MQTT broker');
    const requestId = randomBytes(9).toString('base64url');
    const answered = new Promise<Response[]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new BrokerUnavailableError('the MQTT broker did not answer the dynamic-security command', true));
      }, COMMAND_TIMEOUT_MS);
      timer.unref();
      this.pending.set(requestId, { resolve, timer });
    });
    // Its time-out may fire while the publish below still waits: handled here, awaited (and thrown) below.
    answered.catch(() => undefined);
    try {
      // QoS 0, never queued (queueQoSZero: false): a command the broker did not get now must not run later, after
      // the caller was told it failed. The broker's answer is the acknowledgement.
      await this.client.publishAsync(CONTROL_TOPIC, JSON.stringify({ commands: commands.map((c) => ({ ...c, correlationData: requestId })) }), { qos: 0 });
    } catch (error) {
      const waiting = this.pending.get(requestId);
      if (waiting) clearTimeout(waiting.timer);
      this.pending.delete(requestId);
      throw new BrokerUnavailableError(`the MQTT broker refused the dynamic-security command (${(error as Error).message})`);
    }
    const responses = await answered;
    commands.forEach((command, index) => {
      const error = responses[index]?.error;
      if (error !== undefined && !harmless(command, error)) {
        // The broker's message names the command's object (a user or role name), never a password.
        throw new BrokerUnavailableError(`the MQTT broker refused ${command.command}: ${error}`);
      }
    });
    return responses;
  }

  /**
   * Makes sure the service's own broker user (MQTT_URL's) exists and holds the service role. Only adds: the
   * role and its ACLs are created when missing, so instances starting side by side never take anything away
   * from one another; an existing user keeps its password.
   */
  async prepareServiceUser(username: string, password: string): Promise<void> {
    await this.run([{ command: 'createRole', rolename: SERVICE_ROLE, textname: 'Latchkey service', acls: serviceAcls() }, ...serviceAcls().map((acl) => ({ command: 'addRoleACL', rolename: SERVICE_ROLE, ...acl }))]);
    const [found] = await this.run([{ command: 'getClient', username }]);
    if (found?.error !== undefined) {
      await this.run([{ command: 'createClient', username, password, textname: 'Latchkey service', roles: [{ rolename: SERVICE_ROLE }] }]);
      return;
    }
    const roles = (found?.data as { client?: { roles?: Array<{ rolename: string }> } } | undefined)?.client?.roles ?? [];
    if (!roles.some((role) => role.rolename === SERVICE_ROLE)) await this.run([{ command: 'addClientRole', username, rolename: SERVICE_ROLE }]);
  }

  /** The ids of the gateways that have a broker account. */
  async provisionedGatewayIds(): Promise<Set<number>> {
    const [listed] = await this.run([{ command: 'listClients', verbose: false, count: -1, offset: 0 }]);
    const usernames = (listed?.data as { clients?: unknown[] } | undefined)?.clients ?? [];
    const ids = new Set<number>();
    for (const username of usernames) {
      const id = typeof username === 'string' ? gatewayIdOf(username) : undefined;
      if (typeof id === 'number') ids.add(id);
    }
    return ids;
  }

  async provision(gatewayId: number, password: string): Promise<void> {
    const username = gatewayUsername(gatewayId);
    const rolename = gatewayRole(gatewayId);
    // Replaced whole: deleting the client drops its live connections (Mosquitto kicks them), and a gateway made
    // before dynamic security was configured, or left from an earlier database, ends in the same state.
    await this.run([
      { command: 'deleteClient', username },
      { command: 'deleteRole', rolename },
      { command: 'createRole', rolename, textname: `Latchkey gateway ${gatewayId}`, acls: gatewayAcls(gatewayId) },
      // clientid: the gateway must connect with its user name as client id, as with the embedded broker.
      { command: 'createClient', username, password, clientid: username, textname: `Latchkey gateway ${gatewayId}`, roles: [{ rolename }] },
    ]);
    this.log.info({ gatewayId }, 'gateway broker account provisioned');
  }

  async remove(gatewayId: number): Promise<void> {
    await this.run([
      { command: 'deleteClient', username: gatewayUsername(gatewayId) },
      { command: 'deleteRole', rolename: gatewayRole(gatewayId) },
    ]);
    this.log.info({ gatewayId }, 'gateway broker account removed');
  }

  async close(): Promise<void> {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    await this.client.endAsync();
  }
}

/**
 * At start-up, with MQTT_DYNSEC_*: opens the control channel, gives the service's own user (MQTT_URL's) its
 * role, and names the gateways that have no broker account yet. Their passwords are kept only as hashes, and
 * the broker needs the password itself: such a gateway (made before dynamic security was configured, or on
 * another broker) connects again once its password is rotated (docs/brokers.md).
 */
export async function startDynsec(mqttUrl: string, admin: { username: string; password: string }, db: Queryable, log: FastifyBaseLogger): Promise<DynsecAccounts> {
  const accounts = await DynsecAccounts.connect(mqttUrl, admin, log);
  try {
    const service = new URL(mqttUrl);
    await accounts.prepareServiceUser(decodeURIComponent(service.username), decodeURIComponent(service.password));
    const provisioned = await accounts.provisionedGatewayIds();
    const missing = (await allGatewayIds(db)).filter((id) => !provisioned.has(id));
    if (missing.length > 0) {
      log.warn(
        { count: missing.length, gatewayIds: missing.slice(0, 100) },
        'gateways without a broker account cannot connect until their passwords are rotated (POST /admin/v1/gateways/{id}/rotate_password)',
      );
    }
  } catch (error) {
    await accounts.close().catch(() => undefined);
    throw new Error(`MQTT_DYNSEC_USERNAME: setting up the broker's dynamic security failed (${(error as Error).message})`);
  }
  return accounts;
}
