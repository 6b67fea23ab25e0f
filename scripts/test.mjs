// npm test: every test file on the embedded database (PGlite) and, when TEST_DATABASE_URL is set, again on
// server PostgreSQL. Arguments are test files or folders of them (`npm test -- test/access`); arguments that
// start with `-` go to node --test as they are.
//
// Wall time on a small machine: each test file is a process of its own with a database of its own (a PGlite in
// memory, or a schema of its own on PostgreSQL) listening on free ports, so files do not see each other, and
// most of their time is spent waiting (timers, sockets, child processes). So the files of both backends share
// one pool of LATCHKEY_TEST_JOBS processes (default: twice the cores), the longest first (durations of the
// last run are kept in node_modules/.cache/latchkey/test-durations.json); the pure tier (test/unit) runs
// once, on PGlite, since it uses no database, and so do the files in ONE_BACKEND whose subject does not
// depend on it (clients, the console in a browser, the HTTP edge). The files in SERIAL then run one at a time with nothing
// beside them. Each file's report is printed whole when it ends, headed by its backend, file and duration;
// the failures are listed again at the end.
//
// CPU per file: the two cores are saturated while the pool runs, so a file's start-up costs wall time. The
// test files are first bundled by esbuild (scripts/test-bundle.mjs, about 1.5 s for all of them, npm packages
// left external) and each bundle runs under plain `node --test`: through tsx, every module a file loads passes
// through tsx's hooks on a thread of their own. Measured on the 2-core machine beside another workload (so the
// figures are high): a light file's imports took 3.6-4.1 s of CPU through tsx, 1.4-1.7 s bundled. The rest of a
// start is the file's own either way: a PGlite from the migrated template (1.7-2.1 s, PostgreSQL starting inside
// WebAssembly and the template unpacked into its memory file system) and the service (1.6-2.1 s then, most of it
// Fastify compiling each route's validator and serializer, which now happens at a route's first request only:
// src/platform/validation.ts). Still a process per file: files keep their own modules, process.env and hooks.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { bundleTests } from './test-bundle.mjs';

/** Files (or folders, ending in /) that must run alone, with the reason. */
const SERIAL = {
  'test/faults/': 'stops, freezes or kills a server (Mosquitto, PostgreSQL, Redis, an instance) and times the recovery in seconds',
  'test/webhooks/window.test.ts': 'its 300 HTTPS deliveries must all land within the 2.5 s a slow receiver takes, which a shared CPU misses',
  // Gateway topics are latchkey/gateways/<id>/…, and every test database numbers its gateways from 1.
  'test/devices/presence.test.ts': "its gateways on the shared broker (TEST_MQTT_URL) would hear other files' gateways of the same id",
  'test/devices/instances.test.ts': "its gateways on the shared broker (TEST_MQTT_URL) would hear other files' gateways of the same id",
  'test/access/instances.test.ts': "its gateways on the shared broker (TEST_MQTT_URL) would hear other files' gateways of the same id",
};
/**
 * Seconds a file took on this project's 2-core CI machine (embedded PGlite), for the files over 15 s: the order
 * of a run with no durations of its own yet (after npm ci). An order only: a stale figure costs wall time, never
 * a test.
 */
const EXPECTED = {
  'test/webhooks/crash.test.ts': 61, 'test/devices/crash-events.test.ts': 48, 'test/console/browser.test.ts': 36,
  'test/devices/crash-results.test.ts': 32, 'test/platform/main.test.ts': 30, 'test/devices/broker-credentials.test.ts': 26,
  'test/access/gateway-access.test.ts': 25, 'test/webhooks/webhooks.test.ts': 24, 'test/platform/data-dir-lock.test.ts': 20,
  'test/console/operator-day.test.ts': 20, 'test/sdk/retries.test.ts': 20, 'test/console/session.test.ts': 19,
  'test/platform/properties.test.ts': 19, 'test/cli/public.test.ts': 17, 'test/webhooks/window.test.ts': 17,
  'test/console/access.test.ts': 17, 'test/devices/broker.test.ts': 16, 'test/platform/api-docs-browser.test.ts': 16,
};
/**
 * CPU-bound files with deadlines of their own: they run beside light files but never beside one another
 * (either backend), or two of them starve each other past their timeouts on a 2-core machine.
 */
const HEAVY = {
  'test/devices/crash-events.test.ts': 'a burst of 10,000 door events, the service killed and restarted',
  'test/devices/crash-results.test.ts': 'a burst of unlock results, the service killed and restarted',
  'test/webhooks/crash.test.ts': 'a burst of webhook deliveries, the service killed and restarted',
  'test/console/browser.test.ts': 'Chromium',
  'test/platform/api-docs-browser.test.ts': 'Chromium',
  'test/cli/operator.test.ts': 'a CLI process (tsx) per command',
  'test/cli/public.test.ts': 'a CLI process (tsx) per command',
  'test/platform/main.test.ts': 'the service started as a process, again and again',
};
/** Uses no database: runs on the first backend only. */
const PURE = 'test/unit/';
/**
 * Files (or folders, ending in /) that run on one backend only, with the reason. `pglite` or `postgres`: what
 * they test exists on that backend alone. `first`: what they test does not depend on the database (the
 * clients, the console's pages in a browser, the HTTP edge before any query), and the API calls they make
 * run on both backends in the API's own files; a second pass would repeat them, so they run once, on the
 * first backend (embedded PGlite, the default). Every test still runs.
 */
const ONE_BACKEND = {
  'test/cli/': ['first', "the CLI's parsing, output and exit codes"],
  'test/sdk/': ['first', "the SDK's client behaviour and its generated types"],
  'test/console/access.test.ts': ['first', 'console pages in Chromium'],
  'test/console/assets.test.ts': ['first', "the console's bundle and headers"],
  'test/console/browser.test.ts': ['first', 'console pages in Chromium'],
  'test/console/controllers.test.ts': ['first', 'console pages in Chromium'],
  'test/console/devices.test.ts': ['first', 'console pages in Chromium'],
  'test/console/operator-day.test.ts': ['first', 'console pages in Chromium'],
  'test/console/site.test.ts': ['first', 'console pages in Chromium'],
  'test/platform/api-docs.test.ts': ['first', 'the reference pages'],
  'test/platform/api-docs-browser.test.ts': ['first', 'the reference pages in Chromium'],
  'test/platform/client-types.test.ts': ['first', 'generated files against the OpenAPI documents'],
  'test/platform/config.test.ts': ['first', 'the environment parser'],
  'test/platform/deploy.test.ts': ['first', 'the deployment files'],
  'test/platform/framework-errors.test.ts': ['first', "the router's and parser's answers, before any query"],
  'test/platform/json-bodies.test.ts': ['first', 'body parsing, before any query'],
  'test/platform/log-context.test.ts': ['first', 'log lines'],
  'test/platform/logging.test.ts': ['first', 'log lines'],
  'test/platform/openapi.test.ts': ['first', 'the documents made from the route schemas'],
  'test/platform/schemas-compile.test.ts': ['first', 'the route schemas compiled, no query'],
  'test/platform/start-bundle.test.ts': ['first', "npm start's bundle"],
  'test/platform/trust-proxy.test.ts': ['first', 'client addresses behind proxies, limited in memory'],
  'test/platform/pglite-embedded.test.ts': ['pglite', 'PGlite itself'],
  'test/platform/migrated-template.test.ts': ['pglite', "the embedded first start's migrated cluster"],
  'test/platform/data-dir-lock.test.ts': ['pglite', 'the embedded data directory'],
  'test/platform/move-to-postgres.test.ts': ['postgres', 'moves an embedded store to server PostgreSQL'],
};

function testFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return testFiles(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}
const relative = (file) => path.relative(process.cwd(), path.resolve(file)).split(path.sep).join('/');

const args = process.argv.slice(2);
const nodeFlags = args.filter((arg) => arg.startsWith('-'));
const named = args.filter((arg) => !arg.startsWith('-'));
const files = (named.length > 0 ? named : ['test']).flatMap((arg) => (statSync(arg).isDirectory() ? testFiles(arg).sort() : [arg])).map(relative);
const isSerial = (file) => Object.keys(SERIAL).some((key) => (key.endsWith('/') ? file.startsWith(key) : file === key));

const backends = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])];
const label = { pglite: 'embedded PGlite', postgres: 'PostgreSQL' };
const jobs = Math.max(1, Number(process.env.LATCHKEY_TEST_JOBS) || 2 * availableParallelism());
const reporter = nodeFlags.some((flag) => flag.startsWith('--test-reporter')) ? [] : ['--test-reporter=spec'];

const durationsFile = path.resolve('node_modules/.cache/latchkey/test-durations.json');
let lastDurations = {};
try {
  lastDurations = JSON.parse(readFileSync(durationsFile, 'utf8'));
} catch {
  // first run: files start in name order
}

/** One file on one backend: node --test in a process of its own, its report collected. */
function runFile({ backend, file }) {
  const started = Date.now();
  // On Node 20, --test-timeout under --test bounds the whole file (checked: a file of two 1.5 s tests fails at
  // 2 s), not each test. The longest file takes about 60 s alone and two to three times that beside others, so
  // the bound is 300 s a file; tests that need a bound of their own set `timeout`.
  // The file's bundle (scripts/test-bundle.mjs) under plain Node; source maps keep stack traces on the .ts lines.
  const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-timeout=300000', ...reporter, ...nodeFlags, bundles.get(file)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: '1' } : {}),
      LATCHKEY_TEST_BACKEND: backend,
      // The webhook tests' local HTTPS receiver uses a self-signed certificate (test fixture), trusted the way
      // an operator would trust a private CA.
      NODE_EXTRA_CA_CERTS: path.resolve('test/fixtures/tls/cert.pem'),
    },
  });
  const out = [];
  child.stdout.on('data', (chunk) => out.push(chunk));
  child.stderr.on('data', (chunk) => out.push(chunk));
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      const report = Buffer.concat(out).toString();
      // The spec reporter's closing counts (`ℹ pass 12`).
      const count = (name) => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(stripVTControlCharacters(report))?.[1] ?? 0);
      resolve({ backend, file, code: code ?? (signal ? 1 : 0), seconds: (Date.now() - started) / 1000, report, pass: count('pass'), fail: count('fail'), skipped: count('skipped') });
    }),
  );
}

const results = [];
function print(result, alone) {
  const status = result.code === 0 ? 'passed' : 'FAILED';
  console.log(`\n# ${status}  ${label[result.backend]}  ${result.file}  ${result.seconds.toFixed(1)} s${alone ? ' (alone)' : ''}\n`);
  process.stdout.write(result.report);
}

/** Runs `list` through `width` processes at a time, the longest (by the last run) first. */
async function runPool(list, width, alone) {
  const expected = (job) => lastDurations[`${job.backend} ${job.file}`] ?? EXPECTED[job.file] ?? 5;
  const queue = [...list].sort((a, b) => expected(b) - expected(a));
  let heavyRunning = false;
  const runningFiles = new Set();
  // The next job: the longest waiting, but not a heavy one while a heavy one runs, nor a file running on the
  // other backend (the same load twice at once).
  const next = () => {
    const i = queue.findIndex((job) => !(heavyRunning && HEAVY[job.file]) && !runningFiles.has(job.file));
    return i === -1 ? undefined : queue.splice(i, 1)[0];
  };
  const wake = new Set();
  const worker = async () => {
    while (queue.length > 0) {
      const job = next();
      if (!job) {
        await new Promise((resolve) => wake.add(resolve)); // nothing that may start now: wait for a job to end
        continue;
      }
      const heavy = Boolean(HEAVY[job.file]);
      if (heavy) heavyRunning = true;
      runningFiles.add(job.file);
      const result = await runFile(job);
      runningFiles.delete(job.file);
      if (heavy) heavyRunning = false;
      for (const resolve of wake) resolve();
      wake.clear();
      results.push(result);
      print(result, alone);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));
}

const started = Date.now();
/** The backends a file runs on. */
function backendsOf(file) {
  if (file.startsWith(PURE)) return backends.slice(0, 1);
  const only = Object.entries(ONE_BACKEND).find(([key]) => (key.endsWith('/') ? file.startsWith(key) : file === key))?.[1][0];
  if (only === 'first') return backends.slice(0, 1);
  // A named backend that is not configured (no TEST_DATABASE_URL): the file runs anyway and skips its tests, saying why.
  if (only) return backends.includes(only) ? [only] : backends.slice(0, 1);
  return backends;
}
// Built once for the run, in a directory of its own (two runs in one tree do not share one), removed at exit.
const bundleDir = path.resolve(`node_modules/.cache/latchkey/test-bundles-${process.pid}`);
process.on('exit', () => rmSync(bundleDir, { recursive: true, force: true }));
let bundles;
try {
  bundles = await bundleTests(files, { outDir: bundleDir });
} catch (error) {
  // esbuild has printed each error with its source line; a failure that is not esbuild's is shown here.
  console.error(error instanceof Error && 'errors' in error ? '# the test files do not build (above)' : error);
  process.exit(1);
}
const all = files.flatMap((file) => backendsOf(file).map((backend) => ({ backend, file })));
console.log(`# Latchkey tests on ${backends.map((b) => label[b]).join(' and ')}: ${all.length} file runs, ${jobs} at a time, then ${all.filter((j) => isSerial(j.file)).length} alone`);
await runPool(all.filter((job) => !isSerial(job.file)), jobs, false);
const parallelSeconds = (Date.now() - started) / 1000;
await runPool(all.filter((job) => isSerial(job.file)), 1, true);

const durations = { ...lastDurations };
for (const r of results) durations[`${r.backend} ${r.file}`] = Math.round(r.seconds * 10) / 10;
try {
  mkdirSync(path.dirname(durationsFile), { recursive: true });
  writeFileSync(durationsFile, `${JSON.stringify(durations, null, 1)}\n`);
} catch {
  // read-only tree: the next run orders by name
}

// A file that failed beside others runs once more, alone: a test that is slow only on a starved CPU passes
// then, and is reported as flaky (with its first failure printed at the end), never hidden; one that fails
// alone too fails the run.
const firstFailures = results.filter((r) => r.code !== 0 && !isSerial(r.file));
const flaky = [];
if (firstFailures.length > 0) {
  console.log(`\n# ${firstFailures.length} file run(s) failed beside others: each runs again, alone`);
  for (const first of firstFailures) {
    const again = await runFile(first);
    print(again, true);
    results.splice(results.indexOf(first), 1, again);
    if (again.code === 0) flaky.push(first);
  }
}

/** The failures of a file's report: from the spec reporter's closing list of failing tests, at most 6,000 characters. */
function failureDetails(report) {
  const plain = stripVTControlCharacters(report);
  const at = plain.lastIndexOf('✖ failing tests:');
  const details = at === -1 ? plain.slice(-3000) : plain.slice(at);
  return details.length > 6000 ? `${details.slice(0, 6000)}\n…` : details;
}

const failed = results.filter((r) => r.code !== 0);
for (const r of [...flaky, ...failed]) {
  console.log(`\n# ${failed.includes(r) ? 'FAILED' : 'FLAKY (failed beside others, passed alone)'}  ${label[r.backend]}  ${r.file}: what failed\n`);
  console.log(failureDetails(r.report));
}
console.log('\n# Summary');
for (const backend of backends) {
  const mine = results.filter((r) => r.backend === backend);
  const sum = (key) => mine.reduce((total, r) => total + r[key], 0);
  console.log(`# ${label[backend]}: ${mine.length} files, ${sum('pass')} tests passed, ${sum('fail')} failed, ${sum('skipped')} skipped; ${Math.round(sum('seconds'))} s of file time`);
}
console.log(`# ${Math.round(parallelSeconds)} s side by side (${jobs} at a time), ${Math.round((Date.now() - started) / 1000 - parallelSeconds)} s alone, ${Math.round((Date.now() - started) / 1000)} s in all`);
for (const r of flaky) console.log(`# FLAKY  ${label[r.backend]}  ${r.file} (failed beside others, passed alone)`);
for (const r of failed) console.log(`# FAILED  ${label[r.backend]}  ${r.file}`);
process.exit(failed.length > 0 ? 1 : 0);
