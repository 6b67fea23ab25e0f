// Gateways as the operator provisions them: MQTT credentials shown once, kept in step with the broker's
// accounts (README "Running with Mosquitto or EMQX"; docs/brokers.md).
import { errors } from '../../platform/errors.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import { hashToken, newToken } from '../../platform/secrets.ts';
import { gatewayAccessSecret } from '../access/index.ts';
import { BrokerUnavailableError, gatewayUsername, MQTT_TOPIC_PREFIX } from '../devices/index.ts';
import { requireLocation } from './accounts.ts';
import type { Gateway, GatewayCreate, GatewaySummary } from './schemas.ts';
import type { OperatorDeps } from './service.ts';
import {
  deleteGateway,
  findGateway,
  gatewayUse,
  insertGateway,
  listGateways,
  type OwnerFilter,
  lockGateway,
  reserveGatewayId,
  gatewayAccountId,
  setGatewayAccessSecret,
  setGatewayPasswordHash,
  type GatewayRow,
} from './store.ts';

export class GatewaysService {
  constructor(private readonly deps: OperatorDeps) {}

  /**
   * The gateway's broker account is made first, under an id drawn from the table's sequence, and the gateway
   * row after it: a gateway the operator is shown can always connect. When the broker cannot be provisioned
   * the answer is 503 broker_unavailable and nothing is created (docs/brokers.md).
   */
  async create(body: GatewayCreate): Promise<Gateway> {
    const { db, gatewayAccounts } = this.deps;
    await requireLocation(db, body.location_id, 'location_id');
    const id = await reserveGatewayId(db);
    const password = newToken('');
    try {
      await onBroker(() => gatewayAccounts.provision(id, password));
      await insertGateway(
        db,
        { id, locationId: body.location_id, name: body.name, username: gatewayUsername(id), passwordHash: hashToken(password) },
        this.deps.clock.now(),
      );
      // The secret its access list is hashed under: both sides derive it from the password (README "Access lists").
      await setGatewayAccessSecret(db, id, this.deps.access.seal(gatewayAccessSecret(password)));
    } catch (error) {
      // A half-made account (the broker took the command but its answer was lost) or one whose gateway row
      // could not be written: removed when the broker lets us. Its password was never shown to anyone.
      await gatewayAccounts.remove(id).catch(() => undefined);
      throw error;
    }
    return this.withPassword({ id, name: body.name, location_id: body.location_id }, password);
  }

  /** `online`: only those in that state (undefined: all). */
  async list(page: PageRequest, owner: OwnerFilter, online?: boolean): Promise<PageOf<GatewaySummary>> {
    const rows = await listGateways(this.deps.db, owner, online ?? null, page.afterId, page.limit + 1);
    return toPage(rows.map((row) => this.toSummary(row)), page.limit, (g) => g.id, 'op.gateways');
  }

  async get(id: number): Promise<GatewaySummary> {
    const row = await findGateway(this.deps.db, id);
    if (!row) throw errors.notFound('gateway');
    return this.toSummary(row);
  }

  /**
   * A new password, shown once. The broker account is replaced first (Mosquitto drops live connections with
   * it), then the stored hash: when the broker cannot be updated, nothing changes and the old password stays
   * good. From the answer on the old password is refused, a live connection to the embedded broker drops, and
   * the gateway's locks read offline until it connects with the new password and says `{"online": true}`.
   */
  async rotatePassword(id: number): Promise<Gateway> {
    const password = newToken('');
    // One rotation of a gateway at a time (the row stays locked while the broker is updated), so the broker
    // and the store never end up holding the passwords of two different calls.
    const gateway = await this.deps.db.transaction(async (tx) => {
      const row = await lockGateway(tx, id);
      if (!row) throw errors.notFound('gateway');
      await onBroker(() => this.deps.gatewayAccounts.provision(id, password));
      await setGatewayPasswordHash(tx, id, hashToken(password));
      // A new list secret with the password: the list is built anew under it and sent whole.
      await this.deps.access.replaceSecret(tx, id, gatewayAccessSecret(password));
      const accountId = await gatewayAccountId(tx, id);
      if (accountId !== null) await this.deps.access.refresh(tx, accountId, null);
      return row;
    });
    this.deps.disconnectGateway(id);
    return this.withPassword(gateway, password);
  }

  /**
   * Deletes a gateway that no lock is on and that has no history (`409 gateway_in_use` otherwise: its locks
   * would silently stop being remote, and the access log and lock commands keep referring to it; rotate its
   * password to cut such a gateway off). The row is deleted and its broker account removed in one
   * transaction, the account last: when the broker cannot be updated the answer is 503 and the gateway stays.
   */
  async delete(id: number): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      if (!(await lockGateway(tx, id))) throw errors.notFound('gateway');
      const use = await gatewayUse(tx, id);
      if (use.locks) throw errors.gatewayHasLocks();
      if (use.history) throw errors.gatewayHasHistory();
      await deleteGateway(tx, id);
      await onBroker(() => this.deps.gatewayAccounts.remove(id));
    });
    this.deps.disconnectGateway(id);
  }

  /** Where gateways dial, without the user and password MQTT_URL carries: those are the service's own. */
  private gatewayUrl(): string {
    const url = new URL(this.deps.gatewayMqttUrl());
    url.username = '';
    url.password = '';
    return url.toString();
  }

  private withPassword(gateway: { id: number; name: string; location_id: number }, password: string): Gateway {
    const username = gatewayUsername(gateway.id);
    return {
      id: gateway.id,
      name: gateway.name,
      location_id: gateway.location_id,
      mqtt: { url: this.gatewayUrl(), client_id: username, username, password, topic_prefix: MQTT_TOPIC_PREFIX },
    };
  }

  private toSummary(row: GatewayRow): GatewaySummary {
    return {
      id: row.id,
      name: row.name,
      location_id: row.location_id,
      account_id: Number(row.account_id),
      mqtt: { url: this.gatewayUrl(), client_id: row.mqtt_username, username: row.mqtt_username, topic_prefix: MQTT_TOPIC_PREFIX },
      online: row.online,
      last_seen_at: row.last_seen_at?.toISOString() ?? null,
      last_refused_at: row.last_refused_at?.toISOString() ?? null,
      created_at: row.created_at.toISOString(),
      access_list: {
        enabled: row.list_enabled,
        version: Number(row.access_list_version),
        applied_version: Number(row.access_applied_version),
        expired: row.access_list_expired,
        rebuilding: row.list_rebuilding,
      },
    };
  }
}

/**
 * A broker that cannot be reached or refuses answers 503 broker_unavailable: nothing was changed here, retry
 * later. A broker that did not answer in time may still carry the change out; the message says so.
 */
async function onBroker(call: () => Promise<void>): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (!(error instanceof BrokerUnavailableError)) throw error;
    const late = error.unanswered ? ' If the broker still carries it out, a gateway can be refused until its password is rotated again.' : '';
    throw errors.brokerUnavailable(error.message, late);
  }
}
