// The webhook dispatcher's window as a state machine: when to claim deliveries and when a drain is over.
// Pure (no database, timers or promises): delivery-window.ts runs it, dispatcher.ts wires it to the database,
// test/unit/webhook-window.test.ts drives it with a fake store and sender.
//
// What the window guarantees (README: Webhooks: sending):
// - At most DELIVERY_WINDOW (64) attempts in flight per instance, slots held by claims under way included.
//   Slots are claimed as attempts end, not batch by batch: a slow receiver holds its own slot, never the
//   deliveries to the others.
// - Claims come from the database (work queue: FOR UPDATE SKIP LOCKED, oldest due first, safe with several
//   instances), each for the slots free when it starts, at most CLAIMS_AT_ONCE together, so the window
//   refills while one is on its way. While a backlog drains, a claim waits until REFILL_AT slots are free
//   (or the window is empty): one statement per half window, not one per freed slot.
// - New work wakes it at once: a kick (the NOTIFY on commit of new deliveries, or the job's one-second poll)
//   claims any free slot without waiting for the refill threshold, and keeps the drain claiming even if a
//   claim that began before the kick comes back short.
// - A drain ends when a claim comes back short (nothing else was due at its start, and no kick came since),
//   every attempt is answered and every outcome recorded; the job's run resolves then, with how much it
//   handled. The next kick or poll starts a new drain.
// - Back-pressure: no claim while a whole window of outcomes waits to be recorded (the database is slower
//   than the receivers).
// - Outcomes are written in batches: at once when RECORD_BATCH have come, nothing else is in flight or the
//   window is closing; otherwise after a few milliseconds. Claims stay held (leases renewed every few
//   seconds, however slow the attempt) until the outcome is written or its write failed; a write that
//   failed is logged and its lease runs out, so the delivery is sent again (at least once).
// - No order: neither overall nor per subscription. The oldest due are claimed first, but sent side by side,
//   and a retry waits on its own ladder (the API says deliveries are unordered).
// - A claim that fails (database away, or the auto-pause check before it) ends the claiming of that drain;
//   what is in flight is still answered and recorded, then the drain fails with the claim's error (logged;
//   the job reports it once per outage). Kicks meanwhile do not restart it; the next kick or poll after it
//   ends starts a new drain, so a database that comes back needs no restart.
// - close(): no claim starts and no drain begins; a claim already under way still sends what it claimed (its
//   attempts are counted); close() resolves once everything in flight is answered and recorded.
//
// Why not p-queue: it bounds tasks in flight, but a claim here takes the whole free room in one statement
// and must know the slots held by claims under way; the counting would stay, beside a queue of one-item tasks.

/** At most this many attempts in flight per instance (README: Webhooks: sending). */
export const DELIVERY_WINDOW = 64;
/**
 * While a backlog drains, free slots are claimed once at least this many are free: a claim per half window
 * instead of one per freed slot keeps the statements per delivery low (bench: 16 cost more CPU per delivery
 * and was no faster). A kick or an empty window claims whatever is free at once.
 */
export const REFILL_AT = 32;
/** Claims that may run together (each for the slots free when it starts), so the window refills while one is on its way. */
export const CLAIMS_AT_ONCE = 2;
/** Outcomes are written once this many have come, or after a short wait, or when nothing else is in flight. */
export const RECORD_BATCH = 32;

/**
 * idle: no drain. wanted: new work was announced since the last claim began, so any free slot is claimed now.
 * filling: more may be due; claim when REFILL_AT slots are free or the window is empty. finishing: a claim
 * came back short; no more claims, the drain ends once the window is empty and recorded. failed: a claim
 * failed; the same, then the drain fails. closing: close() was called during a drain; closed: after it.
 */
export type Phase = 'idle' | 'wanted' | 'filling' | 'finishing' | 'failed' | 'closing' | 'closed';

export interface WindowState {
  readonly phase: Phase;
  /** Kicks so far: a short claim ends the filling only if none came after it began. */
  readonly kicks: number;
  /** Claims under way, and the slots they hold (each the room free when it began). */
  readonly claims: number;
  readonly reserved: number;
  /** Attempts under way. */
  readonly inFlight: number;
  /** Outcomes answered and waiting to be written; outcomes in the write under way. */
  readonly queued: number;
  readonly writing: number;
}

export const IDLE: WindowState = { phase: 'idle', kicks: 0, claims: 0, reserved: 0, inFlight: 0, queued: 0, writing: 0 };

export type WindowEvent =
  /** New work may be due: a NOTIFY, a job run, or anything else that starts or joins a drain. */
  | { type: 'kick' }
  | { type: 'claimStarted'; room: number }
  /** A claim for `room` slots, begun when `kicksAtStart` kicks had come, returned `count` deliveries: now in flight. */
  | { type: 'claimed'; room: number; count: number; kicksAtStart: number }
  | { type: 'claimFailed'; room: number }
  /** An attempt ended: its slot is free, its outcome waits to be written. */
  | { type: 'answered' }
  | { type: 'writing'; count: number }
  | { type: 'written'; count: number }
  | { type: 'ended' }
  | { type: 'close' };

export type Step = { type: 'claim'; room: number } | { type: 'wait' } | { type: 'end' };

/** Phases in which a claim may start. */
const CLAIMING: ReadonlySet<Phase> = new Set(['wanted', 'filling']);
/** Phases of a drain under way. */
const DRAINING: ReadonlySet<Phase> = new Set(['wanted', 'filling', 'finishing', 'failed', 'closing']);

export function isDraining(state: WindowState): boolean {
  return DRAINING.has(state.phase);
}

export function isClosed(state: WindowState): boolean {
  return state.phase === 'closing' || state.phase === 'closed';
}

/** The one transition function: the state after `event`. */
export function transition(state: WindowState, event: WindowEvent): WindowState {
  switch (event.type) {
    case 'kick': {
      // A failed or closing drain takes no more claims: only a new drain, after it ends, claims again.
      const phase = state.phase === 'failed' || isClosed(state) ? state.phase : 'wanted';
      return { ...state, phase, kicks: state.kicks + 1 };
    }
    case 'claimStarted':
      return { ...state, phase: state.phase === 'wanted' ? 'filling' : state.phase, claims: state.claims + 1, reserved: state.reserved + event.room };
    case 'claimed': {
      // Short: nothing else was due when it ran (SKIP LOCKED only skips rows claimed elsewhere), unless a
      // kick came after it began: what that kick announced may have missed it.
      const short = event.count < event.room && event.kicksAtStart === state.kicks;
      const phase = short && state.phase === 'filling' ? 'finishing' : state.phase;
      return { ...state, phase, claims: state.claims - 1, reserved: state.reserved - event.room, inFlight: state.inFlight + event.count };
    }
    case 'claimFailed':
      return { ...state, phase: isClosed(state) ? state.phase : 'failed', claims: state.claims - 1, reserved: state.reserved - event.room };
    case 'answered':
      return { ...state, inFlight: state.inFlight - 1, queued: state.queued + 1 };
    case 'writing':
      return { ...state, queued: state.queued - event.count, writing: state.writing + event.count };
    case 'written':
      return { ...state, writing: state.writing - event.count };
    case 'ended':
      return { ...state, phase: isClosed(state) ? 'closed' : 'idle' };
    case 'close':
      return { ...state, phase: isDraining(state) ? 'closing' : 'closed' };
  }
}

const WAIT: Step = { type: 'wait' };
const END: Step = { type: 'end' };

/** What a drain under way does next: claim `room` slots, wait for an event, or end. */
export function nextStep(state: WindowState): Step {
  const room = DELIVERY_WINDOW - state.inFlight - state.reserved;
  const mayClaim = CLAIMING.has(state.phase) && state.queued < DELIVERY_WINDOW && state.claims < CLAIMS_AT_ONCE && room > 0;
  if (mayClaim && (state.phase === 'wanted' || room >= REFILL_AT || state.inFlight + state.reserved === 0)) return { type: 'claim', room };
  // Nothing under way and nothing to write: an empty window in a claiming phase claimed above, so this is the end.
  const settled = state.claims === 0 && state.inFlight === 0 && state.queued === 0 && state.writing === 0;
  return settled && isDraining(state) ? END : WAIT;
}

/** Whether to wait a few milliseconds before writing what is queued, so that one statement takes more outcomes. */
export function gatherFirst(state: WindowState): boolean {
  return state.queued < RECORD_BATCH && state.inFlight > 0 && !isClosed(state);
}
