// The boards the listener takes pushes from: serial number → the address each was set up with, held in memory so
// that a packet of a serial no board has, or from another address than its board's, is dropped before any
// database work or queuing (README "Real controllers": the listener is open to unauthenticated UDP). Read at start
// and again on every NOTIFY of CONTROLLERS_CHANNEL (a board set up, changed or deleted on any instance), when the
// LISTEN connection is back after a loss, and by a job now and then, a net for a notification missed any other way.
// A push dropped while this lags is not lost: the board's events are read by index at its next push or poll.
import type { FastifyBaseLogger } from 'fastify';
import { CONTROLLERS_CHANNEL } from '../../platform/channels.ts';
import type { Database } from '../../platform/db/index.ts';
import { boardAddresses } from './store.ts';

export class KnownBoards {
  private addresses = new Map<number, string>();
  private loading: Promise<void> | null = null;
  /** A change was notified since the read in progress began: it may be missing from it, so read again. */
  private stale = false;

  constructor(private readonly deps: { db: Database; log: FastifyBaseLogger }) {}

  async start(): Promise<void> {
    await this.deps.db.listen(CONTROLLERS_CHANNEL, () => void this.reload().catch((error: unknown) => this.deps.log.warn({ err: error }, 'controllers not read again; the listener keeps the boards it knew')));
    await this.reload();
  }

  /** Whether a packet of `serial` from `address` comes from that board's address. */
  accepts(serial: number, address: string): boolean {
    return this.addresses.get(serial) === address;
  }

  /** Reads the boards again; calls during a read share it, and it reads once more after (what they announce may have committed after it began). */
  reload(): Promise<void> {
    this.stale = true;
    this.loading ??= (async () => {
      try {
        while (this.stale) {
          this.stale = false;
          this.addresses = new Map((await boardAddresses(this.deps.db)).map((b) => [b.serial, b.host]));
        }
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }
}
