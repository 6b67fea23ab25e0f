// The webhook dispatcher's window (src/modules/webhooks/window-machine.ts, run by delivery-window.ts) with a
// fake database and receiver: when it claims, how many it holds, how it ends, fails, recovers and closes, and
// that the leases of slow attempts are renewed until their outcomes are written.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DeliveryWindow, type Sent, type WindowPorts } from '../../src/modules/webhooks/delivery-window.ts';
import type { AttemptResult, DeliveryToSend } from '../../src/modules/webhooks/sender.ts';
import { DELIVERY_WINDOW } from '../../src/modules/webhooks/window-machine.ts';

const OK: AttemptResult = { ok: true, status: 200, error: null };

function delivery(id: string): DeliveryToSend {
  return { id, subscription_id: 'sub', event_type: 'person.created', payload: {}, attempt: 1, created_at: new Date(0), url: 'https://receiver.test/', secret_ciphertext: '' };
}

function deliveries(prefix: string, count: number): DeliveryToSend[] {
  return Array.from({ length: count }, (_, i) => delivery(`${prefix}${i}`));
}

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Turns of the event loop, so that callbacks of settled promises and short timers have run. */
async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setTimeout(resolve, 2));
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (const started = Date.now(); !condition(); await new Promise((resolve) => setTimeout(resolve, 2))) {
    if (Date.now() - started > 5000) assert.fail(`waited 5 s for ${what}`);
  }
}

/** What a claim in progress looks like to the test: the rows it took when it began, held until let go. */
interface HeldClaim {
  room: number;
  rows: DeliveryToSend[];
  release(): void;
}

/**
 * The database (due rows, claims, outcomes, leases) and the receivers (attempts answered by the test) behind
 * the window's ports. A claim takes its rows when it begins, as a statement's snapshot would.
 */
class Fake {
  due: DeliveryToSend[] = [];
  /** Set: claims fail with it (the database is away). */
  down: Error | null = null;
  /** Set: claims wait for the test to release them (held). */
  holdClaims = false;
  readonly held: HeldClaim[] = [];
  readonly rooms: number[] = [];
  /** The most slots in use at a claim's start: attempts under way, claims under way and the new claim's room. */
  mostCommitted = 0;
  /** Answered as soon as they are sent when set; otherwise they wait for answer(). */
  answerAtOnce = false;
  readonly waiting = new Map<string, () => void>();
  readonly sent: string[] = [];
  mostInFlight = 0;
  /** Set: writes wait for it. */
  writeGate: Promise<void> | null = null;
  readonly recorded: string[] = [];
  /** In order: `renew:<ids>` and `recorded:<ids>`. */
  readonly log: string[] = [];
  readonly errors: string[] = [];

  readonly ports: WindowPorts = {
    claim: async (room) => {
      this.rooms.push(room);
      this.mostCommitted = Math.max(this.mostCommitted, this.inFlight + this.held.reduce((sum, claim) => sum + claim.room, 0) + room);
      await new Promise((resolve) => setImmediate(resolve)); // a round trip, as to a database
      if (this.down) throw this.down;
      const rows = this.due.splice(0, room);
      if (this.holdClaims) {
        const gate = deferred();
        this.held.push({ room, rows, release: gate.resolve });
        await gate.promise;
      }
      return { due: rows, handled: rows.length };
    },
    attempt: (d) => {
      this.sent.push(d.id);
      this.mostInFlight = Math.max(this.mostInFlight, this.sent.length - this.answered);
      if (this.answerAtOnce) return Promise.resolve(this.answer1(OK));
      return new Promise<AttemptResult>((resolve) => this.waiting.set(d.id, () => resolve(this.answer1(OK))));
    },
    record: async (batch: Sent[]) => {
      await this.writeGate;
      const ids = batch.map((s) => s.delivery.id);
      this.recorded.push(...ids);
      this.log.push(`recorded:${ids.join(',')}`);
    },
    renew: async (ids) => {
      this.log.push(`renew:${ids.join(',')}`);
    },
    log: { error: (_details, message) => this.errors.push(message), warn: (_details, message) => this.errors.push(message) },
  };

  private answered = 0;
  private answer1(result: AttemptResult): AttemptResult {
    this.answered++;
    return result;
  }

  get inFlight(): number {
    return this.waiting.size;
  }

  /** Answers the attempts under way: these ids, or the first `count` sent. */
  answer(which: number | string[]): void {
    const ids = typeof which === 'number' ? [...this.waiting.keys()].slice(0, which) : which;
    for (const id of ids) {
      const answer = this.waiting.get(id);
      assert.ok(answer, `${id} is in flight`);
      this.waiting.delete(id);
      answer();
    }
  }

  releaseClaim(): void {
    const claim = this.held.shift();
    assert.ok(claim, 'a claim is held');
    claim.release();
  }
}

function windowOf(fake: Fake, renewEveryMs = 5000): DeliveryWindow {
  return new DeliveryWindow(fake.ports, { renewEveryMs, recordWaitMs: 1 });
}

describe('webhook delivery window', () => {
  test('wake while filling: a kick claims the free slots at once, though fewer than the refill threshold are free', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.due = deliveries('slow', 40);
    const drain = window.kick();
    await until(() => fake.inFlight === 40, '40 slow attempts in flight');
    assert.deepEqual(fake.rooms, [DELIVERY_WINDOW]);

    fake.due = [delivery('new')];
    window.kick(); // 24 free: fewer than REFILL_AT, but new work was announced
    await until(() => fake.sent.includes('new'), 'the new delivery to be sent');
    assert.deepEqual(fake.rooms, [DELIVERY_WINDOW, DELIVERY_WINDOW - 40]);
    assert.equal(fake.inFlight, 41, 'sent while the slow ones are still in flight');

    fake.answer(41);
    assert.equal(await drain, 41);
  });

  test('a claim that began before a kick and comes back short does not end the claiming', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.due = deliveries('slow', 30);
    const drain = window.kick();
    await until(() => fake.inFlight === 30, '30 in flight'); // short: nothing more due, the drain is finishing
    fake.holdClaims = true;
    window.kick(); // claim A: 34 slots, nothing due when it begins
    await settle();
    fake.answer(10); // 10 slots free: fewer than REFILL_AT, so no claim yet
    await settle();
    fake.due = [...deliveries('late', 34), delivery('last')];
    window.kick(); // announced while A is on its way: claim B takes the 10 free slots at once
    await until(() => fake.held.length === 2, 'a second claim');
    assert.deepEqual(fake.rooms, [64, 34, 10]);
    fake.releaseClaim(); // A: short, but a kick came after it began
    fake.releaseClaim(); // B: full
    fake.holdClaims = false;
    await until(() => fake.sent.includes('last'), 'the rest claimed in this drain');
    fake.answer(fake.inFlight);
    assert.equal(await drain, 30 + 35);
  });

  test('a slot freed mid-claim: never more than the window in flight and held by claims, never three claims at once', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.due = deliveries('d', 300);
    const drain = window.kick();
    await until(() => fake.inFlight === 64, 'a full window');
    fake.holdClaims = true;
    fake.answer(1);
    window.kick(); // claim A: the 1 slot free
    await until(() => fake.held.length === 1, 'claim A');
    fake.answer(32); // freed while A is on its way: claim B, for them and not for A's slot
    await until(() => fake.held.length === 2, 'claim B');
    fake.answer(31);
    window.kick(); // 31 free, but two claims are on their way
    await settle();
    assert.deepEqual(fake.rooms, [64, 1, 32], 'no third claim while two are on their way');
    fake.releaseClaim();
    await until(() => fake.held.length === 2, 'claim C once A is back');
    assert.deepEqual(fake.rooms, [64, 1, 32, 31]);
    fake.releaseClaim();
    fake.releaseClaim();
    fake.holdClaims = false;
    while (fake.sent.length < 300) {
      await until(() => fake.inFlight > 0 || fake.sent.length === 300, 'attempts');
      fake.answer(fake.inFlight);
    }
    assert.equal(await drain, 300);
    assert.equal(fake.mostInFlight, DELIVERY_WINDOW);
    assert.equal(fake.mostCommitted, DELIVERY_WINDOW, 'in flight and held by claims, never more than the window');
    assert.equal(new Set(fake.recorded).size, 300);
  });

  test('back-pressure: no claim while a whole window of outcomes waits to be written', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.answerAtOnce = true;
    const gate = deferred();
    fake.writeGate = gate.promise;
    fake.due = deliveries('d', 200);
    const drain = window.kick();
    await until(() => fake.sent.length >= 128, 'two windows sent');
    await settle(10);
    const stuck = fake.sent.length;
    await settle(10);
    assert.equal(fake.sent.length, stuck, 'the claiming stops while the writes are stuck');
    assert.ok(stuck < 200, `${stuck} sent: not all that was due`);
    assert.ok(window.snapshot.queued >= DELIVERY_WINDOW, 'a window of outcomes waits');
    fake.writeGate = null;
    gate.resolve();
    assert.equal(await drain, 200);
    assert.equal(fake.recorded.length, 200);
  });

  test('a claim that fails: what is in flight is answered and recorded, then the drain fails; the next kick starts anew', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.due = deliveries('d', 3);
    let outcome: unknown = 'pending';
    const failing = window.kick();
    failing?.then(
      () => (outcome = 'resolved'),
      (error: unknown) => (outcome = error),
    );
    await until(() => fake.inFlight === 3, '3 in flight');
    const away = new Error('database away');
    fake.down = away;
    fake.due = [delivery('after')];
    window.kick();
    await settle();
    assert.equal(fake.rooms.length, 2, 'the failed claim is made once');
    window.kick(); // during the failed drain: no claim
    await settle();
    assert.equal(fake.rooms.length, 2, 'no claim after the failure in that drain');
    assert.equal(outcome, 'pending', 'the drain waits for what is in flight');
    fake.answer(3);
    await until(() => outcome !== 'pending', 'the drain to end');
    assert.equal(outcome, away, 'the drain fails with the claim\'s error');
    assert.deepEqual(fake.recorded.sort(), ['d0', 'd1', 'd2'], 'recorded before the drain failed');

    fake.down = null; // the database is back
    const again = window.kick();
    assert.notEqual(again, failing, 'a new drain');
    await until(() => fake.inFlight === 1, 'the delivery after the failure');
    fake.answer(['after']);
    assert.equal(await again, 1);
  });

  test('close() while attempts are in flight: no new claim, a claim on its way still sends, resolves once all are recorded', async () => {
    const fake = new Fake();
    const window = windowOf(fake);
    fake.due = deliveries('d', 5);
    const drain = window.kick();
    drain?.catch(() => undefined);
    await until(() => fake.inFlight === 5, '5 in flight');
    fake.holdClaims = true;
    fake.due = deliveries('claimed', 2);
    window.kick();
    await until(() => fake.held.length === 1, 'a claim on its way');
    let closed = false;
    const closing = window.close().then(() => (closed = true));
    fake.due = deliveries('later', 3);
    assert.equal(window.kick(), null, 'a kick after close() does nothing');
    fake.releaseClaim();
    await until(() => fake.inFlight === 7, 'what the claim took is sent');
    await settle();
    assert.equal(closed, false, 'not while attempts are in flight');
    const gate = deferred();
    fake.writeGate = gate.promise;
    fake.answer(7);
    await settle();
    assert.equal(closed, false, 'not before their outcomes are recorded');
    gate.resolve();
    await closing;
    assert.equal(fake.rooms.length, 2, 'no claim after close()');
    assert.deepEqual(fake.recorded.sort(), ['claimed0', 'claimed1', 'd0', 'd1', 'd2', 'd3', 'd4']);
  });

  test('a slow attempt: its lease is renewed until its outcome is written, then the renewals stop', async () => {
    const fake = new Fake();
    const window = windowOf(fake, 10);
    fake.due = [delivery('fast'), delivery('slow')];
    const drain = window.kick();
    await until(() => fake.inFlight === 2, 'both in flight');
    fake.answer(['fast']);
    const renews = (line: string, id: string) => line.startsWith('renew:') && line.slice('renew:'.length).split(',').includes(id);
    const renewalsOf = (id: string) => fake.log.filter((line) => renews(line, id)).length;
    await until(() => fake.recorded.includes('fast') && renewalsOf('slow') >= 3, 'three renewals of the slow one');
    const fastRecorded = fake.log.indexOf('recorded:fast');
    assert.ok(!fake.log.slice(fastRecorded).some((line) => renews(line, 'fast')), 'fast is not renewed once recorded');
    const gate = deferred();
    fake.writeGate = gate.promise; // answered, not yet written: still held
    fake.answer(['slow']);
    const answered = renewalsOf('slow');
    await until(() => renewalsOf('slow') >= answered + 2, 'renewals while its outcome is being written');
    fake.writeGate = null;
    gate.resolve();
    assert.equal(await drain, 2);
    const written = fake.log.indexOf('recorded:slow');
    const total = fake.log.length;
    await settle(10);
    assert.equal(fake.log.length, total, 'the renewals stop once nothing is held');
    assert.ok(!fake.log.slice(written).some((line) => line.startsWith('renew:')), 'no renewal after the outcome is written');
  });
});
