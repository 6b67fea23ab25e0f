// Group commit, and its twin for reads: calls asked for while earlier ones run are made together, in one call (one
// statement), as soon as one ends (at most maxAtOnce at once). A lone call starts after the current turn of the event
// loop (no timer); under load the number of statements stays near one per database round trip instead of one per
// caller. Each caller gets its own part of the result. A call never holds items asked for after it began, so a read
// made this way holds everything committed before each of its callers asked. Used for the access log's writes
// (devices/index.ts) and for the pages of its door pollers (events/reader.ts).

interface Waiting<T, R> {
  items: readonly T[];
  resolve: (results: R[]) => void;
  reject: (error: unknown) => void;
}

export class CoalescedCalls<T, R> {
  private waiting: Array<Waiting<T, R>> = [];
  private active = 0;
  private scheduled = false;

  /**
   * `callAll` writes (or reads) items in the order given and returns one result per item. `ownFault(error)`: the
   * error may belong to one caller's items (the database refused them as data): each caller's items are then
   * written on their own, so one caller's bad row cannot fail the others'.
   */
  constructor(
    private readonly callAll: (items: T[]) => Promise<R[]>,
    private readonly ownFault: (error: unknown) => boolean,
    private readonly options: {
      /** Calls at once at most: PostgreSQL runs several in parallel on several cores (1: one at a time). */
      maxAtOnce?: number;
      /** At most this many items in one call; a caller's items are never split. */
      maxItems?: number;
      /**
       * A write starts no sooner than this after the one before it started (0: as soon as one ends). A write has a
       * fixed cost whatever its size, and PGlite's thread pays it on the service's core: under load, writes this far
       * apart gather more each and leave the core to everything else. After a quiet moment a write starts at once.
       */
      gatherMs?: number;
    } = {},
  ) {}

  /** When the last call started (performance.now()), for gatherMs. */
  private lastStartedAt = -Infinity;

  /** Makes the call for `items`, with whatever else is waiting; resolves with their results once made. */
  call(items: readonly T[]): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Starts a call after the I/O of this turn of the event loop, so that what the other connections brought
   * joins it (started at once, a call would be alone); with gatherMs, no sooner than that after the last call
   * started.
   */
  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.active >= (this.options.maxAtOnce ?? 1)) return;
    this.scheduled = true;
    const wait = this.lastStartedAt + (this.options.gatherMs ?? 0) - performance.now();
    const start = () => {
      this.scheduled = false;
      if (this.waiting.length === 0 || this.active >= (this.options.maxAtOnce ?? 1)) return;
      const maxItems = this.options.maxItems ?? 5000;
      let count = 0;
      let take = 0;
      while (take < this.waiting.length && (take === 0 || count + (this.waiting[take] as Waiting<T, R>).items.length <= maxItems)) {
        count += (this.waiting[take] as Waiting<T, R>).items.length;
        take++;
      }
      this.active++;
      this.lastStartedAt = performance.now();
      void this.run(this.waiting.splice(0, take)).finally(() => {
        this.active--;
        this.schedule();
      });
      this.schedule(); // more than one call's worth waiting, and a slot free
    };
    if (wait > 0) setTimeout(start, wait);
    else setImmediate(start);
  }

  private async run(group: Array<Waiting<T, R>>): Promise<void> {
    let results: R[];
    try {
      results = await this.callAll(group.flatMap((caller) => caller.items));
    } catch (error) {
      if (group.length > 1 && this.ownFault(error)) {
        for (const caller of group) await this.run([caller]);
      } else {
        for (const caller of group) caller.reject(error);
      }
      return;
    }
    let at = 0;
    for (const caller of group) {
      caller.resolve(results.slice(at, at + caller.items.length));
      at += caller.items.length;
    }
  }
}
