// What happens to a gateway's messages between the broker and the database (README "Gateways"): each
// gateway's are handled in order of arrival (an online followed by an offline must end offline); door events
// and command results are acknowledged only once committed, so nothing a gateway was told is stored can
// vanish in a crash; and every write is retried while the database is away, the gateway's later messages
// waiting behind it.
import type { FastifyBaseLogger } from 'fastify';
import { backoffMs } from '../../platform/backoff.ts';
import type { GatewayEvent } from '../events/index.ts';

/** Where the pipeline writes what it is given. */
export interface MessageStores {
  /** Writes a batch of one gateway's door events, all or none (repeats of stored events are the store's to drop). */
  events(gatewayId: number, events: GatewayEvent[]): Promise<unknown>;
  /** Writes a gateway's command result. */
  result(gatewayId: number, payload: unknown): Promise<unknown>;
}

export interface PipelineOptions {
  /** The wait before retry number `attempt` (1, 2, …) of a write that failed for want of the database. */
  retryDelayMs?: (attempt: number) => number;
  /** A door event the database refused as data, dropped (latchkey_door_events_dropped_total). */
  onEventRefused?: () => void;
}

/** SQLSTATE classes 22 (data exception) and 23 (integrity constraint violation): the rows, not the database. */
const REFUSED_AS_DATA = /^2[23]/;

/** Whether the database refused the rows themselves (sending them again cannot help), not that it is away. */
export function refusedAsData(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && REFUSED_AS_DATA.test(code);
}

/** Resolves when `written` resolves true; never when the service shut down first (no acknowledgement). */
const acknowledgeWhen = (written: Promise<boolean>): Promise<void> => new Promise<void>((resolve) => void written.then((ok) => ok && resolve()));

/** Door events of a gateway waiting for their turn, by event id, and the acknowledgement of them all. */
interface WaitingBatch {
  events: Map<string, GatewayEvent>;
  stored: Promise<void>;
}

export class GatewayMessagePipeline {
  /** The tail of each gateway's work; absent once it has all run. */
  private readonly queues = new Map<number, Promise<void>>();
  /** The batch of door events of each gateway that waits behind its earlier work. */
  private readonly waiting = new Map<number, WaitingBatch>();
  private closing = false;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly onEventRefused: () => void;

  constructor(
    private readonly stores: MessageStores,
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'error'>,
    options: PipelineOptions = {},
  ) {
    this.retryDelayMs = options.retryDelayMs ?? backoffMs;
    this.onEventRefused = options.onEventRefused ?? (() => undefined);
  }

  /**
   * A door event. Events that arrive while earlier work of the gateway is still being written wait in one
   * batch, stored in one write when its turn comes: in order, and far fewer statements under load. The
   * promise resolves when its batch is committed (acknowledge the event then); never when the service shuts
   * down first. The broker limits what arrives unacknowledged: the embedded one reads a gateway's next packets
   * only once those of its last read are acknowledged; an external one sends at most RECEIVE_MAXIMUM
   * (link.ts) unacknowledged messages per connection. A copy of an event already waiting (a gateway that
   * reconnected and sent again what was not acknowledged yet) joins it instead of growing the batch: what
   * waits stays bounded by the distinct events in flight.
   */
  event(gatewayId: number, event: GatewayEvent): Promise<void> {
    let batch = this.waiting.get(gatewayId);
    if (!batch) {
      const events = new Map<string, GatewayEvent>();
      let written: (ok: boolean) => void = () => undefined;
      batch = { events, stored: acknowledgeWhen(new Promise<boolean>((resolve) => (written = resolve))) };
      this.waiting.set(gatewayId, batch);
      this.inOrder(gatewayId, async () => {
        this.waiting.delete(gatewayId);
        written(await this.storeEvents(gatewayId, [...events.values()]));
      });
    }
    if (!batch.events.has(event.id)) batch.events.set(event.id, event);
    return batch.stored;
  }

  /** A command result: resolves once committed (or refused as data, and dropped); never when the service shut down first. */
  result(gatewayId: number, payload: unknown): Promise<void> {
    let written: (ok: boolean) => void = () => undefined;
    const acknowledged = acknowledgeWhen(new Promise<boolean>((resolve) => (written = resolve)));
    this.inOrder(gatewayId, async () =>
      written(
        await this.untilWritten(
          gatewayId,
          () => this.stores.result(gatewayId, payload),
          (error) => {
            this.log.error({ err: error, gatewayId }, 'command result refused by the database; dropped');
            return true;
          },
        ),
      ),
    );
    return acknowledged;
  }

  /**
   * A presence change, in the gateway's order of messages. Retried like the rest, so a will that arrives
   * while the database is away still marks the gateway offline once it is back.
   */
  presence(gatewayId: number, change: () => Promise<unknown>): void {
    this.inOrder(gatewayId, () =>
      this.untilWritten(
        gatewayId,
        change,
        (error) => {
          this.log.error({ err: error, gatewayId }, 'presence change refused by the database; dropped');
          return true;
        },
      ),
    );
  }

  /**
   * The service is shutting down: a write that fails for want of the database is no longer retried, and its
   * message stays unacknowledged (the gateway, or the external broker's session, sends it again).
   */
  stopRetrying(): void {
    this.closing = true;
  }

  /** Resolves once the gateway's work queued so far has run. */
  settled(gatewayId: number): Promise<void> {
    return this.queues.get(gatewayId) ?? Promise.resolve();
  }

  /** Resolves once the work queued so far has run. */
  async drained(): Promise<void> {
    await Promise.allSettled([...this.queues.values()]);
  }

  /** Runs work after the gateway's earlier work; a failure is logged and does not hold up what follows. */
  private inOrder(gatewayId: number, work: () => Promise<unknown>): void {
    const next = (this.queues.get(gatewayId) ?? Promise.resolve())
      .then(work)
      .catch((error: unknown) => this.log.error({ err: error, gatewayId }, 'gateway message failed'))
      .then(() => undefined);
    this.queues.set(gatewayId, next);
    void next.then(() => {
      if (this.queues.get(gatewayId) === next) this.queues.delete(gatewayId);
    });
  }

  /**
   * Writes until the write succeeds, retrying while the database is away; what the database refuses as data
   * is handed to `refused`, since sending it again cannot help. True once written or refused, false when the
   * service shut down first.
   */
  private async untilWritten(gatewayId: number, write: () => Promise<unknown>, refused: (error: unknown) => Promise<boolean> | boolean): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await write();
        return true;
      } catch (error) {
        if (refusedAsData(error)) return refused(error);
        if (this.closing) return false;
        this.log.warn({ err: error, gatewayId, attempt }, 'gateway message not stored yet; retrying');
        await new Promise((resolve) => setTimeout(resolve, this.retryDelayMs(attempt)));
      }
    }
  }

  /**
   * A batch the database refuses as data is written event by event, so that the one bad event is all that
   * is lost (logged whole: ids, types and times, nothing personal).
   */
  private storeEvents(gatewayId: number, events: GatewayEvent[]): Promise<boolean> {
    return this.untilWritten(
      gatewayId,
      () => this.stores.events(gatewayId, events),
      async (error) => {
        if (events.length === 1) {
          this.log.error({ err: error, gatewayId, event: events[0] }, 'door event refused by the database; dropped');
          this.onEventRefused();
          return true;
        }
        let settled = true;
        for (const event of events) settled = (await this.storeEvents(gatewayId, [event])) && settled;
        return settled;
      },
    );
  }
}
