// People (docs/spec/public-api-v1.md, People).
import { idempotencyHeader, init, unwrap, type Api, type CallOptions, type CreateOptions } from '../api.js';
import { PageList } from '../pagination.js';
import type { Person, PersonCreate, PersonQuery, PersonUpdate, PersonWithKeys } from '../types.js';

export class People {
  constructor(private readonly api: Api) {}

  /** `GET /people` (filters `email`, `phone`): iterate with `for await`, or read one page with `.page()`. */
  list(query: PersonQuery = {}, options: CallOptions = {}): PageList<Person> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/people', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  /**
   * `POST /people` with an Idempotency-Key. A person in scope with the same phone or e-mail is returned
   * unchanged instead of a new one (the service de-duplicates).
   */
  create(body: PersonCreate, options: CreateOptions = {}): Promise<Person> {
    return unwrap(this.api.POST('/v1/people', { params: { header: idempotencyHeader(options) }, body, ...init(options) }));
  }

  /** `GET /people/{id}`: the person with the keys they hold in scope. */
  get(id: string, options: CallOptions = {}): Promise<PersonWithKeys> {
    return unwrap(this.api.GET('/v1/people/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /** `PUT /people/{id}`: only the fields sent change; `null` clears one (not `name`). */
  update(id: string, body: PersonUpdate, options: CallOptions = {}): Promise<Person> {
    return unwrap(this.api.PUT('/v1/people/{id}', { params: { path: { id } }, body, ...init(options) }));
  }

  /** `DELETE /people/{id}` (a soft delete: the person leaves every read). */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    await unwrap(this.api.DELETE('/v1/people/{id}', { params: { path: { id } }, ...init(options) }));
  }
}
