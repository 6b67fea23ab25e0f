// The keys presented online, remembered per account so that a busy door does not cost a database read per
// swipe. Every change to what an account's keys open runs AccessLists.refresh, which notifies
// ACCESS_KEYS_CHANNEL in its transaction: this instance forgets the account's keys as the change commits,
// another instance when the notification reaches it (milliseconds). A lost LISTEN connection forgets
// everything, and nothing is kept longer than KEY_TTL_MS whatever happens.
//
// Swipes of keys not remembered are read together: while an account's read runs, the credentials asked
// meanwhile wait for the next read, which begins as the running one ends and looks them all up in two
// statements (platform/reads-after-request.ts). On the embedded database PGlite runs one statement at a time,
// and a thousand keys read one by one after a start or a change held it for over a second (bench/RESULTS.md,
// 2026-11-28). No swipe shares a read begun before it, so each answer holds every change committed before it.
import { LRUCache } from 'lru-cache';
import type { Database } from '../../platform/db/index.ts';
import { ACCESS_KEYS_CHANNEL } from '../../platform/channels.ts';
import { ReadsAfterRequest } from '../../platform/reads-after-request.ts';
import { keysByCredential, type AccessKeyRow } from './store.ts';

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
  /** Keys by credential hash, per account, read together (see above). */
  private readonly reads: ReadsAfterRequest<number, string, Map<string, AccessKeyRow>>;
  private epoch = 0;

  constructor(private readonly db: Database) {
    this.reads = new ReadsAfterRequest((accountId, hashes) => keysByCredential(db, accountId, [...new Set(hashes)]));
  }

  async start(): Promise<void> {
    await this.db.listen(ACCESS_KEYS_CHANNEL, (payload) => {
      const accountId = Number(payload);
      // An empty payload: the LISTEN connection was lost and is back; changes may have gone unheard.
      if (payload === '' || !Number.isSafeInteger(accountId)) this.forgetAll();
      else this.generations.set(accountId, (this.generations.get(accountId) ?? 0) + 1);
    });
  }

  /** The live key presenting the credential whose lookup hash is `hash`, or null (see keysByCredential). */
  find(accountId: number, hash: string): Promise<AccessKeyRow | null> {
    // Read before the query: a change committed while it runs leaves what it returns stale at once.
    const generation = this.generations.get(accountId) ?? 0;
    const epoch = this.epoch;
    const name = `${accountId}:${hash}`;
    const remembered = this.rows.get(name);
    if (remembered && remembered.generation === generation && remembered.epoch === epoch) return remembered.row;
    const row = this.reads.get(accountId, hash).then((found) => found.get(hash) ?? null);
    const entry = { row, generation, epoch };
    this.rows.set(name, entry);
    // A failed read is not remembered: the next swipe asks the database again.
    row.catch(() => this.rows.get(name) === entry && this.rows.delete(name));
    return row;
  }

  /** What the account's keys are known as now: it changes with every change to what they open (and when all is forgotten). */
  version(accountId: number): string {
    return `${this.epoch}:${this.generations.get(accountId) ?? 0}`;
  }

  forgetAll(): void {
    this.epoch++;
    this.rows.clear();
  }
}
