// Runs the window's state machine (window-machine.ts, where its guarantees are written): starts the claims it
// asks for, sends what they bring, writes the outcomes in batches and renews the leases of what it holds.
// The database and the network come in as ports, so the rules are tested without either.
import type { AttemptResult, DeliveryToSend } from './sender.ts';
import { gatherFirst, IDLE, isClosed, nextStep, transition, type WindowEvent, type WindowState } from './window-machine.ts';

/** An attempt answered: what is written for it. */
export interface Sent {
  delivery: DeliveryToSend;
  result: AttemptResult;
  seconds: number;
}

interface Logger {
  error(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/** What the window needs of the database and the network (dispatcher.ts: delivery-store.ts and sender.ts). */
export interface WindowPorts {
  /** Claims at most `room` due deliveries; `handled` counts them and whatever else it did (subscriptions paused). */
  claim(room: number): Promise<{ due: DeliveryToSend[]; handled: number }>;
  /** One attempt; never throws. `secrets` caches decrypted signing secrets for one claim. */
  attempt(delivery: DeliveryToSend, secrets: Map<string, string>): Promise<AttemptResult>;
  /** Writes the outcomes of a batch; a batch that throws keeps its claims until their leases run out. */
  record(batch: Sent[]): Promise<void>;
  /** Extends the leases of these deliveries' claims. */
  renew(ids: string[]): Promise<void>;
  log: Logger;
}

export interface WindowTiming {
  /** How often the claims held are renewed: several times within a lease. */
  renewEveryMs: number;
  /** How long outcomes gather before a write that is not full. */
  recordWaitMs: number;
}

const TIMING: WindowTiming = { renewEveryMs: 5000, recordWaitMs: 3 };

/** One drain: from a kick while idle until the window is empty and recorded. */
interface Drain {
  promise: Promise<number>;
  resolve(handled: number): void;
  reject(error: unknown): void;
  handled: number;
  /** The first claim that failed; the drain fails with it once the window is empty. */
  failure: { error: unknown } | null;
}

function newDrain(): Drain {
  let resolve: (handled: number) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<number>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject, handled: 0, failure: null };
}

export class DeliveryWindow {
  private state: WindowState = IDLE;
  private drain: Drain | null = null;
  /** Outcomes answered and not yet taken by a write (state.queued counts them). */
  private readonly unrecorded: Sent[] = [];
  /** The write loop under way, if any. */
  private writer: Promise<void> | null = null;
  private readonly held: HeldClaims;
  private readonly timing: WindowTiming;

  constructor(
    private readonly ports: WindowPorts,
    timing: Partial<WindowTiming> = {},
  ) {
    this.timing = { ...TIMING, ...timing };
    this.held = new HeldClaims(ports, this.timing.renewEveryMs);
  }

  /** The state, for tests. */
  get snapshot(): WindowState {
    return this.state;
  }

  get closed(): boolean {
    return isClosed(this.state);
  }

  /** The drain under way (it resolves with how much it handled), or null. */
  get running(): Promise<number> | null {
    return this.drain?.promise ?? null;
  }

  /** New work may be due: starts a drain, or has the one under way claim a free slot at once. Null once closed. */
  kick(): Promise<number> | null {
    if (this.closed) return null;
    this.drain ??= newDrain();
    const { promise } = this.drain;
    this.apply({ type: 'kick' });
    return promise;
  }

  /** No more claims; resolves once every attempt in flight is answered and its outcome written. */
  async close(): Promise<void> {
    this.apply({ type: 'close' });
    await this.drain?.promise.catch(() => undefined);
    this.held.stop();
  }

  /** Takes the event, then the steps the machine asks for until it waits. */
  private apply(event: WindowEvent): void {
    this.state = transition(this.state, event);
    const drain = this.drain;
    if (!drain) return;
    for (;;) {
      const step = nextStep(this.state);
      if (step.type === 'wait') return;
      if (step.type === 'claim') {
        this.claim(drain, step.room);
        continue;
      }
      // The drain ends in this turn, as the machine goes idle: a kick from here on starts a new one.
      this.drain = null;
      this.state = transition(this.state, { type: 'ended' });
      if (drain.failure) drain.reject(drain.failure.error);
      else drain.resolve(drain.handled);
      return;
    }
  }

  private claim(drain: Drain, room: number): void {
    this.state = transition(this.state, { type: 'claimStarted', room });
    const kicksAtStart = this.state.kicks;
    new Promise<{ due: DeliveryToSend[]; handled: number }>((resolve) => resolve(this.ports.claim(room))).then(
      ({ due, handled }) => {
        drain.handled += handled;
        this.held.hold(due.map((delivery) => delivery.id));
        this.apply({ type: 'claimed', room, count: due.length, kicksAtStart });
        this.send(due); // also after close(): the claim counted their attempts
      },
      (error: unknown) => {
        drain.failure ??= { error };
        this.apply({ type: 'claimFailed', room });
      },
    );
  }

  private send(due: DeliveryToSend[]): void {
    const secrets = new Map<string, string>(); // one decryption per subscription and claim
    for (const delivery of due) {
      const started = performance.now();
      const answered = (result: AttemptResult) => {
        this.unrecorded.push({ delivery, result, seconds: (performance.now() - started) / 1000 });
        this.apply({ type: 'answered' });
        this.write();
      };
      // A sender that broke its word and threw still frees its slot.
      const broke = (error: unknown) => answered({ ok: false, status: null, error: String(error).slice(0, 500) });
      try {
        this.ports.attempt(delivery, secrets).then(answered, broke);
      } catch (error) {
        broke(error);
      }
    }
  }

  /** Writes what has been answered, one batch at a time, until nothing is left. */
  private write(): void {
    if (this.writer) return;
    this.writer = this.writeAll().finally(() => {
      this.writer = null;
      // An outcome that came between the loop's last look and now would otherwise wait for the next one.
      if (this.unrecorded.length > 0) this.write();
    });
  }

  private async writeAll(): Promise<void> {
    while (this.unrecorded.length > 0) {
      // A few milliseconds' wait makes one statement of many outcomes; their slots are already free.
      if (gatherFirst(this.state)) await new Promise((resolve) => setTimeout(resolve, this.timing.recordWaitMs));
      const batch = this.unrecorded.splice(0);
      this.apply({ type: 'writing', count: batch.length });
      try {
        await this.ports.record(batch);
      } catch (error) {
        this.ports.log.error({ err: error }, 'webhook outcomes not recorded; their claims run out and they are sent again');
      }
      this.held.release(batch.map((sent) => sent.delivery.id));
      this.apply({ type: 'written', count: batch.length });
    }
  }
}

/**
 * The deliveries claimed and not yet recorded, whose leases are renewed every `everyMs` while they are held,
 * however long their attempts take. The timer runs only while something is held.
 */
class HeldClaims {
  private readonly ids = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly ports: Pick<WindowPorts, 'renew' | 'log'>,
    private readonly everyMs: number,
  ) {}

  hold(ids: readonly string[]): void {
    for (const id of ids) this.ids.add(id);
    if (ids.length > 0) this.timer ??= setInterval(() => void this.renew(), this.everyMs).unref();
  }

  release(ids: readonly string[]): void {
    for (const id of ids) this.ids.delete(id);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async renew(): Promise<void> {
    if (this.ids.size === 0) return this.stop();
    try {
      await this.ports.renew([...this.ids]);
    } catch (error) {
      this.ports.log.warn({ err: error }, 'webhook delivery claims not renewed; they may be sent again by another instance');
    }
  }
}
