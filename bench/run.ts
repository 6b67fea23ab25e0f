// npm run bench: the service runs in its own process; this process is the load generator (autocannon).
// Measures authenticated GET /v1/locks/{id} and GET /v1/locks?limit=50 on the embedded database and on
// PostgreSQL, beside a bare Fastify route serving the same bytes, and writes bench/RESULTS.md.
//
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the PostgreSQL server,
// BENCH_MQTT_URL the external broker of the second gateway run (by default a Mosquitto started here
// with the shipped deploy/mosquitto/mosquitto.conf, through test/helpers/mosquitto.ts);
// BENCH_SECONDS (default 10) the length of each run; BENCH_ONLY=reads, webhooks, devices, event-writes, access, console, holder or
// controllers runs only that section (bench/reads.ts, webhooks.ts, devices.ts, event-writes.ts, access.ts, console.ts, holder.ts,
// controllers.ts) and prints its figures.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { bareRun, PG_URL, type Measured } from './common.ts';
import { accessRuns, formatAccess, type AccessFigures } from './access.ts';
import { formatAccessLogScale, measureAccessLogScale } from './access-log-scale.ts';
import { consoleRuns } from './console.ts';
import { controllerRuns, formatControllers } from './controllers.ts';
import { startupRuns, startupSummary } from './startup.ts';
import { deviceRuns, externalBroker } from './devices.ts';
import { eventWriteRuns, formatEventWrites } from './event-writes.ts';
import { formatHolder, holderRuns } from './holder.ts';
import { formatLiveSite, liveSiteMachine, liveSiteRuns, type LiveSiteFigures } from './live-site.ts';
import { serviceRuns } from './reads.ts';
import { writeReport } from './report.ts';
import { webhookRuns } from './webhooks.ts';

/**
 * Access decisions on PostgreSQL through the embedded broker and through Mosquitto, and on embedded PGlite
 * (in a data directory of its own); `only` picks one of postgres, mosquitto, embedded.
 */
async function accessSection(pgUrl: string, dataDir: string, only?: string): Promise<AccessFigures[]> {
  const runs: AccessFigures[] = [];
  const log = (line: string) => console.log(line);
  const done = (run: AccessFigures) => {
    console.log(formatAccess([run])); // each run's figures as soon as it ends
    runs.push(run);
  };
  // BENCH_ACCESS_LIVE=1: every measure under a live site's load (issue 25: the decision paths keep their floors).
  const liveLoad = process.env.BENCH_ACCESS_LIVE === '1';
  const under = liveLoad ? ', under the live load' : '';
  if (!only || only === 'postgres') done(await accessRuns(`PostgreSQL, embedded broker${under}`, { kind: 'postgres', url: pgUrl }, undefined, { log, liveLoad }));
  if (!only || only === 'mosquitto') {
    const broker = await externalBroker();
    done(await accessRuns(`PostgreSQL, Mosquitto${under}`, { kind: 'postgres', url: pgUrl }, broker.url, { log, liveLoad }).finally(() => broker.stop()));
  }
  if (!only || only === 'embedded') {
    const dir = path.join(dataDir, 'access');
    done(await accessRuns(`embedded PGlite${under}`, { kind: 'embedded', dataDir: dir }, undefined, { log, liveLoad, fullList: process.env.BENCH_ACCESS_EMBEDDED_FULL !== '0' }));
  }
  return runs;
}

/** Bare Fastify serving each read's own bytes, per live-site run. */
async function sameBytesRuns(runs: LiveSiteFigures[]): Promise<Measured[][]> {
  const sameBytes: Measured[][] = [];
  for (const run of runs) {
    const measured: Measured[] = [];
    for (const body of run.bodies) measured.push(await bareRun('bare Fastify, the same bytes', body));
    sameBytes.push(measured);
  }
  return sameBytes;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'latchkey-bench-'));
  const schema = `lk_bench_${process.pid}`;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`CREATE SCHEMA ${schema}`);
  const pgUrl = new URL(PG_URL);
  pgUrl.searchParams.set('options', `-c search_path=${schema}`);

  try {
    if (process.env.BENCH_ONLY === 'reads') {
      // BENCH_READS=postgres, embedded or database-path (PostgreSQL, PAGE_CACHE_ENABLED=false) measures one only.
      const only = process.env.BENCH_READS;
      const results = [
        ...(!only || only === 'postgres' ? [await serviceRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() })] : []),
        ...(!only || only === 'database-path' ? [await serviceRuns('PostgreSQL, pages not cached', { DATABASE_URL: pgUrl.toString(), PAGE_CACHE_ENABLED: 'false' })] : []),
        ...(!only || only === 'embedded' ? [await serviceRuns('embedded', { DATA_DIR: dataDir })] : []),
      ];
      const bare = await bareRun('bare Fastify', (results[0] as { body: string }).body);
      for (const m of [bare, ...results.flatMap((r) => [r.one, r.locks, r.events, r.people, r.keys])]) {
        console.log(`${m.name.padEnd(44)} ${String(m.rps).padStart(6)} rps (${(m.rps / bare.rps).toFixed(2)})  p50 ${m.p50} p99 ${m.p99} ms  cpu ${m.cpu}  runs ${m.runs.join(' ')}`);
      }
      return;
    }
    // After a live site's log is seeded: server PostgreSQL's ANALYZE (autovacuum would run it within a
    // minute), or a wait for the embedded database's statistics job (every 15 s).
    const analyze = async () => void (await client.query(`ANALYZE ${schema}.access_events`));
    const statisticsJob = () => new Promise<void>((resolve) => setTimeout(resolve, 16_000));
    if (process.env.BENCH_ONLY === 'live-site') {
      // BENCH_LIVE=postgres, embedded or database-path (PostgreSQL, PAGE_CACHE_ENABLED=false) measures one only.
      const only = process.env.BENCH_LIVE;
      const runs = [
        ...(!only || only === 'postgres' ? [await liveSiteRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() }, analyze)] : []),
        ...(only === 'database-path' ? [await liveSiteRuns('PostgreSQL, pages not cached', { DATABASE_URL: pgUrl.toString(), PAGE_CACHE_ENABLED: 'false' }, analyze)] : []),
        ...(!only || only === 'embedded' ? [await liveSiteRuns('embedded', { DATA_DIR: path.join(dataDir, 'live') }, statisticsJob)] : []),
      ];
      const sameBytes = await sameBytesRuns(runs);
      console.log(liveSiteMachine());
      console.log(formatLiveSite(sameBytes, runs));
      return;
    }
    if (process.env.BENCH_ONLY === 'startup') {
      console.log(startupSummary(await startupRuns({ databaseUrl: pgUrl.toString(), runs: 7 })));
      return;
    }
    if (process.env.BENCH_ONLY === 'access-log') {
      console.log(formatAccessLogScale(await measureAccessLogScale({ log: console.log })));
      return;
    }
    if (process.env.BENCH_ONLY === 'console') {
      console.log(await consoleRuns(), await consoleRuns(pgUrl.toString()));
      return;
    }
    if (process.env.BENCH_ONLY === 'webhooks') {
      console.log(await webhookRuns(pgUrl.toString(), client, schema));
      return;
    }
    if (process.env.BENCH_ONLY === 'devices') {
      // A quick look at one section while working on it; RESULTS.md is only written by a full run.
      console.log(await deviceRuns(pgUrl.toString(), client, schema));
      const broker = await externalBroker();
      console.log(await deviceRuns(pgUrl.toString(), client, schema, broker.url).finally(() => broker.stop()));
      return;
    }
    if (process.env.BENCH_ONLY === 'event-writes') {
      // The write of a batch of door events, timed from its caller; BENCH_EVENT_WRITES=postgres or embedded measures one only.
      console.log(formatEventWrites(await eventWriteRuns(pgUrl.toString(), schema, path.join(dataDir, 'event-writes'), process.env.BENCH_EVENT_WRITES)));
      return;
    }
    if (process.env.BENCH_ONLY === 'holder') {
      // The key holder's taps on PostgreSQL; BENCH_HOLDER=embedded measures embedded PGlite instead, =both both.
      const which = process.env.BENCH_HOLDER ?? 'postgres';
      const runs = [
        ...(which === 'postgres' || which === 'both' ? [await holderRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() })] : []),
        ...(which === 'embedded' || which === 'both' ? [await holderRuns('embedded PGlite', { DATA_DIR: path.join(dataDir, 'holder') })] : []),
      ];
      console.log(runs[0]?.machine);
      console.log(formatHolder(runs));
      return;
    }
    if (process.env.BENCH_ONLY === 'controllers') {
      const runs = [await controllerRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() }), await controllerRuns('embedded PGlite', { DATA_DIR: path.join(dataDir, 'controllers') })];
      console.log(runs[0]?.machine);
      console.log(formatControllers(runs));
      return;
    }
    if (process.env.BENCH_ONLY === 'access') {
      // BENCH_ACCESS=postgres, mosquitto or embedded measures one only.
      console.log(formatAccess(await accessSection(pgUrl.toString(), dataDir, process.env.BENCH_ACCESS)));
      return;
    }
    console.log('start-up and idle memory …');
    const startup = await startupRuns({ databaseUrl: pgUrl.toString(), runs: 7 });
    console.log('embedded PGlite …');
    const embedded = await serviceRuns('embedded', { DATA_DIR: dataDir });
    console.log('PostgreSQL …');
    const server = await serviceRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() });
    console.log('PostgreSQL, pages not cached …');
    const databasePath = await serviceRuns('PostgreSQL, pages not cached', { DATABASE_URL: pgUrl.toString(), PAGE_CACHE_ENABLED: 'false' });
    console.log('the access log at scale (10 million events; built once, then reused) …');
    const accessLogScale = await measureAccessLogScale({ log: console.log });
    console.log('webhooks on PostgreSQL …');
    const hooks = await webhookRuns(pgUrl.toString(), client, schema);
    console.log('gateways on PostgreSQL …');
    const devices = await deviceRuns(pgUrl.toString(), client, schema);
    console.log('gateways on PostgreSQL through Mosquitto …');
    const broker = await externalBroker();
    const viaMosquitto = await deviceRuns(pgUrl.toString(), client, schema, broker.url).finally(() => broker.stop());
    console.log('access decisions …');
    const access = await accessSection(pgUrl.toString(), dataDir);
    console.log("the key holder's taps …");
    const holder = [await holderRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() })];
    console.log('UHPPOTE controllers …');
    const controllers = [await controllerRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() }), await controllerRuns('embedded PGlite', { DATA_DIR: path.join(dataDir, 'controllers') })];
    console.log('console start-up and memory …');
    const consoleCost = { embedded: await consoleRuns(), postgres: await consoleRuns(pgUrl.toString()) };
    console.log('a live site …');
    const liveRuns = [await liveSiteRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() }, analyze), await liveSiteRuns('embedded', { DATA_DIR: path.join(dataDir, 'live') }, statisticsJob)];
    const liveSite = { sameBytes: await sameBytesRuns(liveRuns), runs: liveRuns };
    console.log('bare Fastify …');
    const bare = await bareRun('bare Fastify, one lock\'s bytes, no auth', server.body);
    const barePage = await bareRun('bare Fastify, a page of 50 locks\' bytes', server.pageBody);

    console.log(await writeReport({ bare, barePage, embedded, server, databasePath, accessLogScale, startup, hooks, devices, viaMosquitto, access, consoleCost, holder, controllers, liveSite }));
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
