// Reads shared only with requests made before they began. A request that finds no read of its key running begins
// one; a request that finds one running (begun perhaps before a write it must see) waits for the next read of
// that key, which begins as the running one ends and which every request meanwhile shares, each adding what it
// asks for (its item). So each answer holds everything committed before its request, as a read of its own would,
// and many requests for one key cost at most one read at a time. Used where the cache is off or has missed:
// pages with PAGE_CACHE_ENABLED=false (page-cache.ts), keys swiped online (access/credential-cache.ts).

interface Reads<I, R> {
  running: Promise<R>;
  /** The read after the running one, once a request asked for the key meanwhile, with the items asked for. */
  next?: { items: I[]; result: Promise<R> };
}

export class ReadsAfterRequest<K, I, R> {
  private readonly reads = new Map<K, Reads<I, R>>();

  /** `read(key, items)`: one read for the requests of `key` that share it, `items` theirs in the order asked. */
  constructor(private readonly read: (key: K, items: readonly I[]) => Promise<R>) {}

  /** The result of a read of `key` begun no sooner than this call, which holds `item`. */
  get(key: K, item: I): Promise<R> {
    const reads = this.reads.get(key);
    if (reads === undefined) return this.begin(key, [item]);
    if (reads.next === undefined) {
      const items: I[] = [];
      const begin = () => this.begin(key, items);
      reads.next = { items, result: reads.running.then(begin, begin) };
    }
    reads.next.items.push(item);
    return reads.next.result;
  }

  private begin(key: K, items: readonly I[]): Promise<R> {
    // An async wrapper: a read that throws at once fails its own requests alone, and the entry is still replaced
    // and cleared, never left holding a failed next read for every later request.
    const reads: Reads<I, R> = { running: (async () => this.read(key, items))() };
    this.reads.set(key, reads);
    // With a next read waiting, the entry stays until that read replaces it.
    const done = () => {
      if (this.reads.get(key) === reads && reads.next === undefined) this.reads.delete(key);
    };
    reads.running.then(done, done);
    return reads.running;
  }
}
