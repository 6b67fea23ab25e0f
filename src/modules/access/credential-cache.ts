// The keys presented online, remembered per account so that a busy door does not cost a database read per
// swipe. Every change to what an account's keys open runs AccessLists.refresh, which notifies
// ACCESS_KEYS_CHANNEL in its transaction: this instance forgets the account's keys as the change commits,
// another instance when the notification reaches it (milliseconds). A lost LISTEN connection forgets
// everything, and nothing is kept longer than KEY_TTL_MS whatever happens.
import { LRUCache } from 'lru-cache';
import type { Database } from '../../platform/db/index.ts';
import { ACCESS_KEYS_CHANNEL } from '../../platform/channels.ts';
import { keyByCredential, type AccessKeyRow } from './store.ts';

const KEY_TTL_MS = 30_000;
const MAX_KEYS = 50_000;

interface Remembered {
  /** The read, shared by the swipes that arrive while it runs. */
  row: Promise<AccessKeyRow | null>;
  /** The account's generation and the cache's epoch when the row was read: a change since makes it stale. */
  generation: number;
  epoch: number;
}

export class CredentialCache {
  private readonly rows = new LRUCache<string, Remembered>({ max: MAX_KEYS, ttl: KEY_TTL_MS });
  private readonly generations = new Map<number, number>();
  private epoch = 0;

  constructor(private readonly db: Database) {}

  async start(): Promise<void> {
    await this.db.listen(ACCESS_KEYS_CHANNEL, (payload) => {
      const accountId = Number(payload);
      // An empty payload: the LISTEN connection was lost and is back; changes may have gone unheard.
      if (payload === '' || !Number.isSafeInteger(accountId)) this.forgetAll();
      else this.generations.set(accountId, (this.generations.get(accountId) ?? 0) + 1);
    });
  }

  /** The live key presenting the credential whose lookup hash is `hash`, or null (see keyByCredential). */
  find(accountId: number, hash: string): Promise<AccessKeyRow | null> {
    // Read before the query: a change committed while it runs leaves what it returns stale at once.
    const generation = this.generations.get(accountId) ?? 0;
    const epoch = this.epoch;
    const name = `${accountId}:${hash}`;
    const remembered = this.rows.get(name);
    if (remembered && remembered.generation === generation && remembered.epoch === epoch) return remembered.row;
    const row = keyByCredential(this.db, accountId, hash);
    const entry = { row, generation, epoch };
    this.rows.set(name, entry);
    // A failed read is not remembered: the next swipe asks the database again.
    row.catch(() => this.rows.get(name) === entry && this.rows.delete(name));
    return row;
  }

  forgetAll(): void {
    this.epoch++;
    this.rows.clear();
  }
}
