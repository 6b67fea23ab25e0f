// What boards push to the listener, taken as wake-ups (README "Real controllers"): a push is unauthenticated UDP,
// so of it only the event index it claims is kept (per board, the highest since the last read), and the events are
// read from the board by index (ControllerEvents.pushedUpTo). A packet of no known board, or not from its board's
// address, is dropped here before any database work. Per board at most one read runs and one waits, whatever
// arrives: a burst of pushes (or a flood from the board's address) becomes one read.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import type { ControllerEvents } from './events.ts';
import type { KnownBoards } from './known-boards.ts';
import type { Presence } from './monitor.ts';
import { findControllerBySerial } from './store.ts';
import type { ControllerSync } from './sync.ts';

export class PushedWakeUps {
  /** Per board serial, the highest event index claimed by its pushes and not yet read (only known boards: bounded). */
  private readonly claims = new Map<number, number>();

  constructor(
    private readonly deps: {
      db: Database;
      events: ControllerEvents;
      boards: KnownBoards;
      sync: ControllerSync;
      presence: Presence;
      log: FastifyBaseLogger;
    },
  ) {}

  /** A push of `serial` from `from` claiming the board's latest event is at `index`. */
  pushed(serial: number, index: number, from: string): void {
    if (!this.deps.boards.accepts(serial, from)) return; // not one of ours (no log line per stray packet)
    const waiting = this.claims.get(serial);
    this.claims.set(serial, Math.max(waiting ?? 0, index));
    if (waiting !== undefined) return; // a read of this board is scheduled already
    // After the event loop's I/O (every packet already read joins the claim) and behind the board's earlier reads.
    setImmediate(() => this.read(serial));
  }

  private read(serial: number): void {
    void this.deps.sync
      .serial(-serial, async () => {
        const claimed = this.claims.get(serial);
        this.claims.delete(serial);
        if (claimed === undefined) return;
        const controller = await findControllerBySerial(this.deps.db, serial);
        if (!controller) return; // deleted meanwhile
        const read = await this.deps.events.pushedUpTo(controller, claimed);
        if (read.answered) this.deps.presence.heard(controller.gateway_id);
        if (read.more) this.pushed(serial, claimed, controller.host); // the rest of a long gap, after what waits
      })
      .catch((error: unknown) => this.deps.log.warn({ err: error, serial }, 'controller events not stored; read again at the next poll'));
  }
}
