// A client of UHPPOTE controllers: many requests in flight to many controllers at once, one at a time per
// controller (the boards answer in order and drop requests under load). Each UDP exchange has a socket of its
// own on an ephemeral port, and a reply is matched by (source address and port, serial, function code) on it; a
// request is sent again after timeoutMs, up to `attempts` times. Newer boards also speak TCP on port 60000: one
// connection per request, 64-byte frames. Replies that do not decode are dropped silently (they are never
// logged: a packet can carry card numbers).
import dgram from 'node:dgram';
import net from 'node:net';
import {
  decodeResponse,
  encodeRequest,
  FUNCTION_CODES,
  PACKET_SIZE,
  type CardRecord,
  type ControllerEvent,
  type ControllerStatus,
  type Request,
  type RequestFunction,
  type Response,
  type ResponseOf,
  type TimeProfile,
} from './codec.ts';

export interface ControllerAddress {
  serial: number;
  host: string;
  port: number;
  transport: 'udp' | 'tcp';
}

/** No valid answer after all attempts. */
export class ControllerUnreachable extends Error {
  override name = 'ControllerUnreachable';
  constructor(
    readonly controller: ControllerAddress,
    readonly fn: RequestFunction,
    attempts: number,
  ) {
    super(`UHPPOTE controller ${controller.serial} at ${controller.host}:${controller.port} (${controller.transport}) gave no valid answer to ${fn} after ${attempts} attempt(s)`);
  }
}

/** Events read by index in one run (getEvents), in index order; `stopped` says why the run ended before its last index. */
export interface EventRun {
  events: ControllerEvent[];
  stopped: null | 'no-event' | ControllerUnreachable;
}

const DEFAULT_TIMEOUT_MS = 1000;
const DEFAULT_ATTEMPTS = 2;

export class UhppoteClient {
  private readonly timeoutMs: number;
  private readonly attempts: number;
  /** The UDP exchanges in flight, each ended (rejected) by close(). */
  private readonly exchanges = new Set<() => void>();
  /** The tail of each controller's queue: requests to one controller run one after another. */
  private readonly queues = new Map<string, Promise<unknown>>();
  private closed = false;

  constructor(options: { timeoutMs?: number; attempts?: number } = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.attempts = Math.max(1, options.attempts ?? DEFAULT_ATTEMPTS);
  }

  /** Sends a request and resolves with the controller's decoded answer; ControllerUnreachable when none came. */
  request<R extends Request>(c: ControllerAddress, request: R): Promise<ResponseOf<R['fn']>> {
    if (this.closed) return Promise.reject(new Error('UhppoteClient is closed'));
    const packet = encodeRequest(c.serial, request); // throws on a bad field before anything is queued
    return this.queued(c, () => this.exchange(c, request.fn, packet)) as Promise<ResponseOf<R['fn']>>;
  }

  /**
   * The events at indexes from..to in index order, read with up to `window` get-event requests in flight, as one
   * turn of the controller's queue (nothing else is sent to the board meanwhile). The run ends at the first index
   * the board has no event at (`stopped: 'no-event'`) or did not answer for (the error); what was asked after
   * that index is dropped.
   */
  getEvents(c: ControllerAddress, from: number, to: number, window: number): Promise<EventRun> {
    if (this.closed) return Promise.reject(new Error('UhppoteClient is closed'));
    const packets = new Map<number, Buffer>();
    for (let index = from; index <= to; index++) packets.set(index, encodeRequest(c.serial, { fn: 'get-event', index }));
    return this.queued(c, async () => {
      const answers = new Map<number, ControllerEvent | null | ControllerUnreachable>();
      let next = from;
      let end = to; // the last index still wanted: lowered at an index that ends the run
      const worker = async (): Promise<void> => {
        while (next <= end) {
          const index = next++;
          try {
            const response = await this.exchange(c, 'get-event', packets.get(index) as Buffer);
            const event = response.fn === 'get-event' ? response.event : null;
            answers.set(index, event);
            if (!event) end = Math.min(end, index);
          } catch (error) {
            if (!(error instanceof ControllerUnreachable)) throw error;
            answers.set(index, error);
            end = Math.min(end, index);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(window, to - from + 1)) }, worker));
      const events: ControllerEvent[] = [];
      for (let index = from; index <= to; index++) {
        const answer = answers.get(index);
        if (answer === null) return { events, stopped: 'no-event' as const };
        if (answer === undefined || answer instanceof ControllerUnreachable) return { events, stopped: answer ?? null };
        events.push(answer);
      }
      return { events, stopped: null };
    });
  }

  /** Runs `work` after the controller's earlier requests: requests to one controller run one after another. */
  private queued<T>(c: ControllerAddress, work: () => Promise<T>): Promise<T> {
    const queueKey = `${c.transport}|${c.host}|${c.port}|${c.serial}`;
    const previous = this.queues.get(queueKey) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(work);
    const tail = run.catch(() => undefined);
    this.queues.set(queueKey, tail);
    void tail.then(() => {
      if (this.queues.get(queueKey) === tail) this.queues.delete(queueKey);
    });
    return run;
  }

  private exchange(c: ControllerAddress, fn: RequestFunction, packet: Buffer): Promise<Response> {
    return c.transport === 'tcp' ? this.overTcp(c, fn, packet) : this.overUdp(c, fn, packet);
  }

  /**
   * One exchange on a socket of its own. The protocol has no request id: on one socket shared by every request,
   * a board's late answer to a request sent again (both copies answered) was taken for the answer to the next
   * request of the same function to that board (seen under load: get-card-by-index 2 answered with the card at
   * index 1). A board answers to the port that asked, and that port is closed once the exchange ends, so a late
   * answer is dropped by the system.
   */
  private overUdp(c: ControllerAddress, fn: RequestFunction, packet: Buffer): Promise<Response> {
    return new Promise<Response>((resolve, reject) => {
      if (this.closed) return reject(new Error('UhppoteClient is closed')); // queued behind a request that close() ended
      const socket = dgram.createSocket('udp4');
      let attempt = 0;
      let timer: NodeJS.Timeout | undefined;
      let ended = false;
      const end = (settle: () => void): void => {
        if (ended) return;
        ended = true;
        if (timer) clearTimeout(timer);
        this.exchanges.delete(abort);
        socket.close();
        settle();
      };
      const abort = (): void => end(() => reject(new Error('UhppoteClient is closed')));
      this.exchanges.add(abort);
      let bound = false;
      // A send error shows as a timeout; a socket that cannot bind (no file descriptor left) ends the exchange,
      // which would otherwise wait for ever, and the controller's queue behind it. Never a crash of the process.
      socket.on('error', (error) => {
        if (!bound) end(() => reject(error));
      });
      socket.on('message', (message, from) => {
        let response: Response;
        try {
          response = decodeResponse(message);
        } catch {
          return; // not a valid answer: ignored
        }
        // From the board's address and port only: the address alone can be forged from anywhere on its segment,
        // and a board answers from the port it was asked on.
        if (from.address !== c.host || from.port !== c.port || response.serial !== c.serial || FUNCTION_CODES[response.fn] !== FUNCTION_CODES[fn]) return;
        end(() => resolve(response));
      });
      const send = (): void => {
        if (ended) return; // closed while the socket was binding
        if (attempt >= this.attempts) return end(() => reject(new ControllerUnreachable(c, fn, this.attempts)));
        attempt++;
        socket.send(packet, c.port, c.host, () => undefined);
        timer = setTimeout(send, this.timeoutMs);
      };
      socket.bind(0, () => {
        bound = true;
        send();
      });
    });
  }

  private async overTcp(c: ControllerAddress, fn: RequestFunction, packet: Buffer): Promise<Response> {
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (this.closed) throw new Error('UhppoteClient is closed');
      const response = await tcpExchange(c, fn, packet, this.timeoutMs);
      if (response) return response;
    }
    throw new ControllerUnreachable(c, fn, this.attempts);
  }

  async getStatus(c: ControllerAddress): Promise<ControllerStatus> {
    return (await this.request(c, { fn: 'get-status' })).status;
  }

  async setTime(c: ControllerAddress, datetime: string): Promise<string> {
    return (await this.request(c, { fn: 'set-time', datetime })).datetime;
  }

  async getTime(c: ControllerAddress): Promise<string> {
    return (await this.request(c, { fn: 'get-time' })).datetime;
  }

  async setListener(c: ControllerAddress, address: string, port: number): Promise<boolean> {
    return (await this.request(c, { fn: 'set-listener', address, port })).ok;
  }

  async getListener(c: ControllerAddress): Promise<{ address: string; port: number }> {
    const { address, port } = await this.request(c, { fn: 'get-listener' });
    return { address, port };
  }

  async openDoor(c: ControllerAddress, door: number): Promise<boolean> {
    return (await this.request(c, { fn: 'open-door', door })).ok;
  }

  async getCards(c: ControllerAddress): Promise<number> {
    return (await this.request(c, { fn: 'get-cards' })).count;
  }

  /** The card in a slot of the board's list; `deleted`: the slot of a card deleted since (a hole the board keeps). */
  async getCardByIndex(c: ControllerAddress, index: number): Promise<{ record: CardRecord | null; deleted: boolean }> {
    const { record, deleted } = await this.request(c, { fn: 'get-card-by-index', index });
    return { record, deleted };
  }

  async getCardById(c: ControllerAddress, card: number): Promise<CardRecord | null> {
    return (await this.request(c, { fn: 'get-card-by-id', card })).record;
  }

  async putCard(c: ControllerAddress, record: CardRecord): Promise<boolean> {
    return (await this.request(c, { fn: 'put-card', record })).ok;
  }

  async deleteCard(c: ControllerAddress, card: number): Promise<boolean> {
    return (await this.request(c, { fn: 'delete-card', card })).ok;
  }

  /**
   * Whether the card is off the board: deleted, or read back absent. A "no" (or a forged answer) can leave it there,
   * and a board also says "no" for a card it no longer holds.
   */
  async deleteCardConfirmed(c: ControllerAddress, card: number): Promise<boolean> {
    return (await this.deleteCard(c, card)) || (await this.getCardById(c, card)) === null;
  }

  async deleteAllCards(c: ControllerAddress): Promise<boolean> {
    return (await this.request(c, { fn: 'delete-all-cards' })).ok;
  }

  async setTimeProfile(c: ControllerAddress, profile: TimeProfile): Promise<boolean> {
    return (await this.request(c, { fn: 'set-time-profile', profile })).ok;
  }

  async getTimeProfile(c: ControllerAddress, id: number): Promise<TimeProfile | null> {
    return (await this.request(c, { fn: 'get-time-profile', profileId: id })).profile;
  }

  async clearTimeProfiles(c: ControllerAddress): Promise<boolean> {
    return (await this.request(c, { fn: 'clear-time-profiles' })).ok;
  }

  /** The event at index; null when the controller has none there (past the last). Overwritten: type 0xff. */
  async getEvent(c: ControllerAddress, index: number): Promise<ControllerEvent | null> {
    return (await this.request(c, { fn: 'get-event', index })).event;
  }

  async getEventIndex(c: ControllerAddress): Promise<number> {
    return (await this.request(c, { fn: 'get-event-index' })).index;
  }

  async setEventIndex(c: ControllerAddress, index: number): Promise<boolean> {
    return (await this.request(c, { fn: 'set-event-index', index })).ok;
  }

  async recordSpecialEvents(c: ControllerAddress, enable: boolean): Promise<boolean> {
    return (await this.request(c, { fn: 'record-special-events', enable })).ok;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const abort of [...this.exchanges]) abort();
  }
}

/** One TCP exchange: connect, write the 64-byte request, read 64 bytes back. null on any failure or timeout. */
function tcpExchange(c: ControllerAddress, fn: RequestFunction, packet: Buffer, timeoutMs: number): Promise<Response | null> {
  return new Promise<Response | null>((resolve) => {
    let received = Buffer.alloc(0);
    let done = false;
    const socket = net.connect({ host: c.host, port: c.port });
    const finish = (response: Response | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(response);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.on('error', () => finish(null));
    socket.on('close', () => finish(null));
    socket.on('connect', () => socket.write(packet));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      while (received.length >= PACKET_SIZE) {
        const frame = received.subarray(0, PACKET_SIZE);
        received = received.subarray(PACKET_SIZE);
        try {
          const response = decodeResponse(frame);
          if (response.serial === c.serial && response.fn === fn) {
            finish(response);
            return;
          }
        } catch {
          // not a valid frame: ignored
        }
      }
    });
  });
}
