// Every list: `for await (const item of list)` follows `next_cursor` to the last page
// (docs/spec/public-api-v1.md, "Page envelope"); `page()` reads one page.
import type { Page } from './types.js';

export type PageReader<T> = (cursor: string | undefined) => Promise<Page<T>>;

export class PageList<T> implements AsyncIterable<T> {
  constructor(
    private readonly read: PageReader<T>,
    /** The `cursor` of the query, if the caller passed one: iteration starts there. */
    private readonly startCursor?: string,
  ) {}

  /** One page: the first (or the query's `cursor`), or the one at `cursor` (a `next_cursor` handed out before). */
  page(cursor: string | undefined = this.startCursor): Promise<Page<T>> {
    return this.read(cursor);
  }

  /** Every page in turn, one request each, until `next_cursor` is null. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.startCursor;
    do {
      const page = await this.read(cursor);
      yield page;
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item of every page in one array (mind the size of what is listed). */
  async all(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
