// Whole-account rebuilds of the gateways' lists (AccessLists.refresh with every key): asked for in the
// change's transaction, made here after it commits, PART_KEYS keys per transaction. The instance that hears
// the request (each one, at its commit or over LISTEN) starts at once; one part of an account is built at a
// time (an advisory lock), so instances never build the same part twice, and the job finishes what a stopped
// instance left. A change asking again meanwhile does not start it over: it goes round again (rebuild-progress.ts).
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import { ACCESS_REBUILDS_CHANNEL } from '../../platform/channels.ts';
import type { AccessLists } from './lists.ts';
import { waitingRebuilds } from './store.ts';

/** Keys per transaction: about a second of work at most on a small machine, so a change never waits long behind one. */
const PART_KEYS = 5000;
const RETRY_SECONDS = 5;

export class ListRebuilds {
  /** Accounts being built by this instance, and whether a request came in meanwhile. */
  private readonly building = new Map<number, { again: boolean; done: Promise<void> }>();

  constructor(
    private readonly db: Database,
    private readonly lists: AccessLists,
    private readonly log: FastifyBaseLogger,
  ) {}

  async start(): Promise<void> {
    await this.db.listen(ACCESS_REBUILDS_CHANNEL, (payload) => {
      const accountId = Number(payload);
      if (payload !== '' && Number.isSafeInteger(accountId)) void this.build(accountId);
    });
  }

  /** Finishes, every few seconds, the rebuilds nobody is making (asked for while this instance was away, or left by one that stopped). */
  job(): Job {
    return {
      name: 'access-lists-rebuild',
      everySeconds: RETRY_SECONDS,
      run: async () => {
        let parts = 0;
        for (const accountId of await waitingRebuilds(this.db)) parts += await this.build(accountId);
        return parts;
      },
      settled: async () => {
        await Promise.all([...this.building.values()].map((b) => b.done));
      },
    };
  }

  /** Builds the account's parts until done or another instance holds the next; returns how many it built. */
  private build(accountId: number): Promise<number> {
    const running = this.building.get(accountId);
    if (running) {
      running.again = true; // heard again while building: one more pass once this one ends
      return running.done.then(() => 0);
    }
    const state = { again: false, done: Promise.resolve() };
    let parts = 0;
    const work = async () => {
      do {
        state.again = false;
        for (;;) {
          const outcome = await this.db.transaction((tx) => this.lists.buildPart(tx, accountId, PART_KEYS));
          if (outcome === 'busy') break;
          parts++;
          if (outcome === 'done') break;
        }
      } while (state.again);
    };
    state.done = work()
      .catch((error: unknown) => this.log.error({ err: error, accountId }, 'access lists not rebuilt yet; the job tries again'))
      .finally(() => this.building.delete(accountId));
    this.building.set(accountId, state);
    return state.done.then(() => parts);
  }
}
