// Group commit: writes asked for while an earlier one runs are made together, in one write, as soon as it
// ends. A lone write starts after the current turn of the event loop (no timer); under load the number of
// statements stays near one per database round trip instead of one per caller. Each caller gets its own part
// of the result.

interface Waiting<T, R> {
  items: readonly T[];
  resolve: (results: R[]) => void;
  reject: (error: unknown) => void;
}

export class CoalescedWrites<T, R> {
  private waiting: Array<Waiting<T, R>> = [];
  private running = false;

  /**
   * `writeAll` writes items in the order given and returns one result per item. `ownFault(error)`: the error
   * may belong to one caller's items (the database refused them as data): each caller's items are then
   * written on their own, so one caller's bad row cannot fail the others'.
   */
  constructor(
    private readonly writeAll: (items: T[]) => Promise<R[]>,
    private readonly ownFault: (error: unknown) => boolean,
    /** At most this many items in one write; a caller's items are never split. */
    private readonly maxItems = 5000,
  ) {}

  /** Writes `items`, with whatever else is waiting; resolves with their results once written. */
  write(items: readonly T[]): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject });
      if (this.running) return;
      this.running = true;
      // After the I/O of this turn of the event loop: what the other connections brought joins this write.
      // (PGlite runs its statements synchronously on this thread: started at once, a write would be alone.)
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      let count = 0;
      let take = 0;
      while (take < this.waiting.length && (take === 0 || count + (this.waiting[take] as Waiting<T, R>).items.length <= this.maxItems)) {
        count += (this.waiting[take] as Waiting<T, R>).items.length;
        take++;
      }
      await this.run(this.waiting.splice(0, take));
    }
    this.running = false;
  }

  private async run(group: Array<Waiting<T, R>>): Promise<void> {
    let results: R[];
    try {
      results = await this.writeAll(group.flatMap((caller) => caller.items));
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
