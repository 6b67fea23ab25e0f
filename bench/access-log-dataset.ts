// The access log at scale: a PostgreSQL database holding one account with 100 locations (a small tree),
// 1,000 locks, 5,000 people with a key each and N access events spread over a year, built in SQL
// (INSERT … SELECT generate_series, indexes after the load) and reused when already complete.
//
//   npx tsx bench/access-log-dataset.ts            the 10-million-event database latchkey_bench_10m
//   npx tsx bench/access-log-dataset.ts --small    the 1,000-event comparison database latchkey_bench_1k
//
// The schema comes from the project's own migrations (run every time: a new migration is applied to the
// existing data, without the service's start-up time limit).
import pg from 'pg';
import { migrateDatabase } from '../src/platform/db/index.ts';

export interface DatasetSpec {
  database: string;
  events: number;
  /** Seconds between the first and the last event (ending now). */
  spanSeconds: number;
  /** Events use the first `locks` locks and `people` people only (the small set: full pages for every filter). */
  locks: number;
  people: number;
}

const YEAR = 365 * 24 * 3600;
export const LARGE: DatasetSpec = { database: 'latchkey_bench_10m', events: 10_000_000, spanSeconds: YEAR, locks: 1000, people: 5000 };
// 1,000 events over the last two hours on 10 locks and 10 people: each query of the measurement fills a page
// of 50 here as on the large set, so the comparison is of the data's size, not of the answer's.
export const SMALL: DatasetSpec = { database: 'latchkey_bench_1k', events: 1000, spanSeconds: 2 * 3600, locks: 10, people: 10 };

const LOCATIONS = 100; // root, 9 sites, 10 floors each
const ALL_LOCKS = 1000;
const ALL_PEOPLE = 5000;
const CHUNK = 1_000_000;
const MARKER = (spec: DatasetSpec) => `latchkey access-log dataset v2: ${spec.events} events`;

export function serverUrl(database: string): string {
  const base = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = `/${database}`;
  return base.toString();
}

export interface Dataset {
  url: string;
  events: number;
  /** The id of the middle event (a page deep into the cursor starts after it). */
  middleId: number;
  /** The busiest lock and person among those the events use (the filters' values). */
  lockId: number;
  personId: string;
  builtSeconds: number;
  reused: boolean;
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

async function describe(client: pg.Client, url: string, builtSeconds: number, reused: boolean): Promise<Dataset> {
  const { rows } = await client.query<{ n: string; mid: string; lock_id: string; person_id: string }>(
    `SELECT (SELECT count(*) FROM access_events) AS n,
            (SELECT id FROM access_events ORDER BY id OFFSET (SELECT count(*) / 2 FROM access_events) LIMIT 1) AS mid,
            (SELECT min(id) FROM locks) AS lock_id,
            (SELECT id FROM people ORDER BY created_at, id LIMIT 1) AS person_id`,
  );
  const row = rows[0] as { n: string; mid: string; lock_id: string; person_id: string };
  return { url, events: Number(row.n), middleId: Number(row.mid), lockId: Number(row.lock_id), personId: row.person_id, builtSeconds, reused };
}

/** Builds the data set unless the database already holds it complete; migrates it either way. */
export async function buildDataset(spec: DatasetSpec = LARGE, log: (line: string) => void = console.log): Promise<Dataset> {
  const started = performance.now();
  const admin = await connect(serverUrl('postgres'));
  try {
    const { rows } = await admin.query<{ marker: string | null }>(
      "SELECT shobj_description(oid, 'pg_database') AS marker FROM pg_database WHERE datname = $1",
      [spec.database],
    );
    // A database without the marker is an interrupted build (its indexes may be dropped): start again.
    if (rows.length > 0 && rows[0]?.marker !== MARKER(spec)) await admin.query(`DROP DATABASE ${spec.database} WITH (FORCE)`);
    if (rows.length === 0 || rows[0]?.marker !== MARKER(spec)) await admin.query(`CREATE DATABASE ${spec.database}`);
  } finally {
    await admin.end();
  }
  const url = serverUrl(spec.database);
  const applied = await migrateDatabase({ databaseUrl: url, dataDir: '', databaseTimeoutSeconds: 3600 });
  if (applied.length > 0) log(`${spec.database}: applied migrations ${applied.join(', ')} in ${((performance.now() - started) / 1000).toFixed(1)} s`);

  const client = await connect(url);
  try {
    const { rows } = await client.query<{ marker: string | null }>(
      'SELECT shobj_description(oid, $1) AS marker FROM pg_database WHERE datname = current_database()',
      ['pg_database'],
    );
    if (rows[0]?.marker === MARKER(spec)) {
      const seconds = (performance.now() - started) / 1000;
      log(`${spec.database}: reused (${spec.events} events) in ${seconds.toFixed(1)} s`);
      return await describe(client, url, seconds, true);
    }
    await fill(client, spec, log);
    await client.query(`COMMENT ON DATABASE ${spec.database} IS '${MARKER(spec)}'`);
    const seconds = (performance.now() - started) / 1000;
    log(`${spec.database}: built ${spec.events} events in ${seconds.toFixed(1)} s`);
    return await describe(client, url, seconds, false);
  } finally {
    await client.end();
  }
}

async function fill(client: pg.Client, spec: DatasetSpec, log: (line: string) => void): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const t = performance.now();
    await client.query(sql, params);
    log(`  ${what}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  };
  // Generated rows are consistent by construction: no foreign-key or trigger work per row (the console's
  // NOTIFY trigger would otherwise hold every row of a statement in its transition table).
  await client.query("SET session_replication_role = 'replica'");
  await client.query("SET maintenance_work_mem = '512MB'");
  await client.query('TRUNCATE access_events, keys, people, locks, gateways, api_keys, locations, accounts RESTART IDENTITY CASCADE');

  await step(
    'account, locations, gateways, locks, people, keys',
    `WITH acc AS (INSERT INTO accounts (name, created_at) VALUES ('Bench', now() - interval '2 years') RETURNING id)
     INSERT INTO locations (id, account_id, parent_id, name, path, created_at) OVERRIDING SYSTEM VALUE
     SELECT n, (SELECT id FROM acc),
            CASE WHEN n = 1 THEN NULL WHEN n <= 10 THEN 1 ELSE 2 + (n - 11) / 10 END,
            CASE WHEN n = 1 THEN 'Head office' WHEN n <= 10 THEN 'Site ' || (n - 1) ELSE 'Site ' || (1 + (n - 11) / 10) || ' floor ' || ((n - 11) % 10) END,
            CASE WHEN n = 1 THEN ARRAY[1]::bigint[] WHEN n <= 10 THEN ARRAY[1, n]::bigint[] ELSE ARRAY[1, 2 + (n - 11) / 10, n]::bigint[] END,
            now() - interval '2 years'
       FROM generate_series(1, ${LOCATIONS}) AS n;
     SELECT setval(pg_get_serial_sequence('locations', 'id'), ${LOCATIONS});
     INSERT INTO gateways (id, location_id, name, mqtt_username, password_hash, created_at) OVERRIDING SYSTEM VALUE
     SELECT n - 1, n, 'Gateway ' || (n - 1), 'gw-' || (n - 1), 'x', now() - interval '2 years' FROM generate_series(2, ${LOCATIONS}) AS n;
     SELECT setval(pg_get_serial_sequence('gateways', 'id'), ${LOCATIONS - 1});
     INSERT INTO locks (id, location_id, name, place, provider, gateway_id, created_at) OVERRIDING SYSTEM VALUE
     SELECT n, 2 + (n - 1) % ${LOCATIONS - 1}, 'Door ' || n, 'Entrance ' || (n % 7), 'gateway', 1 + (n - 1) % ${LOCATIONS - 1}, now() - interval '2 years'
       FROM generate_series(1, ${ALL_LOCKS}) AS n;
     SELECT setval(pg_get_serial_sequence('locks', 'id'), ${ALL_LOCKS});
     INSERT INTO people (id, account_id, location_id, name, email, created_at, updated_at)
     SELECT gen_random_uuid(), 1, 2 + (n - 1) % ${LOCATIONS - 1}, 'Person ' || n, 'person' || n || '@example.com',
            now() - interval '2 years' + n * interval '1 second', now() - interval '2 years'
       FROM generate_series(1, ${ALL_PEOPLE}) AS n;
     INSERT INTO keys (id, account_id, person_id, type, name, state, security_groups, starts_at, created_at, updated_at) OVERRIDING SYSTEM VALUE
     SELECT row_number() OVER (ORDER BY created_at, id), 1, id, 'digital', 'Phone key', 'handed_over', '{}', created_at, created_at, created_at FROM people;
     SELECT setval(pg_get_serial_sequence('keys', 'id'), ${ALL_PEOPLE});`,
  );

  // Load without the secondary indexes and constraints of access_events, then build them once.
  const { rows: indexes } = await client.query<{ name: string; def: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
      WHERE x.indrelid = 'access_events'::regclass
        AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)`,
  );
  const { rows: constraints } = await client.query<{ name: string; def: string }>(
    `SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE conrelid = 'access_events'::regclass AND contype IN ('p', 'u')`,
  );
  for (const i of indexes) await client.query(`DROP INDEX ${i.name}`);
  for (const c of constraints) await client.query(`ALTER TABLE access_events DROP CONSTRAINT ${c.name}`);

  // Events: written in id order as the service appends them (heap order follows id, as in production),
  // the lock and person drawn by a hash of n, ids in order of receipt, occurred_at a gateway's clock
  // (up to a few seconds off, so not monotonic in id). 68% granted, 10% denied (a fifth by an unknown key),
  // 20% closed, 2% left open; a door event carries the person of an opening, as the writer stores it.
  const people = `(SELECT row_number() OVER (ORDER BY p.created_at, p.id) AS n, p.id, p.name, p.email, k.id AS key_id, k.name AS key_name
                     FROM people p JOIN keys k ON k.person_id = p.id)`;
  for (let from = 1; from <= spec.events; from += CHUNK) {
    const to = Math.min(spec.events, from + CHUNK - 1);
    await step(
      `events ${from}–${to}`,
      `INSERT INTO access_events (id, account_id, location_id, lock_id, gateway_id, gateway_event_id, type, occurred_at, person_id, key_id, data)
         OVERRIDING SYSTEM VALUE
       SELECT e.n, 1, k.location_id, k.id, k.gateway_id, 'ev-' || e.n, e.type, e.at,
              CASE WHEN e.known THEN p.id END, CASE WHEN e.known THEN p.key_id END,
              jsonb_build_object(
                'id', e.n, 'type', e.type, 'occurred_at', to_char(e.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'result', CASE WHEN e.type = 'access.denied' THEN 'denied' ELSE 'success' END,
                'reason', CASE WHEN NOT e.known THEN 'unknown_key' WHEN e.type = 'access.denied' THEN 'outside_schedule' END,
                'source', 'gateway', 'api_key', NULL,
                'lock', jsonb_build_object('id', k.id, 'name', k.name, 'place', k.place),
                'location', jsonb_build_object('id', l.id, 'name', l.name),
                'person', CASE WHEN e.known THEN jsonb_build_object('id', p.id, 'name', p.name, 'email', p.email) END,
                'key', CASE WHEN e.known THEN jsonb_build_object('id', p.key_id, 'name', p.key_name) END)
         FROM (SELECT n,
                      1 + abs(hashint8(n)::bigint) % $1 AS lock_n,
                      1 + abs(hashint8(n + 1000000000000)::bigint) % $2 AS person_n,
                      t.type,
                      NOT (t.type = 'access.denied' AND abs(hashint8(n + 3000000000000)::bigint) % 5 = 0) AS known,
                      now() - make_interval(secs => $3::float8 * ($4 - n) / $4) + make_interval(secs => ((abs(hashint8(n + 4000000000000)::bigint) % 5000) / 1000.0 - 2.5)::float8) AS at
                 FROM generate_series($5::bigint, $6::bigint) AS n
                 CROSS JOIN LATERAL (SELECT CASE WHEN b < 68 THEN 'access.granted' WHEN b < 78 THEN 'access.denied'
                                                 WHEN b < 98 THEN 'door.closed' ELSE 'door.left_open' END AS type
                                       FROM (SELECT abs(hashint8(n + 2000000000000)::bigint) % 100 AS b) AS h) AS t) AS e
         JOIN locks k ON k.id = e.lock_n
         JOIN locations l ON l.id = k.location_id
         JOIN ${people} AS p ON p.n = e.person_n
        ORDER BY e.n`,
      [spec.locks, spec.people, spec.spanSeconds, spec.events, from, to],
    );
  }
  await client.query(`SELECT setval(pg_get_serial_sequence('access_events', 'id'), ${spec.events})`);
  for (const c of constraints) await step(`constraint ${c.name}`, `ALTER TABLE access_events ADD CONSTRAINT ${c.name} ${c.def}`);
  for (const i of indexes) await step(`index ${i.name}`, i.def);
  await step('vacuum analyze', 'VACUUM (ANALYZE) access_events');
  await client.query('ANALYZE');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const spec = process.argv.includes('--small') ? SMALL : LARGE;
  buildDataset(spec)
    .then((d) => console.log(JSON.stringify(d)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}
