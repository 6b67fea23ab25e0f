// A board's events into the access log, read from the board by index (get-event): when it pushes to the service's
// listener (a push is only a wake-up, its content unauthenticated UDP) and at each poll, which also catches a gap
// (a restart, a lost packet, a board that was away). Each is stored once, keyed on (controller,
// event index) like a gateway's (gateway, event id), so a push and a fetch of the same event, or two instances
// reading it, make one entry. Card swipes become access.granted / access.denied with the key whose card it is on
// that board; a door closing is door.closed, a door held open too long door.left_open.
import type { FastifyBaseLogger } from 'fastify';
import { DateTime } from 'luxon';
import type { AccessLogWriter, GatewayEvent } from '../events/index.ts';
import { advanceEventIndex, keysOfCards, type ControllerRow } from './store.ts';
import type { Database } from '../../platform/db/index.ts';
import type { ControllerEvent } from './uhppote/codec.ts';
import type { UhppoteClient } from './uhppote/client.ts';
import { addressOf } from './sync.ts';

/** Events fetched after a gap per poll, at most (a board keeps about 100,000; the rest come at the next polls). */
export const MISSED_EVENTS_PER_POLL = 500;
/**
 * get-event requests in flight at once to one board while reading a run of events: a round trip each would cap a
 * burst at one event per round trip; a small window keeps the board (which drops requests under load) unflooded.
 */
export const EVENT_READ_WINDOW = 8;

// UHPPOTE event types and reasons (uhppoted's codec): the ones the access log has a type for.
const SWIPE = 1;
const DOOR = 2;
const ALARM = 3;
const REASON_NOT_IN_TIME = new Set([13, 15]); // not within the card's time profile / an invalid one
const REASON_DOOR_CLOSED = 24;
const REASON_DOOR_OPEN_TOO_LONG = 37;

/** What the access log stores of a board's event, or null for those it has no type for (README). */
export function toGatewayEvent(controller: ControllerRow, event: ControllerEvent, keyId: number | null): GatewayEvent | null {
  const lock = controller.door_locks.find((d) => d.door === event.door);
  if (!lock) return null;
  const at = DateTime.fromFormat(event.timestamp, 'yyyy-MM-dd HH:mm:ss', { zone: controller.time_zone });
  if (!at.isValid) return null;
  const base = { id: String(event.index), lock_id: lock.lock_id, occurred_at: at.toUTC().toISO() as string, key_id: keyId };
  if (event.type === SWIPE && event.card !== 0) {
    if (event.granted) return { ...base, type: 'access.granted', reason: null };
    return { ...base, type: 'access.denied', reason: REASON_NOT_IN_TIME.has(event.reason) ? 'outside_time_window' : 'no_access' };
  }
  if (event.type === DOOR && event.reason === REASON_DOOR_CLOSED) return { ...base, key_id: null, type: 'door.closed', reason: null };
  if (event.type === ALARM && event.reason === REASON_DOOR_OPEN_TOO_LONG) return { ...base, key_id: null, type: 'door.left_open', reason: null };
  return null;
}

export class ControllerEvents {
  constructor(
    private readonly deps: {
      db: Database;
      client: UhppoteClient;
      accessLog: AccessLogWriter;
      cardDigest: (card: number) => string;
      log: FastifyBaseLogger;
    },
  ) {}

  /** Stores events of one board in index order and moves its read index on past them. */
  async store(controller: ControllerRow, events: ControllerEvent[]): Promise<number> {
    const sorted = [...events].sort((a, b) => a.index - b.index);
    const swipes = sorted.filter((e) => e.type === SWIPE && e.card !== 0);
    const digests = new Map(swipes.map((e) => [e.card, this.deps.cardDigest(e.card)]));
    const keys = await keysOfCards(this.deps.db, controller.gateway_id, [...new Set(digests.values())]);
    const items: Array<{ gatewayId: number; event: GatewayEvent }> = [];
    for (const event of sorted) {
      const keyId = event.type === SWIPE && event.card !== 0 ? (keys.get(digests.get(event.card) as string) ?? null) : null;
      const mapped = toGatewayEvent(controller, event, keyId);
      if (mapped) items.push({ gatewayId: controller.gateway_id, event: mapped });
    }
    const stored = items.length > 0 ? (await this.deps.accessLog.ingestAcross(items)).filter((e) => e !== null).length : 0;
    const last = sorted.at(-1)?.index ?? 0;
    if (last > 0) await advanceEventIndex(this.deps.db, controller.gateway_id, last);
    return stored;
  }

  /**
   * A poll's get-status named the board's latest event. A status is UDP as a push is, so it is only a wake-up too:
   * every event before it the service has not read is read by index (get-event) and stored (at most
   * MISSED_EVENTS_PER_POLL, the rest at the next push or poll). false: a first contact the board did not confirm.
   */
  async caughtUp(controller: ControllerRow, latest: ControllerEvent | null): Promise<boolean> {
    const claimed = latest?.index ?? 0;
    if (controller.last_event_index === null) {
      // First contact: the log starts here; what the board recorded before it was set up is not imported. The
      // start is the index as get-event reads it back: a forged status could otherwise start it past every
      // event the board will record.
      if (claimed > 0 && (await this.deps.client.getEvent(addressOf(controller), claimed))?.index !== claimed) return false;
      await advanceEventIndex(this.deps.db, controller.gateway_id, claimed);
      return true;
    }
    await this.readUpTo(controller, claimed);
    return true;
  }

  /**
   * A push said the board has events up to `claimed`. UDP from the board's address proves nothing, so the push is
   * only a wake-up: what is stored is read from the board by index (get-event, each on a port of its own), and a
   * claimed index the board does not have ends the read there. `more`: the read stopped at the cap, short of the claim.
   */
  async pushedUpTo(controller: ControllerRow, claimed: number): Promise<{ answered: boolean; more: boolean }> {
    // The first contact is a poll's (the board's own answer): a push could otherwise set where the log starts.
    if (controller.last_event_index === null) return { answered: false, more: false };
    const read = await this.readUpTo(controller, claimed);
    return { answered: read.answered, more: read.upTo < claimed && read.complete };
  }

  /**
   * Reads the board's events after the read index up to `upTo` (at most MISSED_EVENTS_PER_POLL) by index, stores
   * them and moves the read index on over the indexes read only. `complete`: every index asked was answered with an
   * event; a board that stopped answering is thrown after what came is stored.
   */
  private async readUpTo(controller: ControllerRow, upTo: number): Promise<{ stored: number; upTo: number; answered: boolean; complete: boolean }> {
    const read = controller.last_event_index ?? 0;
    if (upTo <= read) return { stored: 0, upTo: read, answered: false, complete: true };
    const last = Math.min(upTo, read + MISSED_EVENTS_PER_POLL);
    const run = await this.deps.client.getEvents(addressOf(controller), read + 1, last, EVENT_READ_WINDOW);
    const events = run.events;
    // Read up to the last index answered; an event overwritten on the board (another index there) is gone.
    const readTo = read + events.length;
    const kept = events.filter((event, i) => event.index === read + 1 + i);
    const stored = kept.length > 0 ? await this.store(controller, kept) : 0;
    if (readTo > read && (kept.at(-1)?.index ?? 0) < readTo) await advanceEventIndex(this.deps.db, controller.gateway_id, readTo);
    if (run.stopped instanceof Error) throw run.stopped;
    return { stored, upTo: readTo, answered: events.length > 0 || run.stopped === 'no-event', complete: run.stopped === null };
  }
}
