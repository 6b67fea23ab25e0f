// The gateway message pipeline alone, with fake stores (no broker, no database): each gateway's messages in
// order, door events batched and deduplicated while the gateway is busy, acknowledgement only once
// committed, retries while the database is away, and what the database refuses as data dropped alone.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { GatewayEvent } from '../../src/modules/events/index.ts';
import { GatewayMessagePipeline, type MessageStores } from '../../src/modules/devices/message-pipeline.ts';

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const event = (id: string): GatewayEvent => ({ id, lock_id: 1, type: 'door.closed', occurred_at: '2026-11-20T08:00:00Z', key_id: null, reason: null });
/** The database is away: an error without a SQLSTATE of class 22 or 23. */
const away = () => new Error('connection refused');
/** The database refuses the rows: SQLSTATE 23505 (unique violation). */
const refused = () => Object.assign(new Error('duplicate key'), { code: '23505' });

/** Lets every promise chain that waits on nothing but promises run to its end. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.ok(condition(), `timed out waiting for ${what}`);
}

/** Tracks whether a promise has resolved. */
function watch(promise: Promise<unknown>): { done: boolean } {
  const state = { done: false };
  void promise.then(() => (state.done = true));
  return state;
}

/** A pipeline on fake stores that record every call; each store runs `behaviour` (default: succeed at once). */
function fixture(behaviour: { events?: (gatewayId: number, ids: string[]) => Promise<unknown>; result?: (gatewayId: number, payload: unknown) => Promise<unknown> } = {}) {
  const calls: string[] = [];
  const logs: Array<{ level: 'warn' | 'error'; msg: string; fields: Record<string, unknown> }> = [];
  const stores: MessageStores = {
    events: async (gatewayId, events) => {
      const ids = events.map((e) => e.id);
      calls.push(`events ${gatewayId} ${ids.join(',')}`);
      await behaviour.events?.(gatewayId, ids);
    },
    result: async (gatewayId, payload) => {
      calls.push(`result ${gatewayId} ${(payload as { id: string }).id}`);
      await behaviour.result?.(gatewayId, payload);
    },
  };
  const record = (level: 'warn' | 'error') => (fields: unknown, msg?: unknown) => void logs.push({ level, msg: String(msg), fields: fields as Record<string, unknown> });
  const delays: number[] = [];
  const pipeline = new GatewayMessagePipeline(stores, { warn: record('warn'), error: record('error') }, { retryDelayMs: (attempt) => (delays.push(attempt), 1) });
  /** A presence change that records itself and then runs `body`. */
  const presence = (gatewayId: number, name: string, body: () => Promise<unknown> = async () => undefined) =>
    pipeline.presence(gatewayId, async () => {
      calls.push(`presence ${gatewayId} ${name}`);
      await body();
    });
  return { pipeline, calls, logs, delays, presence };
}

describe('the gateway message pipeline', () => {
  test('handles each gateway\'s messages in order of arrival, and gateways independently of each other', async () => {
    const { pipeline, calls, presence } = fixture();
    const blocker = deferred();
    presence(1, 'online', () => blocker.promise);
    const e1 = watch(pipeline.event(1, event('e1')));
    const r1 = watch(pipeline.result(1, { id: 'r1' }));
    presence(1, 'offline');
    const x1 = watch(pipeline.event(2, event('x1')));
    await settle();
    assert.deepEqual(calls, ['presence 1 online', 'events 2 x1'], 'gateway 1 waits behind its first message; gateway 2 does not');
    assert.equal(x1.done, true);
    assert.equal(e1.done || r1.done, false);
    blocker.resolve();
    await pipeline.drained();
    assert.deepEqual(calls, ['presence 1 online', 'events 2 x1', 'events 1 e1', 'result 1 r1', 'presence 1 offline']);
    assert.equal(e1.done && r1.done, true);
  });

  test('stores the door events that arrive while the gateway is busy in one batch, each event once, acknowledged when it is committed', async () => {
    const commit = deferred();
    const { pipeline, calls, presence } = fixture({ events: (_g, ids) => (ids.includes('e1') ? commit.promise : Promise.resolve()) });
    const blocker = deferred();
    presence(1, 'contact', () => blocker.promise);
    const acks = [pipeline.event(1, event('e1')), pipeline.event(1, event('e2')), pipeline.event(1, event('e1')), pipeline.event(1, event('e3'))].map(watch);
    blocker.resolve();
    await settle();
    assert.deepEqual(calls, ['presence 1 contact', 'events 1 e1,e2,e3'], 'one write, in order, the repeated e1 once');
    // Arriving while that batch is being written: the next batch, not this one.
    const e4 = watch(pipeline.event(1, event('e4')));
    const e1again = watch(pipeline.event(1, event('e1')));
    await settle();
    assert.ok(acks.every((a) => !a.done) && !e4.done, 'nothing is acknowledged before its batch is committed');
    commit.resolve();
    await pipeline.drained();
    assert.deepEqual(calls, ['presence 1 contact', 'events 1 e1,e2,e3', 'events 1 e4,e1']);
    assert.ok(acks.every((a) => a.done) && e4.done && e1again.done, 'every copy is acknowledged once its batch is committed');
  });

  test('retries a write while the database is away, the gateway\'s later messages waiting behind it', async () => {
    let failures = 2;
    const { pipeline, calls, logs, delays } = fixture({
      events: async () => {
        if (failures-- > 0) throw away();
      },
    });
    const e1 = watch(pipeline.event(1, event('e1')));
    const r1 = watch(pipeline.result(1, { id: 'r1' }));
    await until(() => r1.done, 'the result behind the retried events');
    assert.deepEqual(calls, ['events 1 e1', 'events 1 e1', 'events 1 e1', 'result 1 r1']);
    assert.equal(e1.done, true);
    assert.deepEqual(delays, [1, 2], 'backing off by attempt');
    assert.deepEqual(logs.map((l) => [l.level, l.fields.attempt]), [['warn', 1], ['warn', 2]]);
  });

  test('writes a batch the database refuses as data event by event, and drops only the refused event', async () => {
    const { pipeline, calls, logs, presence } = fixture({
      events: async (_g, ids) => {
        if (ids.includes('poison')) throw refused();
      },
    });
    const blocker = deferred();
    presence(1, 'contact', () => blocker.promise);
    const acks = ['a', 'poison', 'b'].map((id) => watch(pipeline.event(1, event(id))));
    blocker.resolve();
    await pipeline.drained();
    assert.deepEqual(calls, ['presence 1 contact', 'events 1 a,poison,b', 'events 1 a', 'events 1 poison', 'events 1 b']);
    assert.ok(acks.every((a) => a.done), 'all acknowledged: sending the refused one again cannot help');
    assert.deepEqual(logs.map((l) => [l.level, l.msg, (l.fields.event as GatewayEvent | undefined)?.id]), [['error', 'door event refused by the database; dropped', 'poison']]);
  });

  test('retries command results and presence changes while the database is away, and drops them when refused as data', async () => {
    let resultFailures = 1;
    const { pipeline, calls, logs, presence } = fixture({
      result: async (_g, payload) => {
        if ((payload as { id: string }).id === 'bad') throw refused();
        if (resultFailures-- > 0) throw away();
      },
    });
    let presenceFailures = 1;
    presence(1, 'online', async () => {
      if (presenceFailures-- > 0) throw away();
    });
    presence(1, 'refused', async () => {
      throw refused();
    });
    const ok = watch(pipeline.result(1, { id: 'ok' }));
    const bad = watch(pipeline.result(1, { id: 'bad' }));
    await until(() => bad.done, 'the refused result');
    await pipeline.drained();
    assert.deepEqual(calls, ['presence 1 online', 'presence 1 online', 'presence 1 refused', 'result 1 ok', 'result 1 ok', 'result 1 bad']);
    assert.equal(ok.done, true);
    assert.deepEqual(
      logs.filter((l) => l.level === 'error').map((l) => l.msg),
      ['presence change refused by the database; dropped', 'command result refused by the database; dropped'],
    );
  });

  test('after stopRetrying, a write that fails for want of the database is given up and never acknowledged', async () => {
    const { pipeline, calls } = fixture({
      events: async () => {
        throw away();
      },
    });
    const e1 = watch(pipeline.event(1, event('e1')));
    await until(() => calls.length >= 2, 'a retry');
    pipeline.stopRetrying();
    await pipeline.drained();
    const attempts = calls.length;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.length, attempts, 'no further attempts');
    assert.equal(e1.done, false, 'left unacknowledged, to be sent again');
  });
});
