// What boards push to the listener, taken as wake-ups (README "Real controllers"): a push is unauthenticated UDP,
// so of it only the event index it claims is kept (per board, the highest since the last read), and the events are
// read from the board by index (ControllerEvents.pushedUpTo). A burst of pushes becomes one read; one read of a
// board runs at a time, behind its earlier reads.
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import type { ControllerEvents } from './events.ts';
import type { Presence } from './monitor.ts';
import { findControllerBySerial } from './store.ts';
import type { ControllerSync } from './sync.ts';

export class PushedWakeUps {
  /** Per board serial, and per address the pushes came from, the highest event index claimed and not yet read. */
  private readonly claims = new Map<number, Map<string, number>>();

  constructor(
    private readonly deps: {
      db: Database;
      events: ControllerEvents;
      sync: ControllerSync;
      presence: Presence;
      log: FastifyBaseLogger;
    },
  ) {}

  /** A push of `serial` from `from` claiming the board's latest event is at `index`. */
  pushed(serial: number, index: number, from: string): void {
    const waiting = this.claims.get(serial);
    if (waiting) {
      waiting.set(from, Math.max(waiting.get(from) ?? 0, index));
      return; // a read of this board is scheduled already
    }
    this.claims.set(serial, new Map([[from, index]]));
    // After the event loop's I/O (every packet already read joins the claim) and behind the board's earlier reads.
    setImmediate(() => this.read(serial));
  }

  private read(serial: number): void {
    void this.deps.sync
      .serial(-serial, async () => {
        const claims = this.claims.get(serial);
        this.claims.delete(serial);
        const controller = await findControllerBySerial(this.deps.db, serial);
        // Only a push from the board's own address wakes a read (no log line per stray packet).
        const claimed = controller ? claims?.get(controller.host) : undefined;
        if (!controller || claimed === undefined) return;
        const read = await this.deps.events.pushedUpTo(controller, claimed);
        if (read.answered) this.deps.presence.heard(controller.gateway_id);
        if (read.more) this.pushed(serial, claimed, controller.host); // the rest of a long gap, after what waits
      })
      .catch((error: unknown) => this.deps.log.warn({ err: error, serial }, 'controller events not stored; read again at the next poll'));
  }
}
