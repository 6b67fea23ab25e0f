// Keeping each UHPPOTE board in step, by polling it (one instance at a time per board, through a lease): its
// status is its presence (lock.online / lock.offline for its doors), its latest event index tells what the
// service missed, its clock is set to the wall time of its location, and it is told where to send its events.
import type { FastifyBaseLogger } from 'fastify';
import { DateTime } from 'luxon';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { ControllerEvents } from './events.ts';
import { claimControllersToPoll, clearMissedWrite, recordContactState, releasePoll, type ControllerRow } from './store.ts';
import { addressOf } from './sync.ts';
import { ControllerUnreachable, type UhppoteClient } from './uhppote/client.ts';

/** A board's clock further off than this is set again. */
export const CLOCK_DRIFT_SECONDS = 2;
/** The listener address on a board is checked again this often (someone may have changed it by hand). */
const LISTENER_CHECK_MS = 10 * 60_000;
/** Boards one poll run takes. */
const BOARDS_PER_RUN = 50;

export interface Presence {
  heard(gatewayId: number): void;
  connected(gatewayId: number): void;
  lost(gatewayId: number): void;
}

export class ControllerMonitor {
  constructor(
    private readonly deps: {
      db: Database;
      clock: Clock;
      client: UhppoteClient;
      events: ControllerEvents;
      presence: Presence;
      log: FastifyBaseLogger;
      /** Where boards send their events; null: they are read by polling only. */
      eventAddress: () => { host: string; port: number } | null;
      /** A board answered after it had not: what waits for it is written now. */
      back: (board: ControllerRow) => Promise<unknown>;
      pollSeconds: number;
    },
  ) {}

  /** Polls the boards due; returns how many answered. */
  async pollDue(): Promise<number> {
    const now = this.deps.clock.now();
    const leaseUntil = new Date(now.getTime() + this.deps.pollSeconds * 1000);
    const boards = await claimControllersToPoll(this.deps.db, now, leaseUntil, BOARDS_PER_RUN);
    const answered = await Promise.all(boards.map((board) => this.poll(board)));
    return answered.filter(Boolean).length;
  }

  /** One board: status (presence), events missed, clock, listener. The lease runs out by itself. */
  async poll(board: ControllerRow): Promise<boolean> {
    const { client, presence, clock, db } = this.deps;
    const address = addressOf(board);
    try {
      const status = await client.getStatus(address);
      if (board.online) presence.heard(board.gateway_id);
      else presence.connected(board.gateway_id);
      // What waits for the board is written now: it was away, or it left a write unanswered while it answered polls
      // (lost packets): then a revoked card kept opening its doors until the work queue's next rung, minutes later.
      if (!board.online || board.missed_write_at) {
        await this.deps.back(board);
        if (board.missed_write_at) await clearMissedWrite(db, board.gateway_id, board.missed_write_at);
      }
      const contact: { clockSetAt?: Date; listenerSetAt?: Date; error: string | null } = { error: null };
      const wall = DateTime.fromJSDate(clock.now(), { zone: board.time_zone });
      const boardTime = DateTime.fromFormat(status.systemTime, 'yyyy-MM-dd HH:mm:ss', { zone: board.time_zone });
      if (!board.clock_set_at || !boardTime.isValid || Math.abs(boardTime.diff(wall, 'seconds').seconds) > CLOCK_DRIFT_SECONDS) {
        await client.setTime(address, wall.toFormat('yyyy-MM-dd HH:mm:ss'));
        contact.clockSetAt = clock.now();
      }
      const target = this.deps.eventAddress();
      if (target && (!board.listener_set_at || clock.now().getTime() - board.listener_set_at.getTime() > LISTENER_CHECK_MS)) {
        const current = await client.getListener(address);
        if (current.address !== target.host || current.port !== target.port) await client.setListener(address, target.host, target.port);
        contact.listenerSetAt = clock.now();
      }
      // The events first: a first contact sets where the log starts, and whoever waits for the contact to be
      // recorded (clock_set_at) then knows that a board's later events will be read. Not while the board has not
      // confirmed that start: the clock is set again at the next poll.
      const logStarted = await this.deps.events.caughtUp(board, status.event).catch((error: unknown) => {
        // Its status answered, so the board is there: a get-event it left unanswered is asked again at the next
        // poll (the events read before it are stored), not taken for the board gone. A first contact stays unconfirmed.
        if (!(error instanceof ControllerUnreachable)) throw error;
        contact.error = error.message;
        return board.last_event_index !== null;
      });
      if (!logStarted) delete contact.clockSetAt;
      await recordContactState(db, board.gateway_id, contact);
      return true;
    } catch (error) {
      if (!(error instanceof ControllerUnreachable)) {
        this.deps.log.warn({ err: error, gatewayId: board.gateway_id }, 'controller poll failed');
        return false;
      }
      if (board.online) presence.lost(board.gateway_id);
      await recordContactState(db, board.gateway_id, { error: error.message });
      // Tried again at the next run rather than after the whole lease.
      await releasePoll(db, board.gateway_id);
      return false;
    }
  }
}
