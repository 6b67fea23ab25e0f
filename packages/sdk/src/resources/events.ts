// The access log (docs/spec/public-api-v1.md, Events: `GET /events`, oldest first, `id` ascending).
import { init, unwrap, type Api, type CallOptions } from '../api.js';
import { PageList } from '../pagination.js';
import { sleep } from '../transport.js';
import type { Event, EventQuery, Page } from '../types.js';

export interface FollowOptions extends CallOptions, Omit<EventQuery, 'since' | 'cursor'> {
  /** How long to wait before reading again once the newest row has been read; default 5000 ms. */
  intervalMs?: number;
}

export class Events {
  constructor(private readonly api: Api) {}

  /** `GET /events` (filters `since`, `lock_id`, `person_id`, `type`): iterate with `for await`, or `.page()`. */
  list(query: EventQuery = {}, options: CallOptions = {}): PageList<Event> {
    return new PageList((cursor) => this.read({ ...query, cursor }, options), query.cursor);
  }

  /**
   * Every access-log row that occurred at or after `since`, then every new row as it arrives: the last page
   * is read again every `intervalMs` and only rows not yet yielded are yielded. It never ends by itself:
   * `break` out of the loop (between rows), or abort `signal` (also during a wait; the iteration then
   * rejects with the signal's reason).
   */
  async *since(since: Date | string, options: FollowOptions = {}): AsyncGenerator<Event, void, undefined> {
    const { intervalMs = 5000, signal, ...filters } = options;
    const query: EventQuery = { ...filters, since: typeof since === 'string' ? since : since.toISOString() };
    const call = signal ? { signal } : {};
    // The cursor that produced the page being read: reading it again returns the same rows plus newer ones
    // (cursors are keyset positions), so the last page is where new rows show up.
    let cursor: string | undefined;
    let lastId = -Infinity;
    for (;;) {
      const page = await this.read({ ...query, cursor }, call);
      for (const event of page.data) {
        if (event.id <= lastId) continue;
        lastId = event.id;
        yield event;
      }
      if (page.next_cursor !== null) cursor = page.next_cursor;
      else await sleep(intervalMs, signal);
    }
  }

  private read(query: EventQuery, options: CallOptions): Promise<Page<Event>> {
    return unwrap(this.api.GET('/v1/events', { params: { query }, ...init(options) }));
  }
}
