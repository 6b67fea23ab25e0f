// A board's events into the access log: pushed to the service's listener as they happen, and fetched by index
// after a gap (a restart, a lost packet, a board that was away). Each is stored once, keyed on (controller,
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
  /** Pushed events not yet stored, per board serial and index, with the address each came from. */
  private readonly received = new Map<number, Map<number, { event: ControllerEvent; from: string }>>();

  constructor(
    private readonly deps: {
      db: Database;
      client: UhppoteClient;
      accessLog: AccessLogWriter;
      cardDigest: (card: number) => string;
      log: FastifyBaseLogger;
    },
  ) {}

  /** Notes a pushed event of a board; returns true when it is the first waiting (the caller schedules a drain). */
  push(serial: number, event: ControllerEvent, from: string): boolean {
    const waiting = this.received.get(serial);
    if (waiting) {
      waiting.set(event.index, { event, from });
      return false;
    }
    this.received.set(serial, new Map([[event.index, { event, from }]]));
    return true;
  }

  /** Takes what was pushed by a board so far, from its own address only (null: none is). */
  takePushed(serial: number, boardAddress: string | null): Map<number, ControllerEvent> {
    const waiting = this.received.get(serial);
    this.received.delete(serial);
    const taken = new Map<number, ControllerEvent>();
    for (const [index, { event, from }] of waiting ?? []) if (from === boardAddress) taken.set(index, event);
    return taken;
  }

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
   * Up to the board's latest event (pushed, or a status's): stored with every event before it the service has
   * not read, taken from `known` (pushed meanwhile) or fetched by index, at most MISSED_EVENTS_PER_POLL fetches
   * at a time (the rest at the next push or poll).
   */
  async caughtUp(controller: ControllerRow, latest: ControllerEvent | null, known: Map<number, ControllerEvent> = new Map()): Promise<number> {
    const read = controller.last_event_index;
    if (read === null) {
      // First contact: the log starts here; what the board recorded before it was set up is not imported.
      await advanceEventIndex(this.deps.db, controller.gateway_id, latest?.index ?? 0);
      return 0;
    }
    if (!latest || latest.index <= read) return 0;
    const events: ControllerEvent[] = [];
    let fetches = 0;
    let upTo = read;
    for (let index = read + 1; index <= latest.index; index++) {
      let event = index === latest.index ? latest : known.get(index);
      if (!event) {
        if (fetches === MISSED_EVENTS_PER_POLL) break;
        fetches++;
        const fetched = await this.deps.client.getEvent(addressOf(controller), index);
        // The board has no such event: the index claimed was not the board's (a forged or garbled push). Stop
        // here, so nothing the board did record is ever skipped.
        if (!fetched) break;
        event = fetched;
      }
      upTo = index;
      if (event.index === index) events.push(event);
    }
    if (events.length === 0) {
      await advanceEventIndex(this.deps.db, controller.gateway_id, upTo); // overwritten on the board: gone
      return 0;
    }
    return this.store(controller, events);
  }
}
