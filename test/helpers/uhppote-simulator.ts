// A simulated UHPPOTE controller on 127.0.0.1 for tests: the same 64-byte UDP packets (through our codec's
// decodeRequest / encodeResponse), deciding swipes the way uhppoted's reference simulator does
// (github.com/uhppoted/uhppote-simulator, simulator/UT0311L04/actions.go Swipe and checkTimeProfile):
//   unknown card                         → denied, reason 18 (access denied)
//   card outside its from/to dates       → denied, reason 6 (no access rights) [the reference simulator does
//                                           not check card dates; 6 is our reading of the SDK's "no privilege"]
//   door permission 0                    → denied, reason 6 (no access rights)
//   permission 2..254, outside profile   → denied, reason 15 (invalid timezone), after trying the linked chain;
//                                           a profile that does not exist allows (as the boards do, per uhppoted)
//   otherwise                            → granted, reason 1 (swipe)
// Swipes are event type 1 (the reference simulator records a granted swipe as type 2; uhppote-core and
// controllers' own get-status documentation give 1 for swipe records). Remote open-door is type 2, reason 44;
// the push button type 2, reason 20; a door opening/closing type 2, reasons 23/24. get-event past the last
// index answers an all-zero event (index 0), as EventList.Get of the reference simulator does.
import dgram from 'node:dgram';
import net from 'node:net';
import {
  decodeRequest,
  encodeResponse,
  EVENT_TYPE,
  REASON,
  type CardRecord,
  type ControllerEvent,
  type ControllerStatus,
  type Request,
  type Response,
  type TimeProfile,
} from '../../src/modules/controllers/uhppote/codec.ts';

export interface SimulatedController {
  serial: number;
  address: { host: string; port: number };
  cards: Map<number, CardRecord>;
  profiles: Map<number, TimeProfile>;
  events: ControllerEvent[] /* by index, 1-based indices */;
  listener: { address: string; port: number } | null;
  eventIndex: number;
  requests: Map<string, number>;
  time(): string;
  setTime(datetime: string): void;
  swipe(card: number, door: number, direction?: number): ControllerEvent;
  pressButton(door: number): ControllerEvent;
  openDoorFor(door: number, seconds?: number): void;
  setReachable(reachable: boolean): void;
  dropPushes(drop: boolean): void;
  refuseWrites(refuse: boolean): void;
  /** get-status answers with this event as the latest (a forged status); undefined: the board's own again. */
  forgeStatusEvent(event: ControllerEvent | null | undefined): void;
  /** get-cards answers this count instead of the board's (a count gone stale while the list is read); undefined: its own. */
  forgeCardCount(count: number | undefined): void;
  /** delete-card answers "no" and the card stays (a board's fault, or a forged answer). */
  refuseDeletes(refuse: boolean): void;
  /** Requests of these functions are counted but get no answer (lost on the way); every other one is answered. */
  dropAnswersTo(fns: Array<Request['fn']>): void;
  /** Answers over UDP `ms` late (a slow board or network): a client that gives up sooner sends again and gets both answers. */
  delayAnswers(ms: number): void;
  /** The transports requests came over (udp, tcp). */
  transports: Set<'udp' | 'tcp'>;
  close(): Promise<void>;
}

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

function toMillis(datetime: string): number {
  return Date.parse(`${datetime.replace(' ', 'T')}Z`);
}

function fromMillis(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

function localNow(): string {
  const d = new Date();
  return fromMillis(d.getTime() - d.getTimezoneOffset() * 60000);
}

export async function startSimulatedController(options: {
  serial: number;
  doors?: number;
  port?: number;
  now?: () => string;
}, attempt = 1): Promise<SimulatedController> {
  const doors = options.doors ?? 4;
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(options.port ?? 0, '127.0.0.1', () => resolve()));
  socket.on('error', () => undefined);

  let offsetMs = 0; // own clock: controller time = real time + offset
  let reachable = true;
  let pushesDropped = false;
  let writesRefused = false;
  let deletesRefused = false;
  let unanswered = new Set<Request['fn']>();
  let forgedStatusEvent: ControllerEvent | null | undefined;
  let forgedCardCount: number | undefined;
  let sequence = 0;
  const doorsOpen: [boolean, boolean, boolean, boolean] = [false, false, false, false];
  const timers = new Set<NodeJS.Timeout>();
  // The card list by index, as the boards and uhppoted's reference simulator (entities.CardList) keep it: a deleted
  // card leaves its slot marked deleted (read back as card 0xffffffff), a new card takes the first such hole or goes
  // at the end, and get-cards counts live cards only; so after a deletion the last cards sit past that count.
  // Follows sim.cards, which tests change directly too (a card put on the board by hand).
  const slots: Array<number | 'deleted'> = [];
  const slotsInStep = (): void => {
    slots.forEach((slot, i) => {
      if (slot !== 'deleted' && !sim.cards.has(slot)) slots[i] = 'deleted';
    });
    for (const card of sim.cards.keys()) {
      if (slots.includes(card)) continue;
      const hole = slots.indexOf('deleted');
      if (hole >= 0) slots[hole] = card;
      else slots.push(card);
    }
  };

  const time = (): string => (options.now ? options.now() : fromMillis(toMillis(localNow()) + offsetMs));

  const status = (): ControllerStatus => ({
    serial: options.serial,
    systemTime: time(),
    doorsOpen: [...doorsOpen],
    buttons: [false, false, false, false],
    relays: 0,
    inputs: 0,
    systemError: 0,
    specialInfo: 0,
    sequence,
    event: sim.events[sim.events.length - 1] ?? null,
  });

  const record = (event: Omit<ControllerEvent, 'index' | 'timestamp'>): ControllerEvent => {
    const full: ControllerEvent = { ...event, index: sim.events.length + 1, timestamp: time() };
    sim.events.push(full);
    sequence++;
    if (reachable && !pushesDropped && sim.listener) {
      const packet = encodeResponse(options.serial, { fn: 'get-status', serial: options.serial, status: status() });
      socket.send(packet, sim.listener.port, sim.listener.address, () => undefined);
    }
    return full;
  };

  const inProfile = (profile: TimeProfile, now: string): boolean => {
    const date = now.slice(0, 10);
    const hhmm = now.slice(11, 16);
    if (profile.from === '' || profile.from > date || profile.to === '' || profile.to < date) return false;
    const weekday = WEEKDAYS[new Date(`${date}T00:00:00Z`).getUTCDay()] ?? 'sun';
    if (!profile.weekdays[weekday]) return false;
    return profile.segments.some((s) => s.start <= hhmm && hhmm <= s.end);
  };

  /** The profile and its linked chain (each once): any of them in time allows; a missing profile allows. */
  const profileAllows = (id: number, now: string): boolean => {
    const seen = new Set<number>();
    let next = id;
    while (next >= 2 && next <= 254 && !seen.has(next)) {
      seen.add(next);
      const profile = sim.profiles.get(next);
      if (!profile) return true;
      if (inProfile(profile, now)) return true;
      next = profile.linkedTo;
    }
    return false;
  };

  const decide = (card: number, door: number): { granted: boolean; reason: number } => {
    const c = sim.cards.get(card);
    if (!c) return { granted: false, reason: REASON.ACCESS_DENIED };
    const now = time();
    const today = now.slice(0, 10);
    if (c.from === '' || c.from > today || c.to === '' || c.to < today) return { granted: false, reason: REASON.NO_ACCESS_RIGHTS };
    const permission = c.doors[door - 1] ?? 0;
    if (permission < 1 || permission > 254) return { granted: false, reason: REASON.NO_ACCESS_RIGHTS };
    if (permission >= 2 && !profileAllows(permission, now)) return { granted: false, reason: REASON.INVALID_TIMEZONE };
    return { granted: true, reason: REASON.SWIPE };
  };

  const checkDoor = (door: number): void => {
    if (!Number.isInteger(door) || door < 1 || door > doors) throw new Error(`door ${door} is not a door of this ${doors}-door controller`);
  };

  const answer = (request: Request): Response | null => {
    const serial = options.serial;
    switch (request.fn) {
      case 'get-status':
        return { fn: request.fn, serial, status: forgedStatusEvent === undefined ? status() : { ...status(), event: forgedStatusEvent } };
      case 'get-time':
        return { fn: request.fn, serial, datetime: time() };
      case 'set-time':
        sim.setTime(request.datetime);
        return { fn: request.fn, serial, datetime: time() };
      case 'get-listener':
        return { fn: request.fn, serial, address: sim.listener?.address ?? '0.0.0.0', port: sim.listener?.port ?? 0 };
      case 'set-listener':
        sim.listener = request.address === '0.0.0.0' ? null : { address: request.address, port: request.port };
        return { fn: request.fn, serial, ok: true };
      case 'open-door': {
        if (request.door < 1 || request.door > doors) return { fn: request.fn, serial, ok: false };
        record({ type: EVENT_TYPE.DOOR, granted: true, door: request.door, direction: 1, card: 0, reason: REASON.REMOTE_OPEN_DOOR });
        return { fn: request.fn, serial, ok: true };
      }
      case 'get-cards':
        return { fn: request.fn, serial, count: forgedCardCount ?? sim.cards.size };
      case 'get-card-by-id':
        return { fn: request.fn, serial, record: sim.cards.get(request.card) ?? null };
      case 'get-card-by-index': {
        slotsInStep();
        const slot = request.index >= 1 ? slots[request.index - 1] : undefined;
        if (slot === 'deleted') return { fn: request.fn, serial, record: null, deleted: true };
        return { fn: request.fn, serial, record: (slot === undefined ? undefined : sim.cards.get(slot)) ?? null, deleted: false };
      }
      case 'put-card':
        if (writesRefused) return { fn: request.fn, serial, ok: false };
        slotsInStep();
        sim.cards.set(request.record.card, request.record);
        return { fn: request.fn, serial, ok: true };
      case 'delete-card':
        slotsInStep();
        return { fn: request.fn, serial, ok: !deletesRefused && sim.cards.delete(request.card) };
      case 'delete-all-cards':
        sim.cards.clear();
        slots.length = 0;
        return { fn: request.fn, serial, ok: true };
      case 'get-time-profile':
        return { fn: request.fn, serial, profile: sim.profiles.get(request.profileId) ?? null };
      case 'set-time-profile':
        sim.profiles.set(request.profile.id, request.profile);
        return { fn: request.fn, serial, ok: true };
      case 'clear-time-profiles':
        sim.profiles.clear();
        return { fn: request.fn, serial, ok: true };
      case 'get-event': {
        const n = sim.events.length;
        const index = request.index === 0xffffffff ? n : request.index === 0 ? 1 : request.index;
        return { fn: request.fn, serial, event: sim.events[index - 1] ?? null };
      }
      case 'get-event-index':
        return { fn: request.fn, serial, index: sim.eventIndex };
      case 'set-event-index': {
        const ok = request.index <= sim.events.length;
        if (ok) sim.eventIndex = request.index;
        return { fn: request.fn, serial, ok };
      }
      case 'record-special-events':
        return { fn: request.fn, serial, ok: true };
      case 'get-device':
        return {
          fn: request.fn,
          serial,
          device: { address: '127.0.0.1', netmask: '255.0.0.0', gateway: '0.0.0.0', mac: '00:66:19:39:55:2d', version: '0892', date: '2018-11-05' },
        };
    }
  };

  /** One request packet, whichever transport brought it: the answer's bytes, or null for none. */
  const handle = (message: Buffer): Buffer | null => {
    try {
      if (!reachable) return null;
      const { serial, request } = decodeRequest(message);
      if (serial !== options.serial && !(serial === 0 && request.fn === 'get-device')) return null;
      sim.requests.set(request.fn, (sim.requests.get(request.fn) ?? 0) + 1);
      if (transportsUsed) transportsUsed.add(currentTransport);
      if (unanswered.has(request.fn)) return null;
      const response = answer(request);
      return response ? encodeResponse(options.serial, response) : null;
    } catch {
      return null; // a packet the board does not understand gets no answer
    }
  };
  let currentTransport: 'udp' | 'tcp' = 'udp';
  const transportsUsed = new Set<'udp' | 'tcp'>();
  let answerDelayMs = 0;
  socket.on('message', (message, from) => {
    currentTransport = 'udp';
    const reply = handle(message);
    if (!reply) return;
    const send = () => socket.send(reply, from.port, from.address, () => undefined);
    if (answerDelayMs > 0) {
      // Cleared by close(): a board closed meanwhile sends nothing (send on a closed socket throws).
      const timer = setTimeout(() => {
        timers.delete(timer);
        send();
      }, answerDelayMs);
      timers.add(timer);
    } else send();
  });
  // Newer firmware also takes the same 64-byte frames over TCP, on the same port number.
  const tcp = net.createServer((connection) => {
    let pending = Buffer.alloc(0);
    connection.on('error', () => undefined);
    connection.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 64) {
        const frame = pending.subarray(0, 64);
        pending = pending.subarray(64);
        currentTransport = 'tcp';
        const reply = handle(frame);
        if (reply) connection.write(reply);
      }
    });
  });
  const listening = await new Promise<boolean>((resolve) => {
    tcp.once('error', () => resolve(false));
    tcp.listen(socket.address().port, '127.0.0.1', () => resolve(true));
  });
  if (!listening) {
    // The UDP port's number is taken for TCP by another process (files run side by side): let both go and
    // start again on other free ports, so a failed start never leaves a socket holding the test open.
    const port = socket.address().port;
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    tcp.close();
    if (options.port !== undefined || attempt >= 10) throw new Error(`TCP port ${port} is taken: the simulated controller ${options.serial} cannot listen beside its UDP port`);
    return startSimulatedController(options, attempt + 1);
  }

  const address = socket.address();
  const sim: SimulatedController = {
    serial: options.serial,
    address: { host: address.address, port: address.port },
    cards: new Map(),
    profiles: new Map(),
    events: [],
    listener: null,
    eventIndex: 0,
    requests: new Map(),
    time,
    setTime(datetime: string) {
      if (options.now) throw new Error('this simulated controller reads its time from options.now');
      const target = toMillis(datetime);
      if (Number.isNaN(target)) throw new Error(`not a 'YYYY-MM-DD HH:mm:ss' time: ${datetime}`);
      offsetMs = target - toMillis(localNow());
    },
    swipe(card: number, door: number, direction = 1): ControllerEvent {
      checkDoor(door);
      const { granted, reason } = decide(card, door);
      return record({ type: EVENT_TYPE.SWIPE, granted, door, direction, card, reason });
    },
    pressButton(door: number): ControllerEvent {
      checkDoor(door);
      return record({ type: EVENT_TYPE.DOOR, granted: true, door, direction: 1, card: 0, reason: REASON.PUSH_BUTTON_OK });
    },
    openDoorFor(door: number, seconds = 1): void {
      checkDoor(door);
      doorsOpen[door - 1] = true;
      record({ type: EVENT_TYPE.DOOR, granted: true, door, direction: 1, card: 0, reason: REASON.DOOR_OPENED });
      const timer = setTimeout(() => {
        timers.delete(timer);
        doorsOpen[door - 1] = false;
        record({ type: EVENT_TYPE.DOOR, granted: true, door, direction: 1, card: 0, reason: REASON.DOOR_CLOSED });
      }, seconds * 1000);
      timers.add(timer);
    },
    setReachable(value: boolean) {
      reachable = value;
    },
    dropPushes(drop: boolean) {
      pushesDropped = drop;
    },
    refuseWrites(refuse: boolean) {
      writesRefused = refuse;
    },
    forgeStatusEvent(event: ControllerEvent | null | undefined) {
      forgedStatusEvent = event;
    },
    forgeCardCount(count: number | undefined) {
      forgedCardCount = count;
    },
    refuseDeletes(refuse: boolean) {
      deletesRefused = refuse;
    },
    dropAnswersTo(fns: Array<Request['fn']>) {
      unanswered = new Set(fns);
    },
    delayAnswers(ms: number) {
      answerDelayMs = ms;
    },
    transports: transportsUsed,
    close(): Promise<void> {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise((resolve) => tcp.close(() => socket.close(() => resolve())));
    },
  };
  return sim;
}

/** A UDP port free right now on 127.0.0.1 (for a service's controller listener). */
export async function freeUdpPort(): Promise<number> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  const { port } = socket.address();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return port;
}
