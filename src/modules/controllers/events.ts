// A board's events into the access log: pushed to the service's listener as they happen, and fetched by index
// after a gap (a restart, a lost packet, a board that was away). Each is stored once, keyed on (controller,
// event index) like a gateway's (gateway, event id), so a push and a fetch of the same event, or two instances
// reading it, make one entry. Card swipes become access.granted / access.denied with the key whose card it is on
// that board; a door closing is door.closed, a door held open too long door.left_open.
import type { FastifyBaseLogger } from 'fastify';
import { DateTime } from 'luxon';
import type { AccessLogWriter, GatewayEvent } from '../events/index.ts';
import { advanceEventIndex, keyOfCard, type ControllerRow } from './store.ts';
import type { Database } from '../../platform/db/index.ts';
import type { ControllerEvent } from './uhppote/codec.ts';
import type { UhppoteClient } from './uhppote/client.ts';
import { addressOf } from './sync.ts';

/** Events fetched after a gap per poll, at most (a board keeps about 100,000; the rest come at the next polls). */
export const MISSED_EVENTS_PER_POLL = 500;

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
    const items: Array<{ gatewayId: number; event: GatewayEvent }> = [];
    let last = 0;
    for (const event of events.sort((a, b) => a.index - b.index)) {
      last = Math.max(last, event.index);
      const keyId = event.type === SWIPE && event.card !== 0 ? await keyOfCard(this.deps.db, controller.gateway_id, [this.deps.cardDigest(event.card)]) : null;
      const mapped = toGatewayEvent(controller, event, keyId);
      if (mapped) items.push({ gatewayId: controller.gateway_id, event: mapped });
    }
    const stored = items.length > 0 ? (await this.deps.accessLog.ingestAcross(items)).filter((e) => e !== null).length : 0;
    if (last > 0) await advanceEventIndex(this.deps.db, controller.gateway_id, last);
    return stored;
  }

  /** A pushed event (or a status's latest): stored with every event the service missed before it. */
  async caughtUp(controller: ControllerRow, latest: ControllerEvent | null): Promise<number> {
    const read = controller.last_event_index;
    if (read === null) {
      // First contact: the log starts here; what the board recorded before it was set up is not imported.
      await advanceEventIndex(this.deps.db, controller.gateway_id, latest?.index ?? 0);
      return 0;
    }
    if (!latest || latest.index <= read) return 0;
    // At most MISSED_EVENTS_PER_POLL at a time, oldest first: the rest at the next push or poll.
    const upTo = Math.min(latest.index, read + MISSED_EVENTS_PER_POLL);
    const missed: ControllerEvent[] = [];
    for (let index = read + 1; index <= upTo; index++) {
      const event = index === latest.index ? latest : await this.deps.client.getEvent(addressOf(controller), index);
      if (event && event.index === index) missed.push(event);
    }
    if (missed.length === 0) {
      await advanceEventIndex(this.deps.db, controller.gateway_id, upTo); // overwritten on the board: gone
      return 0;
    }
    return this.store(controller, missed);
  }
}
