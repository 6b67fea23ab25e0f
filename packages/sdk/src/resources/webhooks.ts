// Webhook subscriptions and deliveries (docs/spec/public-api-v1.md, Webhooks).
import { idempotencyHeader, init, unwrap, type Api, type CallOptions, type CreateOptions } from '../api.js';
import { LatchkeyError } from '../errors.js';
import { PageList } from '../pagination.js';
import type {
  PageQuery,
  WebhookDelivery,
  WebhookDeliveryQuery,
  WebhookSubscription,
  WebhookSubscriptionCreate,
  WebhookSubscriptionCreated,
  WebhookSubscriptionUpdate,
} from '../types.js';
import { verifyWebhook } from '../verify-webhook.js';

export class Webhooks {
  constructor(private readonly api: Api) {}

  /** `GET /webhooks`: the subscriptions of the API key's own location. */
  list(query: PageQuery = {}, options: CallOptions = {}): PageList<WebhookSubscription> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/webhooks', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  /** `POST /webhooks` with an Idempotency-Key. The answer carries the signing `secret`, shown only here: keep it. */
  create(body: WebhookSubscriptionCreate, options: CreateOptions = {}): Promise<WebhookSubscriptionCreated> {
    return unwrap(this.api.POST('/v1/webhooks', { params: { header: idempotencyHeader(options) }, body, ...init(options) }));
  }

  get(id: string, options: CallOptions = {}): Promise<WebhookSubscription> {
    return unwrap(this.api.GET('/v1/webhooks/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /** `PATCH /webhooks/{id}`: any of `url`, `events`, `description`, `status` (`paused` or `active`). */
  update(id: string, body: WebhookSubscriptionUpdate, options: CallOptions = {}): Promise<WebhookSubscription> {
    return unwrap(this.api.PATCH('/v1/webhooks/{id}', { params: { path: { id } }, body, ...init(options) }));
  }

  /** `GET /webhooks/{id}/deliveries` (filters `status`, `event_type`, `since`), newest first. */
  deliveries(id: string, query: WebhookDeliveryQuery = {}, options: CallOptions = {}): PageList<WebhookDelivery> {
    return new PageList(
      (cursor) =>
        unwrap(this.api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  /** `POST …/deliveries/{delivery_id}/redeliver`: a new delivery of the same event (queued). */
  redeliver(id: string, deliveryId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return unwrap(
      this.api.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', { params: { path: { id, delivery_id: deliveryId } }, ...init(options) }),
    );
  }

  /** `POST /webhooks/{id}/ping`: one `ping` delivery sent at once; the record of its attempt. */
  ping(id: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return unwrap(this.api.POST('/v1/webhooks/{id}/ping', { params: { path: { id } }, ...init(options) }));
  }

  /** The standalone verifyWebhook(), for a receiver that holds a client anyway. */
  readonly verify = verifyWebhook;

  /**
   * `GET /webhooks/listen`: the raw server-sent-event stream of the key's events as signed deliveries (`ready`
   * with the signing secret, then `delivery` messages `{ headers, body }`, comment lines as heartbeats, `end`).
   * Abort `signal` to close it. `latchkey webhooks listen --forward-to <url>` reads it and forwards each delivery.
   */
  async listen(query: { events?: string } = {}, options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const { response, error } = await this.api.GET('/v1/webhooks/listen', {
      params: { query },
      headers: { accept: 'text/event-stream' },
      parseAs: 'stream',
      ...init(options),
    });
    if (!response.ok || !response.body) throw LatchkeyError.fromResponse(response, error);
    return response.body;
  }
}
