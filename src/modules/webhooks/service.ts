// The rules of webhook subscriptions and their delivery records (spec: Endpoints/Webhooks, rules 1 to 6).
import { randomBytes } from 'node:crypto';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { uuidv7 } from '../../platform/ids.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import type { WebhookDispatcher } from './dispatcher.ts';
import type { Delivery, Subscription, SubscriptionCreate, SubscriptionUpdate } from './schemas.ts';
import { vetWebhookUrl } from './url-guard.ts';

export const MAX_ACTIVE_PER_LOCATION = 5;

interface SubscriptionRow {
  id: string;
  account_id: number;
  location_id: number;
  url: string;
  events: string[];
  description: string;
  status: 'active' | 'paused';
  failing_since: Date | null;
  last_delivery_at: Date | null;
  created_at: Date;
  secret_ciphertext: string;
}

interface DeliveryRow {
  id: string;
  subscription_id: string;
  event_type: string;
  event_id: string;
  person_id: string | null;
  status: string;
  attempt: number;
  response_status: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
  payload: Record<string, unknown> | null;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    description: row.description,
    status: row.status,
    failing_since: iso(row.failing_since),
    last_delivery_at: iso(row.last_delivery_at),
    created_at: row.created_at.toISOString(),
  };
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    subscription_id: row.subscription_id,
    event_type: row.event_type,
    event_id: row.event_id,
    status: row.status,
    attempt: row.attempt,
    response_status: row.response_status,
    last_error: row.last_error,
    next_attempt_at: iso(row.next_attempt_at),
    delivered_at: iso(row.delivered_at),
    created_at: row.created_at.toISOString(),
    payload: row.payload,
  };
}

const DELIVERY_COLUMNS = `id, subscription_id, event_type, event_id, person_id, status, attempt, response_status, last_error,
  next_attempt_at, delivered_at, created_at, payload`;

export interface WebhooksDeps {
  db: Database;
  clock: Clock;
  secrets: SecretBox;
  dispatcher: WebhookDispatcher;
  allowHosts: readonly string[];
}

export class WebhooksService {
  constructor(private readonly deps: WebhooksDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  async list(caller: Caller, query: { limit?: number; cursor?: string }): Promise<PageOf<Subscription>> {
    const limit = clampLimit(query.limit);
    const after = decodeCursor(query.cursor, 'uuid');
    const rows = await this.db.query<SubscriptionRow>(
      `SELECT * FROM webhook_subscriptions WHERE location_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid) ORDER BY id LIMIT $3`,
      [caller.locationId, after, limit + 1],
    );
    return toPage(rows.map(toSubscription), limit, (s) => s.id);
  }

  async get(caller: Caller, id: string): Promise<Subscription> {
    return toSubscription(await this.subscription(caller, id));
  }

  async create(caller: Caller, body: SubscriptionCreate): Promise<Subscription & { secret: string }> {
    const details: ErrorDetail[] = [];
    await this.checkUrl(body.url, details);
    checkEvents(body.events, details);
    if (details.length > 0) throw errors.validation(details);
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const now = this.deps.clock.now();
    const row = await this.db.transaction(async (tx) => {
      // Serialise creates per location so that two concurrent sixth subscriptions cannot both pass the cap.
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`webhooks:${caller.locationId}`]);
      await this.checkCap(tx, caller.locationId);
      const [inserted] = await tx.query<SubscriptionRow>(
        `INSERT INTO webhook_subscriptions (id, account_id, location_id, url, events, description, status, secret_ciphertext, created_by_key_id, created_at)
         VALUES ($1, $2, $3, $4, $5::text[], $6, 'active', $7, $8, $9) RETURNING *`,
        [uuidv7(now), caller.accountId, caller.locationId, body.url, body.events, body.description ?? '', this.deps.secrets.seal(secret), caller.apiKeyId, now],
      );
      return inserted as SubscriptionRow;
    });
    return { ...toSubscription(row), secret };
  }

  async update(caller: Caller, id: string, body: SubscriptionUpdate): Promise<Subscription> {
    const current = await this.subscription(caller, id);
    const details: ErrorDetail[] = [];
    if (body.url !== undefined) await this.checkUrl(body.url, details);
    if (body.events !== undefined) checkEvents(body.events, details);
    if (details.length > 0) throw errors.validation(details);
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`webhooks:${current.location_id}`]);
      if (body.status === 'active' && current.status === 'paused') await this.checkCap(tx, current.location_id);
      const resuming = body.status === 'active' && current.status === 'paused';
      // A new url keeps the secret; resuming clears the failure streak.
      const [row] = await tx.query<SubscriptionRow>(
        `UPDATE webhook_subscriptions
            SET url = COALESCE($2, url), events = COALESCE($3::text[], events), description = COALESCE($4, description),
                status = COALESCE($5, status), failing_since = CASE WHEN $6 THEN NULL ELSE failing_since END
          WHERE id = $1 RETURNING *`,
        [id, body.url ?? null, body.events ?? null, body.description ?? null, body.status ?? null, resuming],
      );
      return toSubscription(row as SubscriptionRow);
    });
  }

  async deliveries(
    caller: Caller,
    id: string,
    query: { limit?: number; cursor?: string; status?: string; event_type?: string; since?: string },
  ): Promise<PageOf<Delivery>> {
    await this.subscription(caller, id);
    const limit = clampLimit(query.limit);
    const before = decodeCursor(query.cursor, 'uuid');
    let since: Date | null = null;
    if (query.since !== undefined) {
      since = parseClientTimestamp(query.since);
      if (!since) throw errors.invalidRequest('The query parameter since is not an ISO 8601 date-time.');
    }
    // Newest first: ids are time-ordered (UUIDv7), so keyset on id descending.
    const rows = await this.db.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
        WHERE subscription_id = $1 AND ($2::uuid IS NULL OR id < $2::uuid)
          AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR event_type = $4) AND ($5::timestamptz IS NULL OR created_at >= $5)
        ORDER BY id DESC LIMIT $6`,
      [id, before, query.status ?? null, query.event_type ?? null, since, limit + 1],
    );
    return toPage(rows.map(toDelivery), limit, (d) => d.id);
  }

  /** A fresh delivery of the same type and payload, `event_id` the original's id, on the full ladder. */
  async redeliver(caller: Caller, id: string, deliveryId: string): Promise<Delivery> {
    const subscription = await this.subscription(caller, id);
    const [original] = await this.db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1 AND subscription_id = $2`, [
      deliveryId,
      id,
    ]);
    if (!original) throw errors.notFound('delivery');
    if (subscription.status === 'paused') throw errors.subscriptionPaused();
    if (original.payload === null) throw errors.notFound('delivery payload (purged)');
    const now = this.deps.clock.now();
    const [row] = await this.db.query<DeliveryRow>(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, person_id, payload, status, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6::jsonb, 'pending', $7, $7) RETURNING ${DELIVERY_COLUMNS}`,
      [uuidv7(now), id, original.event_type, original.id, original.person_id, JSON.stringify(original.payload), now],
    );
    return toDelivery(row as DeliveryRow);
  }

  /** One synchronous attempt, never retried; touches neither the failure streak nor the pause. */
  async ping(caller: Caller, id: string): Promise<Delivery> {
    const subscription = await this.subscription(caller, id);
    const now = this.deps.clock.now();
    const deliveryId = uuidv7(now);
    const payload = { message: 'pong' };
    const result = await this.deps.dispatcher.attempt({
      id: deliveryId,
      subscription_id: id,
      event_type: 'ping',
      payload,
      attempt: 1,
      created_at: now,
      url: subscription.url,
      secret_ciphertext: subscription.secret_ciphertext,
    });
    const done = this.deps.clock.now();
    const [row] = await this.db.query<DeliveryRow>(
      `INSERT INTO webhook_deliveries (id, subscription_id, event_type, event_id, payload, status, attempt, response_status, last_error, delivered_at, created_at)
       VALUES ($1, $2, 'ping', $3, $4::jsonb, $5, 1, $6, $7, $8, $9) RETURNING ${DELIVERY_COLUMNS}`,
      [deliveryId, id, deliveryId, JSON.stringify(payload), result.ok ? 'delivered' : 'failed', result.status, result.error, result.ok ? done : null, now],
    );
    return toDelivery(row as DeliveryRow);
  }

  /** A subscription of the caller's own location, or 404. */
  private async subscription(caller: Caller, id: string): Promise<SubscriptionRow> {
    const [row] = await this.db.query<SubscriptionRow>('SELECT * FROM webhook_subscriptions WHERE id = $1 AND location_id = $2', [id, caller.locationId]);
    if (!row) throw errors.notFound('webhook subscription');
    return row;
  }

  private async checkUrl(url: string, details: ErrorDetail[]): Promise<void> {
    const verdict = await vetWebhookUrl(url, this.deps.allowHosts);
    if (!verdict.ok) details.push({ field: 'url', code: 'invalid', message: verdict.reason ?? 'url is not allowed.' });
  }

  private async checkCap(tx: Queryable, locationId: number): Promise<void> {
    const active = await tx.query(`SELECT id FROM webhook_subscriptions WHERE location_id = $1 AND status = 'active'`, [locationId]);
    if (active.length >= MAX_ACTIVE_PER_LOCATION) {
      throw errors.validation([{ field: 'url', code: 'limit_reached', message: `A location holds at most ${MAX_ACTIVE_PER_LOCATION} active subscriptions.` }]);
    }
  }
}

function checkEvents(events: string[], details: ErrorDetail[]): void {
  if (events.includes('*') && events.length > 1) {
    details.push({ field: 'events', code: 'invalid', message: 'events is either the single wildcard * or a list of event names.' });
  }
}
