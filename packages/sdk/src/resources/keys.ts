// Keys and invitations (docs/spec/public-api-v1.md, Keys and Invitations).
import { idempotencyHeader, init, unwrap, type Api, type CallOptions, type CreateOptions } from '../api.js';
import { PageList } from '../pagination.js';
import type {
  Invitation,
  InvitationCreated,
  InvitationQuery,
  InvitationResend,
  Key,
  KeyCreate,
  KeyQuery,
  KeyUpdate,
} from '../types.js';

export class Keys {
  constructor(private readonly api: Api) {}

  /** `GET /keys` (filters `person_id`, `state`, `security_group`): every access grant in scope. */
  list(query: KeyQuery = {}, options: CallOptions = {}): PageList<Key> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/keys', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  /**
   * `POST /keys` with an Idempotency-Key: issues a phone key. The answer is the invitation (a setup link is
   * sent); the key itself appears once the person activates the link.
   */
  create(body: KeyCreate, options: CreateOptions = {}): Promise<InvitationCreated> {
    return unwrap(this.api.POST('/v1/keys', { params: { header: idempotencyHeader(options) }, body, ...init(options) }));
  }

  get(id: number, options: CallOptions = {}): Promise<Key> {
    return unwrap(this.api.GET('/v1/keys/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /** `PATCH /keys/{id}`: any of `name`, `security_groups`, `starts_at`, `expires_at` (`null` removes the expiry). */
  update(id: number, body: KeyUpdate, options: CallOptions = {}): Promise<Key> {
    return unwrap(this.api.PATCH('/v1/keys/{id}', { params: { path: { id } }, body, ...init(options) }));
  }

  /** `DELETE /keys/{id}`: the key leaves every read at once. */
  async revoke(id: number, options: CallOptions = {}): Promise<void> {
    await unwrap(this.api.DELETE('/v1/keys/{id}', { params: { path: { id } }, ...init(options) }));
  }
}

export class Invitations {
  constructor(private readonly api: Api) {}

  /** `GET /invitations` (filters `person_id`, `state`), cancelled ones included. */
  list(query: InvitationQuery = {}, options: CallOptions = {}): PageList<Invitation> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/invitations', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  get(id: number, options: CallOptions = {}): Promise<Invitation> {
    return unwrap(this.api.GET('/v1/invitations/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /** `DELETE /invitations/{id}`: the link can no longer be activated. */
  async cancel(id: number, options: CallOptions = {}): Promise<void> {
    await unwrap(this.api.DELETE('/v1/invitations/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /** `POST /invitations/{id}/resend`: a new setup link (by SMS unless `channel` says otherwise). */
  resend(id: number, body: InvitationResend = {}, options: CallOptions = {}): Promise<Invitation> {
    return unwrap(this.api.POST('/v1/invitations/{id}/resend', { params: { path: { id } }, body, ...init(options) }));
  }
}
