// npm test: every test file on the embedded database (PGlite) and, when TEST_DATABASE_URL is set, again on
// server PostgreSQL. Arguments are test files or folders of them (`npm test -- test/access`); arguments that
// start with `-` go to node --test as they are.
//
// Wall time on a small machine: each test file has a database of its own (a PGlite in memory, or a schema of its
// own on PostgreSQL) and a service listening on free ports, so files do not see each other's rows. The two cores
// are saturated while the files run side by side, so what a file costs in CPU is what it costs in time, and much
// of a light file's CPU is its start. So:
// - the test files are bundled by esbuild first (scripts/test-bundle.mjs, about 1.5 s for all of them, npm
//   packages left external) and run under plain `node --test`, not through tsx, whose module hooks cost a light
//   file 3.6-4.1 s of CPU for its imports, against 1.4-1.7 s bundled;
// - light files run several to a process, one after the other (groups, below), so that a process's start, its
//   imports and PGlite's WebAssembly are paid once per group;
// - the jobs of both backends share one pool of LATCHKEY_TEST_JOBS processes (default: twice the cores), the
//   longest first (durations of the last run are kept in node_modules/.cache/latchkey/test-durations.json), and
//   the heaviest files never run beside one another;
// - the pure tier (test/unit) runs once, on PGlite, since it uses no database, and so do the files in
//   ONE_BACKEND whose subject does not depend on it (clients, the console in a browser, the HTTP edge);
// - the files in SERIAL run after the pool, two at a time, under their own rules.
// Each job's report is printed whole when it ends, headed by its backend, files and duration; the failures are
// listed again at the end.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { bundleTests, writeGroupEntry } from './test-bundle.mjs';

const SHARED_BROKER = "its gateways on the shared broker (TEST_MQTT_URL) would hear other files' gateways of the same id";
/**
 * Files (or folders, ending in /) that run after the pool, with the reason. They mostly wait (on servers of
 * their own, timers and reconnections: the CPU is 10-40 % busy while one runs), so two run at a time
 * (SERIAL_WIDTH), except that an `alone` file has nothing beside it and the files of one `set` never run
 * beside one another.
 */
const SERIAL = {
  'test/faults/': { reason: 'stops, freezes or kills a server of its own (Mosquitto, PostgreSQL, Redis, an instance) and times the recovery in seconds' },
  'test/webhooks/window.test.ts': { reason: 'its 300 HTTPS deliveries must all land within the 2.5 s a slow receiver takes, which a shared CPU misses', alone: true },
  // Gateway topics are latchkey/gateways/<id>/…, and every test database numbers its gateways from 1.
  'test/devices/presence.test.ts': { reason: SHARED_BROKER, set: 'shared broker' },
  'test/devices/instances.test.ts': { reason: SHARED_BROKER, set: 'shared broker' },
  'test/access/instances.test.ts': { reason: SHARED_BROKER, set: 'shared broker' },
  'test/access/instances-stale-list.test.ts': { reason: SHARED_BROKER, set: 'shared broker' },
};
const SERIAL_WIDTH = 2;
/**
 * Seconds a file took on this project's 2-core CI machine (embedded PGlite), for the files over 15 s: the order
 * of a run with no durations of its own yet (after npm ci). An order only: a stale figure costs wall time, never
 * a test.
 */
const EXPECTED = {
  'test/platform/main.test.ts': 46, 'test/console/browser.test.ts': 44, 'test/devices/crash-events.test.ts': 44, 'test/console/site.test.ts': 35,
  'test/webhooks/crash.test.ts': 35, 'test/devices/broker-credentials.test.ts': 29, 'test/faults/broker-restart.test.ts': 27,
  'test/console/controllers.test.ts': 27, 'test/cli/public.test.ts': 25, 'test/devices/crash-results.test.ts': 24, 'test/cli/operator.test.ts': 24,
  'test/webhooks/webhooks.test.ts': 22, 'test/console/devices.test.ts': 22, 'test/controllers/uhppote-service.test.ts': 21, 'test/console/access.test.ts': 21,
  'test/platform/openapi-conformance.test.ts': 19, 'test/catalog/catalog.test.ts': 19, 'test/cli/lists.test.ts': 16, 'test/console/operator-day.test.ts': 16,
  'test/platform/api-docs-browser.test.ts': 15,
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
const serialOf = (file) => Object.entries(SERIAL).find(([key]) => (key.endsWith('/') ? file.startsWith(key) : file === key))?.[1];
const isSerial = (file) => serialOf(file) !== undefined;

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

/**
 * Every file that is neither SERIAL nor HEAVY runs in a group: several files to a process, each a suite of the
 * group's entry module (scripts/test-bundle.mjs, writeGroupEntry), one after the other, so that Node's start,
 * the imports and PGlite's WebAssembly are paid once per group instead of once per file (measured through tsx:
 * a process's first database and service took 1.3 s of CPU, the next ones 0.7-0.8 s; its imports 1.3 s). A
 * file still has its own database and service, as alone, and its own hooks. A group is filled, in name order,
 * up to GROUP_SECONDS of expected time (less when a run has too few files to give every process of the pool a
 * group); LATCHKEY_TEST_GROUPS=off runs a file per process.
 */
const GROUP_SECONDS = 40;
const grouping = process.env.LATCHKEY_TEST_GROUPS !== 'off';

/** One job on one backend, a file or a group of files, in a process of its own; its report collected. */
function runJob({ backend, files }) {
  const started = Date.now();
  // On Node 20, --test-timeout under --test bounds the whole file (checked: a file of two 1.5 s tests fails at
  // 2 s), not each test. The longest file takes about 60 s alone and two to three times that beside others, so
  // the bound is 300 s a process (a group is filled to about 40 s); tests that need a bound of their own set
  // `timeout`. The file's bundle (scripts/test-bundle.mjs) under plain Node; source maps keep stack traces on
  // the .ts lines.
  const entry = files.length === 1 ? bundles.get(files[0]) : groupEntries.get(files);
  const child = spawn(process.execPath, ['--enable-source-maps', '--test', '--test-timeout=300000', ...reporter, ...nodeFlags, entry], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: '1' } : {}),
      LATCHKEY_TEST_BACKEND: backend,
      LATCHKEY_TEST_SCRATCH: scratchDir,
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
      const plain = stripVTControlCharacters(report);
      // The spec reporter's closing counts (`ℹ pass 12`).
      const count = (name) => Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(plain)?.[1] ?? 0);
      // In a group, each file's suite closes with a line of its own at the left margin: `✔ test/a.test.ts (812.5ms)`.
      const suites = new Map();
      for (const [, mark, file, ms] of plain.matchAll(/^(\S+) (test\/\S+\.test\.ts) \(([\d.]+)ms\)/gm)) {
        if (files.includes(file) && !suites.has(file)) suites.set(file, { failed: mark === '✖', seconds: Number(ms) / 1000 });
      }
      resolve({ backend, files, code: code ?? (signal ? 1 : 0), seconds: (Date.now() - started) / 1000, report, suites, pass: count('pass'), fail: count('fail'), skipped: count('skipped') });
    }),
  );
}

const results = [];
const jobName = (job) => (job.files.length === 1 ? job.files[0] : `${job.files.length} files: ${job.files.join(', ')}`);
function print(result, phase) {
  const status = result.code === 0 ? 'passed' : 'FAILED';
  console.log(`\n# ${status}  ${label[result.backend]}  ${jobName(result)}  ${result.seconds.toFixed(1)} s${phase === 'pool' ? '' : ` (${phase})`}\n`);
  process.stdout.write(result.report);
}

const expectedOf = (backend, file) => lastDurations[`${backend} ${file}`] ?? EXPECTED[file] ?? 5;

/**
 * Runs `list` through `width` processes at a time, the longest (by the last run) first: the longest waiting
 * job that `mayStart` beside the jobs running, and never a file running on the other backend (the same load
 * twice at once).
 */
async function runPool(list, width, phase, mayStart) {
  const expected = (job) => job.files.reduce((sum, file) => sum + expectedOf(job.backend, file), 0);
  const queue = [...list].sort((a, b) => expected(b) - expected(a));
  const running = new Set();
  const next = () => {
    const busy = new Set([...running].flatMap((job) => job.files));
    const i = queue.findIndex((job) => !job.files.some((file) => busy.has(file)) && mayStart(job, [...running]));
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
      running.add(job);
      const result = await runJob(job);
      running.delete(job);
      for (const resolve of wake) resolve();
      wake.clear();
      results.push(result);
      print(result, phase);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, queue.length) }, worker));
}
/** In the pool: a heavy file never beside another heavy one (either backend). */
const isHeavy = (job) => job.files.some((file) => HEAVY[file]);
const besideInPool = (job, running) => !(isHeavy(job) && running.some(isHeavy));
/** After the pool: SERIAL's `alone` and `set`. */
const besideAfterPool = (job, running) => {
  const mine = serialOf(job.files[0]);
  const theirs = running.map((other) => serialOf(other.files[0]));
  return running.length === 0 || (!mine.alone && theirs.every((other) => !other.alone && (mine.set === undefined || other.set !== mine.set)));
};

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
// Built once for the run, in a directory of its own (two runs in one tree do not share one), removed at exit;
// so is the directory of the embedded test databases (tmpfs where there is one: helpers/database.ts), which also
// takes what a killed process left.
const bundleDir = path.resolve(`node_modules/.cache/latchkey/test-bundles-${process.pid}`);
const scratchDir = path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), `latchkey-test-${process.pid}`);
process.on('exit', () => {
  rmSync(bundleDir, { recursive: true, force: true });
  rmSync(scratchDir, { recursive: true, force: true });
});
const PREPARE = 'test/helpers/prepare-run.ts';
let bundles;
try {
  bundles = await bundleTests([...files, PREPARE], { outDir: bundleDir });
} catch (error) {
  // esbuild has printed each error with its source line; a failure that is not esbuild's is shown here.
  console.error(error instanceof Error && 'errors' in error ? '# the test files do not build (above)' : error);
  process.exit(1);
}
const prepared = spawnSync(process.execPath, ['--enable-source-maps', bundles.get(PREPARE)], { stdio: 'inherit' });
if (prepared.status !== 0) {
  console.error(`# ${PREPARE} failed: the migrated embedded cluster could not be built`);
  process.exit(1);
}

/** The jobs of one backend: its light files in groups (in name order, so that neighbours share modules), the rest alone. */
const groupEntries = new Map();
function jobsOf(backend, list) {
  const light = (file) => grouping && !isSerial(file) && !HEAVY[file];
  const result = list.filter((file) => !light(file)).map((file) => ({ backend, files: [file] }));
  let group = [];
  let seconds = 0;
  const close = () => {
    if (group.length === 0) return;
    if (group.length > 1) groupEntries.set(group, writeGroupEntry(bundleDir, `group-${backend}-${groupEntries.size + 1}`, group, bundles));
    result.push({ backend, files: group });
    group = [];
    seconds = 0;
  };
  const lightFiles = list.filter(light);
  const fill = Math.min(GROUP_SECONDS, lightFiles.reduce((sum, file) => sum + expectedOf(backend, file), 0) / jobs);
  for (const file of lightFiles) {
    if (group.length > 0 && seconds + expectedOf(backend, file) > fill) close();
    group.push(file);
    seconds += expectedOf(backend, file);
  }
  close();
  return result;
}
const all = backends.flatMap((backend) => jobsOf(backend, files.filter((file) => backendsOf(file).includes(backend))));
const fileRuns = all.reduce((sum, job) => sum + job.files.length, 0);
const serialJobs = all.filter((job) => isSerial(job.files[0]));
console.log(`# Latchkey tests on ${backends.map((b) => label[b]).join(' and ')}: ${fileRuns} file runs in ${all.length} processes, ${jobs} at a time, then ${serialJobs.length} after the pool, ${SERIAL_WIDTH} at a time`);
await runPool(all.filter((job) => !serialJobs.includes(job)), jobs, 'pool', besideInPool);
const parallelSeconds = (Date.now() - started) / 1000;
await runPool(serialJobs, SERIAL_WIDTH, 'after the pool', besideAfterPool);

const durations = { ...lastDurations };
for (const r of results) {
  if (r.files.length === 1) durations[`${r.backend} ${r.files[0]}`] = Math.round(r.seconds * 10) / 10;
  else for (const [file, suite] of r.suites) durations[`${r.backend} ${file}`] = Math.round(suite.seconds * 10) / 10;
}
try {
  mkdirSync(path.dirname(durationsFile), { recursive: true });
  writeFileSync(durationsFile, `${JSON.stringify(durations, null, 1)}\n`);
} catch {
  // read-only tree: the next run orders by name
}

// A job that failed beside others runs again, alone, a file at a time: a test that is slow only on a starved
// CPU passes then, and is reported as flaky (with its first failure printed at the end), never hidden; one that
// fails alone too fails the run. A group's files all run again, so that the counts are each file's own; a file
// is flaky if its suite failed in the group (or, when the group died without saying which, any of them) and it
// passes alone; a failure that only its group shows is one file's state reaching another, and is reported so.
const firstFailures = results.filter((r) => r.code !== 0);
const flaky = [];
if (firstFailures.length > 0) {
  console.log(`\n# ${firstFailures.length} process(es) failed beside others: each file of them runs again, alone`);
  for (const first of firstFailures) {
    const again = [];
    for (const file of first.files) {
      const result = await runJob({ backend: first.backend, files: [file] });
      print(result, 'alone');
      again.push(result);
      const failedThere = first.suites.get(file)?.failed ?? ![...first.suites.values()].some((suite) => suite.failed);
      if (result.code === 0 && failedThere) flaky.push({ ...first, flakyFile: file });
    }
    results.splice(results.indexOf(first), 1, ...again);
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
  console.log(`\n# ${failed.includes(r) ? 'FAILED' : 'FLAKY (failed beside others, passed alone)'}  ${label[r.backend]}  ${r.flakyFile ?? jobName(r)}: what failed\n`);
  console.log(failureDetails(r.report));
}
console.log('\n# Summary');
for (const backend of backends) {
  const mine = results.filter((r) => r.backend === backend);
  const sum = (key) => mine.reduce((total, r) => total + r[key], 0);
  console.log(`# ${label[backend]}: ${mine.reduce((total, r) => total + r.files.length, 0)} files, ${sum('pass')} tests passed, ${sum('fail')} failed, ${sum('skipped')} skipped; ${Math.round(sum('seconds'))} s of file time`);
}
console.log(`# ${Math.round(parallelSeconds)} s side by side (${jobs} at a time), ${Math.round((Date.now() - started) / 1000 - parallelSeconds)} s after the pool, ${Math.round((Date.now() - started) / 1000)} s in all`);
for (const r of flaky) console.log(`# FLAKY  ${label[r.backend]}  ${r.flakyFile} (failed beside others, passed alone${r.files.length > 1 ? `; in a group of ${r.files.length}` : ''})`);
for (const r of failed) console.log(`# FAILED  ${label[r.backend]}  ${jobName(r)}`);
process.exit(failed.length > 0 ? 1 : 0);
