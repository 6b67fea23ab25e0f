// The rules of webhook subscriptions and their delivery records (spec: Endpoints/Webhooks, rules 1 to 6).
import { randomBytes } from 'node:crypto';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { WEBHOOK_DUE_CHANNEL } from '../../platform/channels.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { uuidv7 } from '../../platform/ids.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import type { WebhookDispatcher } from './dispatcher.ts';
import type { Delivery, Subscription, SubscriptionCreate, SubscriptionUpdate } from './schemas.ts';
import {
  countActiveSubscriptions,
  findDelivery,
  findSubscription,
  insertPing,
  insertRedelivery,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  lockLocationSubscriptions,
  updateSubscription,
  type DeliveryRow,
  type SubscriptionRow,
} from './store.ts';
import { vetWebhookUrl } from './url-guard.ts';

export const MAX_ACTIVE_PER_LOCATION = 5;

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

export interface WebhooksDeps {
  db: Database;
  clock: Clock;
  secrets: SecretBox;
  dispatcher: WebhookDispatcher;
  allowHosts: readonly string[];
}

export class WebhooksService {
  constructor(private readonly deps: WebhooksDeps) {}

  get db(): Database {
    return this.deps.db;
  }

  get clock(): Clock {
    return this.deps.clock;
  }

  get secrets(): SecretBox {
    return this.deps.secrets;
  }

  async list(caller: Caller, query: { limit?: number; cursor?: string }): Promise<PageOf<Subscription>> {
    const limit = clampLimit(query.limit);
    const after = decodeCursor(query.cursor, 'uuid', 'webhooks');
    const rows = await listSubscriptions(this.db, caller.locationId, after, limit + 1);
    return toPage(rows.map(toSubscription), limit, (s) => s.id, 'webhooks');
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
      await lockLocationSubscriptions(tx, caller.locationId);
      await checkCap(tx, caller.locationId);
      return insertSubscription(tx, {
        id: uuidv7(now),
        account_id: caller.accountId,
        location_id: caller.locationId,
        url: body.url,
        events: body.events,
        description: body.description ?? '',
        secret_ciphertext: this.deps.secrets.seal(secret),
        createdByKeyId: caller.apiKeyId,
        created_at: now,
      });
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
      await lockLocationSubscriptions(tx, current.location_id);
      const resuming = body.status === 'active' && current.status === 'paused';
      if (resuming) await checkCap(tx, current.location_id);
      // A new url keeps the secret; resuming clears the failure streak.
      const row = await updateSubscription(tx, id, {
        url: body.url ?? null,
        events: body.events ?? null,
        description: body.description ?? null,
        status: body.status ?? null,
        resuming,
      });
      return toSubscription(row);
    });
  }

  async deliveries(
    caller: Caller,
    id: string,
    query: { limit?: number; cursor?: string; status?: string; event_type?: string; since?: string },
  ): Promise<PageOf<Delivery>> {
    await this.subscription(caller, id);
    const limit = clampLimit(query.limit);
    const before = decodeCursor(query.cursor, 'uuid', 'deliveries');
    let since: Date | null = null;
    if (query.since !== undefined) {
      since = parseClientTimestamp(query.since);
      if (!since) throw errors.invalidRequest('The query parameter since is not an ISO 8601 date-time.');
    }
    // Newest first (cursor: the last id shown).
    const rows = await listDeliveries(
      this.db,
      id,
      { beforeId: before, status: query.status ?? null, eventType: query.event_type ?? null, since },
      limit + 1,
    );
    return toPage(rows.map(toDelivery), limit, (d) => d.id, 'deliveries');
  }

  /** A fresh delivery of the same type and payload, `event_id` the original's id, on the full ladder. */
  async redeliver(caller: Caller, id: string, deliveryId: string): Promise<Delivery> {
    const subscription = await this.subscription(caller, id);
    const original = await findDelivery(this.db, id, deliveryId);
    if (!original) throw errors.notFound('delivery');
    if (subscription.status === 'paused') throw errors.subscriptionPaused();
    if (original.payload === null) throw errors.notFound('delivery payload (purged)');
    const now = this.deps.clock.now();
    // Due at once: the dispatchers hear it now, as they hear new events, not at their next poll.
    return this.db.transaction(async (tx) => {
      const row = await insertRedelivery(tx, uuidv7(now), original, now);
      await tx.notify(WEBHOOK_DUE_CHANNEL);
      return toDelivery(row);
    });
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
    const row = await insertPing(this.db, {
      id: deliveryId,
      subscription_id: id,
      payload,
      ok: result.ok,
      response_status: result.status,
      last_error: result.error,
      delivered_at: result.ok ? done : null,
      created_at: now,
    });
    return toDelivery(row);
  }

  /** A subscription of the caller's own location, or 404. */
  private async subscription(caller: Caller, id: string): Promise<SubscriptionRow> {
    const row = await findSubscription(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('webhook subscription');
    return row;
  }

  private async checkUrl(url: string, details: ErrorDetail[]): Promise<void> {
    const verdict = await vetWebhookUrl(url, this.deps.allowHosts);
    if (!verdict.ok) details.push({ field: 'url', code: 'invalid', message: verdict.reason ?? 'url is not allowed.' });
  }
}

/** Call with the location's subscriptions locked (lockLocationSubscriptions), so concurrent changes cannot both pass. */
async function checkCap(tx: Queryable, locationId: number): Promise<void> {
  if ((await countActiveSubscriptions(tx, locationId)) >= MAX_ACTIVE_PER_LOCATION) {
    throw errors.validation([{ field: 'url', code: 'limit_reached', message: `A location holds at most ${MAX_ACTIVE_PER_LOCATION} active subscriptions.` }]);
  }
}

function checkEvents(events: string[], details: ErrorDetail[]): void {
  if (events.includes('*') && events.length > 1) {
    details.push({ field: 'events', code: 'invalid', message: 'events is either the single wildcard * or a list of event names.' });
  }
}
