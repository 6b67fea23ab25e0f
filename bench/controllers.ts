// UHPPOTE controllers (issue 24): a simulated board in this process (test/helpers/uhppote-simulator.ts, the real
// 64-byte UDP packets), the service in its own process with its event listener on.
//   revocation: DELETE /v1/keys/{id} answered → the board has deleted the card (the simulator notes the moment
//               its card list loses it), one key after another, the board holding every other key's card;
//   events:     a burst of swipes on the board as fast as it records them, pushed to the listener; the figure is
//               the burst over the time until every one is in GET /v1/events. Pushes the kernel drops are read
//               by index (the gap logic), so the count must come out exact: none lost, none twice (the access log
//               is unique on (controller, event index)).
import os from 'node:os';
import { freeUdpPort, startSimulatedController } from '../test/helpers/uhppote-simulator.ts';
import { admin, percentile, startBenchService, stop } from './common.ts';

/** Keys revoked one after another (BENCH_CONTROLLER_KEYS, default 200). */
const KEYS = Number(process.env.BENCH_CONTROLLER_KEYS ?? 200);
/** Swipes in the burst (BENCH_CONTROLLER_EVENTS, default 5,000). */
const EVENTS = Number(process.env.BENCH_CONTROLLER_EVENTS ?? 5000);

export interface ControllerFigures {
  label: string;
  machine: string;
  keys: number;
  revoke: { p50: number; p99: number; max: number };
  events: number;
  stored: number;
  eventsPerSecond: number;
  /** Pushes that did not arrive and were read by index instead (the board's get-event requests). */
  fetched: number;
}


const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function request(url: string, token: string, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/**
 * Counts the access log as it grows, reading only pages after the last one read (the next page of a full
 * page, or the last page again when it was not full), so the counting does not crowd out the writes it waits for.
 */
function eventCounter(url: string, token: string): () => Promise<number> {
  let counted = 0;
  let after: string | null = null;
  return async () => {
    for (;;) {
      const page = (await request(url, token, 'GET', `/v1/events?limit=200${after ? `&cursor=${encodeURIComponent(after)}` : ''}`)).body as {
        data: Array<{ id: number }>;
        next_cursor: string | null;
      };
      counted += page.data.length;
      if (!page.next_cursor) {
        // Not full: read again from the same place next time (what was counted of it is taken back).
        counted -= page.data.length;
        return counted + page.data.length;
      }
      after = page.next_cursor;
    }
  };
}

export async function controllerRuns(label: string, env: Record<string, string>): Promise<ControllerFigures> {
  const board = await startSimulatedController({ serial: 423000777 });
  const listen = `127.0.0.1:${await freeUdpPort()}`;
  const server = await startBenchService({ ...env, SANDBOX: 'false', CONTROLLER_LISTEN: listen, CONTROLLER_POLL_SECONDS: '5' });
  try {
    const account = await admin<{ id: number; root_location: { id: number } }>(server.url, 'POST', '/admin/v1/accounts', { name: 'Bench', locking_system: 'uhppote' });
    const root = account.root_location.id;
    await admin(server.url, 'POST', '/admin/v1/security_groups', { location_id: root, code: 'staff', title: 'Staff' });
    const lock = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/locks', { location_id: root, name: 'Front', security_groups: ['staff'] });
    await admin(server.url, 'POST', '/admin/v1/controllers', {
      location_id: root, name: 'Board', serial_number: board.serial, address: '127.0.0.1', port: board.address.port, door_locks: [{ door: 1, lock_id: lock.id }],
    });
    const key = await admin<{ token: string }>(server.url, 'POST', '/admin/v1/api_keys', { location_id: root, name: 'bench', scopes: ['keys:read', 'keys:write', 'events:read'] });
    const person = await admin<{ id: string }>(server.url, 'POST', '/admin/v1/people', { name: 'Bench Person', location_id: root });

    // Cards 1..KEYS+1 (facility 1); the last one stays for the swipes.
    const keyIds: number[] = [];
    for (let i = 1; i <= KEYS + 1; i++) {
      const made = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/keys', {
        person_id: person.id, type: 'card', name: `Card ${i}`, security_groups: ['staff'], credential: `wiegand26:1:${i}`,
      });
      keyIds.push(made.id);
    }
    const cardOf = (i: number) => 100000 + i + 1;
    const started = Date.now();
    while (board.cards.size < KEYS + 1 && Date.now() - started < 60_000) await sleep(20);
    if (board.cards.size < KEYS + 1) throw new Error(`only ${board.cards.size} cards reached the board`);

    // The moment each card leaves the board's list.
    const gone = new Map<number, number>();
    const remove = board.cards.delete.bind(board.cards);
    board.cards.delete = (card: number) => {
      gone.set(card, performance.now());
      return remove(card);
    };
    const latencies: number[] = [];
    for (let i = 0; i < KEYS; i++) {
      const t0 = performance.now();
      const res = await request(server.url, key.token, 'DELETE', `/v1/keys/${keyIds[i]}`);
      if (res.status !== 204) throw new Error(`DELETE answered ${res.status}`);
      const card = cardOf(i);
      const deadline = Date.now() + 10_000;
      while (!gone.has(card) && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
      if (!gone.has(card)) throw new Error(`card ${card} still on the board 10 s after its revocation`);
      latencies.push((gone.get(card) as number) - t0);
    }
    latencies.sort((a, b) => a - b);

    const swiped = cardOf(KEYS);
    const fetchedBefore = board.requests.get('get-event') ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < EVENTS; i++) {
      board.swipe(swiped, 1);
      if (i % 50 === 49) await new Promise((resolve) => setImmediate(resolve)); // let the socket send
    }
    const count = eventCounter(server.url, key.token);
    let stored = 0;
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      stored = await count();
      if (stored >= EVENTS) break;
      await sleep(250);
    }
    const seconds = (performance.now() - t0) / 1000;
    await sleep(1500); // a late duplicate would show here
    stored = await eventCounter(server.url, key.token)();
    return {
      label,
      machine: `${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`,
      keys: KEYS,
      revoke: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies.at(-1) as number) },
      events: EVENTS,
      stored,
      eventsPerSecond: Math.round(EVENTS / seconds),
      fetched: (board.requests.get('get-event') ?? 0) - fetchedBefore,
    };
  } finally {
    await stop(server);
    await board.close();
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;

export const CONTROLLER_NOTES = [
  'A simulated UHPPOTE board in the bench process (the real UDP packets), the service in its own process with its event',
  `listener on. Revocation: \`DELETE /v1/keys/{id}\` sent → the card gone from the board's list, ${KEYS} keys one after another.`,
  'Events: a burst of swipes recorded on the board as fast as it can, pushed to the listener; events/s is the burst over',
  'the time until every one is in `GET /v1/events` (counted by paging it); pushes the kernel dropped are read by index.',
].join('\n');

export function formatControllers(runs: ControllerFigures[]): string {
  return [
    '| | ' + runs.map((r) => r.label).join(' | ') + ' |',
    '|---|' + runs.map(() => '---:').join('|') + '|',
    `| \`DELETE /v1/keys/{id}\` → card gone from the board, p50 / p99 / max | ${runs.map((r) => `${r.revoke.p50} / ${r.revoke.p99} / ${r.revoke.max} ms`).join(' | ')} |`,
    `| swipes through the listener into the access log | ${runs.map((r) => `${r.eventsPerSecond} events/s`).join(' | ')} |`,
    `| stored of the burst (none lost, none twice) | ${runs.map((r) => `${r.stored} of ${r.events}`).join(' | ')} |`,
    `| pushes read by index instead (get-event) | ${runs.map((r) => String(r.fetched)).join(' | ')} |`,
  ].join('\n');
}
