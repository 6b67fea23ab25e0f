// npm run bench: the service runs in its own process; this process is the load generator (autocannon).
// Measures authenticated GET /v1/locks/{id} and GET /v1/locks?limit=50 on the embedded database and on
// PostgreSQL, beside a bare Fastify route serving the same bytes, and writes bench/RESULTS.md.
//
// BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the PostgreSQL server,
// BENCH_MQTT_URL the external broker of the second gateway run (by default a Mosquitto started here
// with the shipped deploy/mosquitto/mosquitto.conf, through test/helpers/mosquitto.ts);
// BENCH_SECONDS (default 10) the length of each run; BENCH_ONLY=reads, webhooks, devices or console runs only that
// section (bench/reads.ts, webhooks.ts, devices.ts, console.ts) and prints its figures.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startServiceProcess } from '../test/helpers/process.ts';
import { load, PG_URL, stop } from './common.ts';
import { consoleRuns } from './console.ts';
import { deviceRuns, externalBroker } from './devices.ts';
import { serviceRuns } from './reads.ts';
import { writeReport } from './report.ts';
import { webhookRuns } from './webhooks.ts';

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
      console.log(await serviceRuns('embedded', { DATA_DIR: dataDir }), await serviceRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() }));
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
    console.log('embedded PGlite …');
    const embedded = await serviceRuns('embedded', { DATA_DIR: dataDir });
    console.log('PostgreSQL …');
    const server = await serviceRuns('PostgreSQL', { DATABASE_URL: pgUrl.toString() });
    console.log('webhooks on PostgreSQL …');
    const hooks = await webhookRuns(pgUrl.toString(), client, schema);
    console.log('gateways on PostgreSQL …');
    const devices = await deviceRuns(pgUrl.toString(), client, schema);
    console.log('gateways on PostgreSQL through Mosquitto …');
    const broker = await externalBroker();
    const viaMosquitto = await deviceRuns(pgUrl.toString(), client, schema, broker.url).finally(() => broker.stop());
    console.log('console start-up and memory …');
    const consoleCost = { embedded: await consoleRuns(), postgres: await consoleRuns(pgUrl.toString()) };
    console.log('bare Fastify …');
    const bareServer = await startServiceProcess({ BARE_BODY: server.body }, 'bench/bare-server.ts');
    const bare = await load('bare Fastify, same bytes, no auth', `${bareServer.url}/v1/locks/1`, null).finally(() => stop(bareServer));

    console.log(await writeReport({ bare, embedded, server, hooks, devices, viaMosquitto, consoleCost }));
  } finally {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
