// Provisioning by operators: accounts, departments, dashboard users, API keys, security groups,
// gateways and locks (docs/spec/operator-api.md).
import { AUTH_CHANNEL, API_KEY_TOKEN_PREFIX } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import { notify, type Database, type Queryable } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { toPage, type PageOf, type PageRequest } from '../../platform/pagination.ts';
import { hashToken, newToken } from '../../platform/secrets.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { CATALOG_CHANNEL, unknownSecurityGroups } from '../catalog/service.ts';
import { findLock, publicLock } from '../catalog/store.ts';
import type { Lock } from '../catalog/schemas.ts';
import { BrokerUnavailableError, gatewayUsername, MQTT_TOPIC_PREFIX, type GatewayAccounts } from '../devices/index.ts';
import type { SecurityGroup } from '../catalog/schemas.ts';
import type {
  Account,
  AccountCreate,
  AccountUpdate,
  ApiKey,
  ApiKeyCreate,
  Gateway,
  GatewaySummary,
  Location,
  LockCreate,
  SecurityGroupCreate,
  User,
} from './schemas.ts';

const DAY_MS = 86_400_000;
export const API_KEY_DEFAULT_LIFETIME_MS = 365 * DAY_MS;

/** The same instant two calendar years later: the longest an API key may live. */
function twoYearsAfter(date: Date): Date {
  const later = new Date(date);
  later.setUTCFullYear(later.getUTCFullYear() + 2);
  return later;
}

interface LocationRow {
  id: number;
  account_id: number;
  parent_id: number | null;
  name: string;
  path: number[];
}

interface ApiKeyRow {
  id: number;
  name: string;
  prefix: string;
  location_id: number;
  scopes: string[];
  lock_allowlist: number[];
  expires_at: Date;
  created_at: Date;
  revoked_at: Date | null;
  created_by_user_id: number | null;
}

interface GatewayRow {
  id: number;
  name: string;
  location_id: number;
  mqtt_username: string;
  online: boolean;
  last_seen_at: Date | null;
  created_at: Date;
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    location_id: row.location_id,
    scopes: row.scopes,
    lock_allowlist: row.lock_allowlist.map(Number),
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    created_by_user_id: row.created_by_user_id,
  };
}

export interface OperatorDeps {
  db: Database;
  clock: Clock;
  /** Where gateways dial: MQTT_URL, or the embedded broker on PUBLIC_URL's host. */
  gatewayMqttUrl: () => string;
  /** The gateways' accounts on the broker in front (Mosquitto dynamic security), or nothing to do. */
  gatewayAccounts: GatewayAccounts;
  /** After a gateway's credentials changed: drops its embedded-broker connection and marks it offline. */
  disconnectGateway: (gatewayId: number) => void;
}

const GATEWAY_COLUMNS = 'SELECT id, name, location_id, mqtt_username, online, last_seen_at, created_at FROM gateways';

export class OperatorService {
  constructor(private readonly deps: OperatorDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  // ---- accounts -------------------------------------------------------------------------------

  async createAccount(body: AccountCreate): Promise<Account> {
    return this.db.transaction(async (tx) => {
      const now = this.now();
      const [account] = await tx.query<{ id: number }>(
        `INSERT INTO accounts (name, reseller, sms_enabled, phone_key_allowance, locking_system, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
        [body.name, body.reseller ?? false, body.sms_enabled ?? true, body.phone_key_allowance ?? null, body.locking_system ?? null, now],
      );
      const accountId = (account as { id: number }).id;
      await this.insertLocation(tx, accountId, null, body.name, []);
      return (await this.readAccount(tx, accountId)) as Account;
    });
  }

  async getAccount(id: number): Promise<Account> {
    const account = await this.readAccount(this.db, id);
    if (!account) throw errors.notFound('account');
    return account;
  }

  async updateAccount(id: number, body: AccountUpdate): Promise<Account> {
    return this.db.transaction(async (tx) => {
      const sets: string[] = [];
      const params: unknown[] = [];
      for (const field of ['name', 'reseller', 'sms_enabled', 'phone_key_allowance', 'locking_system'] as const) {
        if (body[field] === undefined) continue;
        params.push(body[field]);
        sets.push(`${field} = $${params.length}`);
      }
      params.push(id);
      const rows = await tx.query(`UPDATE accounts SET ${sets.join(', ')} WHERE id = $${params.length} RETURNING id`, params);
      if (rows.length === 0) throw errors.notFound('account');
      // reseller decides what every key of the account may do: drop cached keys everywhere.
      await notify(this.db, tx, AUTH_CHANNEL);
      return (await this.readAccount(tx, id)) as Account;
    });
  }

  private async readAccount(db: Queryable, id: number): Promise<Account | null> {
    const rows = await db.query<Omit<Account, 'root_location'> & { root_id: number; root_name: string }>(
      `SELECT a.id, a.name, a.reseller, a.sms_enabled, a.phone_key_allowance, a.locking_system,
              l.id AS root_id, l.name AS root_name
         FROM accounts a JOIN locations l ON l.account_id = a.id AND l.parent_id IS NULL
        WHERE a.id = $1`,
      [id],
    );
    const row = rows[0];
    if (!row) return null;
    const { root_id, root_name, ...account } = row;
    return { ...account, root_location: { id: root_id, name: root_name } };
  }

  // ---- locations ------------------------------------------------------------------------------

  private async insertLocation(tx: Queryable, accountId: number, parentId: number | null, name: string, parentPath: number[]): Promise<Location> {
    const [row] = await tx.query<LocationRow>(
      `INSERT INTO locations (account_id, parent_id, name, path, created_at)
       VALUES ($1, $2, $3, '{}', $4) RETURNING id`,
      [accountId, parentId, name, this.now()],
    );
    const id = (row as LocationRow).id;
    await tx.query('UPDATE locations SET path = $1::bigint[] WHERE id = $2', [[...parentPath, id], id]);
    return { id, name, parent_id: parentId, account_id: accountId };
  }

  private async location(db: Queryable, id: number, field: string): Promise<LocationRow> {
    const rows = await db.query<LocationRow>('SELECT id, account_id, parent_id, name, path FROM locations WHERE id = $1', [id]);
    const row = rows[0];
    if (!row) throw errors.invalidField(field, `No location with id ${id}.`);
    return { ...row, path: row.path.map(Number) };
  }

  async createLocation(body: { parent_id: number; name: string }): Promise<Location> {
    return this.db.transaction(async (tx) => {
      const parent = await this.location(tx, body.parent_id, 'parent_id');
      return this.insertLocation(tx, parent.account_id, parent.id, body.name, parent.path);
    });
  }

  // ---- dashboard users ------------------------------------------------------------------------

  async createUser(body: { account_id: number; name: string; email: string }): Promise<User> {
    const accounts = await this.db.query('SELECT id FROM accounts WHERE id = $1', [body.account_id]);
    if (accounts.length === 0) throw errors.invalidField('account_id', `No account with id ${body.account_id}.`);
    const [row] = await this.db.query<User>(
      `INSERT INTO dashboard_users (account_id, name, email, created_at) VALUES ($1, $2, $3, $4)
       RETURNING id, account_id, name, email`,
      [body.account_id, body.name, body.email, this.now()],
    );
    return row as User;
  }

  // ---- API keys -------------------------------------------------------------------------------

  async createApiKey(body: ApiKeyCreate): Promise<ApiKey & { token: string }> {
    const now = this.now();
    const location = await this.location(this.db, body.location_id, 'location_id');
    const details: ErrorDetail[] = [];

    let expiresAt = new Date(now.getTime() + API_KEY_DEFAULT_LIFETIME_MS);
    if (body.expires_at !== undefined) {
      const parsed = parseClientTimestamp(body.expires_at);
      if (!parsed) details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at is not a valid date-time.' });
      else if (parsed.getTime() <= now.getTime()) details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be in the future.' });
      else if (parsed.getTime() > twoYearsAfter(now).getTime()) {
        details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at may be at most 2 years ahead.' });
      } else expiresAt = parsed;
    }

    const allowlist = body.lock_allowlist ?? [];
    if (allowlist.length > 0) {
      // Every allowed lock must be one the key can see: its location or a descendant.
      const visible = await this.db.query<{ id: number }>(
        `SELECT k.id FROM locks k JOIN locations l ON l.id = k.location_id
          WHERE k.id = ANY($1::bigint[]) AND l.path @> ARRAY[$2]::bigint[]`,
        [allowlist, location.id],
      );
      const seen = new Set(visible.map((r) => r.id));
      allowlist.forEach((id, index) => {
        if (!seen.has(id)) {
          details.push({ field: `lock_allowlist[${index}]`, code: 'invalid', message: `Lock ${id} is not in this key's location.` });
        }
      });
    }

    const userId = body.created_by_user_id ?? null;
    if (userId !== null) {
      const users = await this.db.query('SELECT id FROM dashboard_users WHERE id = $1 AND account_id = $2', [userId, location.account_id]);
      if (users.length === 0) {
        details.push({ field: 'created_by_user_id', code: 'invalid', message: `No user ${userId} in this account.` });
      }
    }
    if (details.length > 0) throw errors.validation(details);

    const token = newToken(API_KEY_TOKEN_PREFIX);
    const prefix = token.slice(0, API_KEY_TOKEN_PREFIX.length + 8);
    const [row] = await this.db.query<ApiKeyRow>(
      `INSERT INTO api_keys (location_id, name, token_hash, prefix, scopes, lock_allowlist, expires_at, created_by_user_id, created_at)
       VALUES ($1, $2, $3, $4, $5::text[], $6::bigint[], $7, $8, $9)
       RETURNING id, name, prefix, location_id, scopes, lock_allowlist, expires_at, created_at, revoked_at, created_by_user_id`,
      [location.id, body.name, hashToken(token), prefix, body.scopes, allowlist, expiresAt, userId, now],
    );
    return { ...toApiKey(row as ApiKeyRow), token };
  }

  async listApiKeys(page: PageRequest, locationId: number | undefined): Promise<PageOf<ApiKey>> {
    const rows = await this.db.query<ApiKeyRow>(
      `SELECT id, name, prefix, location_id, scopes, lock_allowlist, expires_at, created_at, revoked_at, created_by_user_id
         FROM api_keys
        WHERE ($1::bigint IS NULL OR location_id = $1) AND id > $2
        ORDER BY id LIMIT $3`,
      [locationId ?? null, page.afterId ?? 0, page.limit + 1],
    );
    return toPage(rows.map(toApiKey), page.limit, (k) => k.id);
  }

  async revokeApiKey(id: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const rows = await tx.query(
        'UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING id',
        [id, this.now()],
      );
      if (rows.length === 0) throw errors.notFound('API key');
      await notify(this.db, tx, AUTH_CHANNEL);
    });
  }

  // ---- security groups ------------------------------------------------------------------------

  async createSecurityGroup(body: SecurityGroupCreate): Promise<SecurityGroup> {
    await this.location(this.db, body.location_id, 'location_id');
    const rows = await this.db.query<SecurityGroup>(
      `INSERT INTO security_groups (location_id, code, title, description, is_default, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (location_id, code) DO NOTHING
       RETURNING id, code, title, description, is_default`,
      [body.location_id, body.code, body.title, body.description ?? '', body.is_default ?? false, this.now()],
    );
    if (!rows[0]) throw errors.invalidField('code', `A security group with code ${body.code} already exists at this location.`);
    return rows[0];
  }

  // ---- gateways and locks ---------------------------------------------------------------------

  /**
   * The gateway's broker account is made first, under an id drawn from the table's sequence, and the gateway
   * row after it: a gateway the operator is shown can always connect. When the broker cannot be provisioned
   * the answer is 503 broker_unavailable and nothing is created (docs/brokers.md).
   */
  async createGateway(body: { location_id: number; name: string }): Promise<Gateway> {
    await this.location(this.db, body.location_id, 'location_id');
    const [reserved] = await this.db.query<{ id: number | string }>("SELECT nextval(pg_get_serial_sequence('gateways', 'id')) AS id");
    const id = Number((reserved as { id: number | string }).id);
    const username = gatewayUsername(id);
    const password = newToken('');
    try {
      await this.onBroker(() => this.deps.gatewayAccounts.provision(id, password));
      await this.db.query(
        `INSERT INTO gateways (id, location_id, name, mqtt_username, password_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [id, body.location_id, body.name, username, hashToken(password), this.now()],
      );
    } catch (error) {
      // A half-made account (the broker took the command but its answer was lost) or one whose gateway row
      // could not be written: removed when the broker lets us. Its password was never shown to anyone.
      await this.deps.gatewayAccounts.remove(id).catch(() => undefined);
      throw error;
    }
    return this.withPassword({ id, name: body.name, location_id: body.location_id }, password);
  }

  async listGateways(page: PageRequest, locationId: number | undefined): Promise<PageOf<GatewaySummary>> {
    const rows = await this.db.query<GatewayRow>(
      `SELECT id, name, location_id, mqtt_username, online, last_seen_at, created_at FROM gateways
        WHERE ($1::bigint IS NULL OR location_id = $1) AND id > $2
        ORDER BY id LIMIT $3`,
      [locationId ?? null, page.afterId ?? 0, page.limit + 1],
    );
    return toPage(rows.map((row) => this.toGatewaySummary(row)), page.limit, (g) => g.id);
  }

  async getGateway(id: number): Promise<GatewaySummary> {
    return this.toGatewaySummary(await this.readGateway(id));
  }

  /**
   * A new password, shown once. The broker account is replaced first (Mosquitto drops live connections with
   * it), then the stored hash: when the broker cannot be updated, nothing changes and the old password stays
   * good. From the answer on the old password is refused, a live connection to the embedded broker drops, and
   * the gateway's locks read offline until it connects with the new password and says `{"online": true}`.
   */
  async rotateGatewayPassword(id: number): Promise<Gateway> {
    const password = newToken('');
    // One rotation of a gateway at a time (the row stays locked while the broker is updated), so the broker
    // and the store never end up holding the passwords of two different calls.
    const gateway = await this.db.transaction(async (tx) => {
      const [row] = await tx.query<GatewayRow>(`${GATEWAY_COLUMNS} WHERE id = $1 FOR UPDATE`, [id]);
      if (!row) throw errors.notFound('gateway');
      await this.onBroker(() => this.deps.gatewayAccounts.provision(id, password));
      await tx.query('UPDATE gateways SET password_hash = $2 WHERE id = $1', [id, hashToken(password)]);
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
  async deleteGateway(id: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [row] = await tx.query<GatewayRow>(`${GATEWAY_COLUMNS} WHERE id = $1 FOR UPDATE`, [id]);
      if (!row) throw errors.notFound('gateway');
      const [use] = await tx.query<{ locks: boolean; history: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM locks WHERE gateway_id = $1) AS locks,
                EXISTS (SELECT 1 FROM access_events WHERE gateway_id = $1) OR EXISTS (SELECT 1 FROM lock_commands WHERE gateway_id = $1) AS history`,
        [id],
      );
      if (use?.locks) throw errors.gatewayHasLocks();
      if (use?.history) throw errors.gatewayHasHistory();
      await tx.query('DELETE FROM gateways WHERE id = $1', [id]);
      await this.onBroker(() => this.deps.gatewayAccounts.remove(id));
    });
    this.deps.disconnectGateway(id);
  }

  private async readGateway(id: number): Promise<GatewayRow> {
    const [row] = await this.db.query<GatewayRow>(`${GATEWAY_COLUMNS} WHERE id = $1`, [id]);
    if (!row) throw errors.notFound('gateway');
    return row;
  }

  /**
   * A broker that cannot be reached or refuses answers 503 broker_unavailable: nothing was changed here, retry
   * later. A broker that did not answer in time may still carry the change out; the message says so.
   */
  private async onBroker(call: () => Promise<void>): Promise<void> {
    try {
      await call();
    } catch (error) {
      if (!(error instanceof BrokerUnavailableError)) throw error;
      const late = error.unanswered ? ' If the broker still carries it out, a gateway can be refused until its password is rotated again.' : '';
      throw errors.brokerUnavailable(error.message, late);
    }
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

  private toGatewaySummary(row: GatewayRow): GatewaySummary {
    return {
      id: row.id,
      name: row.name,
      location_id: row.location_id,
      mqtt: { url: this.gatewayUrl(), client_id: row.mqtt_username, username: row.mqtt_username, topic_prefix: MQTT_TOPIC_PREFIX },
      online: row.online,
      last_seen_at: row.last_seen_at?.toISOString() ?? null,
      created_at: row.created_at.toISOString(),
    };
  }

  async createLock(body: LockCreate): Promise<Lock> {
    const location = await this.location(this.db, body.location_id, 'location_id');
    const details: ErrorDetail[] = [];
    const gatewayId = body.gateway_id ?? null;
    if (gatewayId !== null) {
      const gateways = await this.db.query(
        'SELECT g.id FROM gateways g JOIN locations l ON l.id = g.location_id WHERE g.id = $1 AND l.account_id = $2',
        [gatewayId, location.account_id],
      );
      if (gateways.length === 0) details.push({ field: 'gateway_id', code: 'invalid', message: `No gateway ${gatewayId} in this account.` });
    }
    const codes = body.security_groups ?? [];
    details.push(...(await unknownSecurityGroups(this.db, location.id, codes)));
    if (details.length > 0) throw errors.validation(details);

    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ id: number }>(
        `INSERT INTO locks (location_id, name, place, serial_number, provider, gateway_id, security_group_codes, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7::text[], $8) RETURNING id`,
        [location.id, body.name, body.place ?? '', body.serial_number ?? null, body.provider ?? 'sandbox', gatewayId, codes, this.now()],
      );
      await notify(this.db, tx, CATALOG_CHANNEL);
      const lock = await findLock(tx, (row as { id: number }).id);
      if (!lock) throw new Error('inserted lock not found');
      return publicLock(lock);
    });
  }
}
