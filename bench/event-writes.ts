// The write of a batch of door events (AccessLogWriter.ingestBatch: the batch's reads, then the one statement that
// stores the entries with their webhook events), timed from its caller, on PostgreSQL and on embedded PGlite: the
// unit a gateway's burst is made of. The service in its own process makes the site (account, gateway, lock, a
// person with a card) and stops; this process then opens the same database and writes batches of 1, 8, 64 and
// 300 events in turn, the log growing as it does in a burst (a mix of openings, refusals of an unknown card and
// closings), on a young log and on one of 20,000 events.
//
//   BENCH_ONLY=event-writes npm run bench        BENCH_EVENT_WRITES=postgres or embedded measures one only
import path from 'node:path';
import pino from 'pino';
import { AccessLogWriter, type GatewayEvent } from '../src/modules/events/index.ts';
import { systemClock } from '../src/platform/clock.ts';
import type { Database } from '../src/platform/db/index.ts';
import { openPglite } from '../src/platform/db/pglite.ts';
import { openPostgres } from '../src/platform/db/postgres.ts';
import { admin, percentile, startBenchService, stop } from './common.ts';

/** Batch sizes written, each `WRITES` times after a warm-up: a lone event, a trickle, a gateway's window, a burst's batch. */
const SIZES = [1, 8, 64, 300] as const;
const WRITES = { postgres: 100, embedded: 40 } as const;
const WARM_UP = 20;
/**
 * The log's length before each round of timed writes: a young log (the warm-up's events only) and a site some
 * days old, its planner statistics not yet taken again (the planner's choices differ between the two).
 */
const LOGGED = [0, 20_000] as const;

export interface EventWriteFigures {
  database: string;
  rounds: Array<{
    /** Events in the log when the round's first timed write began. */
    logged: number;
    sizes: Array<{ size: number; writes: number; p50: number; p90: number; perEventUs: number }>;
  }>;
}

interface Site {
  gatewayId: number;
  lockId: number;
  cardId: number;
}

/** The site, made through the operator API of a service on `env`'s database, which is stopped afterwards. */
async function makeSite(env: Record<string, string>): Promise<Site> {
  const server = await startBenchService({ SANDBOX: 'false', ...env });
  try {
    const account = await admin<{ root_location: { id: number } }>(server.url, 'POST', '/admin/v1/accounts', { name: 'Event writes' });
    const location = account.root_location.id;
    const gateway = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/gateways', { location_id: location, name: 'gw' });
    const lock = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/locks', { location_id: location, name: 'Door', gateway_id: gateway.id });
    const person = await admin<{ id: string }>(server.url, 'POST', '/admin/v1/people', { name: 'Bench Walker', location_id: location });
    const card = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/keys', { person_id: person.id, type: 'card', name: 'badge' });
    return { gatewayId: gateway.id, lockId: lock.id, cardId: card.id };
  } finally {
    await stop(server);
  }
}

async function timeWrites(database: string, db: Database, site: Site, writes: number): Promise<EventWriteFigures> {
  const writer = new AccessLogWriter(db, systemClock, pino({ level: 'silent' }));
  let sequence = 0;
  const batch = (size: number): GatewayEvent[] =>
    Array.from({ length: size }, (): GatewayEvent => {
      const id = `w${sequence}`;
      const kind = sequence++ % 3;
      const occurred_at = new Date().toISOString();
      if (kind === 0) return { id, lock_id: site.lockId, type: 'access.granted', occurred_at, key_id: site.cardId, reason: null };
      if (kind === 1) return { id, lock_id: site.lockId, type: 'door.closed', occurred_at, key_id: null, reason: null };
      return { id, lock_id: site.lockId, type: 'access.denied', occurred_at, key_id: 999_999_999, reason: 'no_access' };
    });
  for (let i = 0; i < WARM_UP; i++) await writer.ingestBatch(site.gatewayId, batch(64));
  const rounds: EventWriteFigures['rounds'] = [];
  for (const atLeast of LOGGED) {
    while (sequence < atLeast) await writer.ingestBatch(site.gatewayId, batch(500));
    const logged = sequence;
    const sizes: EventWriteFigures['rounds'][number]['sizes'] = [];
    for (const size of SIZES) {
      const times: number[] = [];
      for (let i = 0; i < writes; i++) {
        const started = performance.now();
        await writer.ingestBatch(site.gatewayId, batch(size));
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      const p50 = percentile(times, 50);
      sizes.push({ size, writes, p50: Math.round(p50 * 100) / 100, p90: Math.round(percentile(times, 90) * 100) / 100, perEventUs: Math.round((p50 * 1000) / size) });
    }
    rounds.push({ logged, sizes });
  }
  return { database, rounds };
}

/** PostgreSQL at `pgUrl` (its search_path the bench's schema), then embedded PGlite in `dataDir`; `only` picks one. */
export async function eventWriteRuns(pgUrl: string, schema: string, dataDir: string, only?: string): Promise<EventWriteFigures[]> {
  const runs: EventWriteFigures[] = [];
  if (!only || only === 'postgres') {
    const site = await makeSite({ DATABASE_URL: pgUrl });
    const db = await openPostgres({ connectionString: pgUrl, schema });
    try {
      runs.push(await timeWrites('PostgreSQL', db, site, WRITES.postgres));
    } finally {
      await db.close();
    }
  }
  if (!only || only === 'embedded') {
    const site = await makeSite({ DATA_DIR: dataDir });
    const db = await openPglite({ dataDir: path.join(dataDir, 'pg') }); // where the service keeps it (DATA_DIR/pg)
    try {
      runs.push(await timeWrites('embedded PGlite', db, site, WRITES.embedded));
    } finally {
      await db.close();
    }
  }
  return runs;
}

export function formatEventWrites(runs: EventWriteFigures[]): string {
  return [
    '| database | events in the log before | batch of | writes | p50 ms | p90 ms | per event, at p50 |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...runs.flatMap((run) =>
      run.rounds.flatMap((round) => round.sizes.map((s) => `| ${run.database} | ${round.logged} | ${s.size} | ${s.writes} | ${s.p50} | ${s.p90} | ${s.perEventUs} µs |`)),
    ),
  ].join('\n');
}
