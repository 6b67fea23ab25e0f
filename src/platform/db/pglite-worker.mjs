// The embedded database's thread (pglite.ts starts it). PGlite runs PostgreSQL in WebAssembly and holds the thread
// it runs on for the whole of each statement: on the service's thread, an ANALYZE, a large read or a busy minute of
// door-event writes kept access decisions and HTTP answers waiting behind it (bench/RESULTS.md, 2026-11-28). Here
// it holds only this thread. Plain JavaScript, loaded as it is by both the TypeScript loader and the service's
// bundle (scripts/server-bundle.mjs).
//
// The protocol, one message each way per request, in order on one port:
//   → { id, op: 'query', text, params, tx?, name? }
//                                              ← { id, rows }         a statement, in a transaction when tx is given;
//                                                                     prepared once under `name` when given
//   → { id, op: 'script', sql, tx }            ← { id }               statements separated by `;`, in a transaction
//   → { id, op: 'copy', text, data }           ← { id }               COPY … FROM '/dev/blob', reading `data` (bytes)
//   → { id, op: 'begin' }                      ← { id, tx }           once PGlite's transaction has begun
//   → { id, op: 'end', tx, commit }            ← { id }               once it committed or rolled back
//   → { id, op: 'listen', channel }            ← { id }               then { notification: channel, payload } as they come
//   → { id, op: 'dump' }                       ← { id, dump }         the data directory as a tarball (a Blob)
//   → { id, op: 'close' }                      ← { id }               and the thread ends
// A failed request answers { id, error: { message, code, … } }: the error's own fields, never its parameters.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, parse, protocol, types } from '@electric-sql/pglite';
import parseTimestamp from 'postgres-date';

/** The fields of a PostgreSQL error that errors.ts keeps (KEPT_FIELDS), and its message. */
const ERROR_FIELDS = ['message', 'code', 'severity', 'constraint', 'table', 'column', 'schema', 'dataType', 'routine'];

function errorFields(error) {
  const source = typeof error === 'object' && error !== null ? error : { message: String(error) };
  const fields = {};
  for (const field of ERROR_FIELDS) {
    const value = source[field];
    if (typeof value === 'string' || typeof value === 'number') fields[field] = String(value);
  }
  return fields;
}

const { dataDir, wasmModule, settings, loadDataDir } = workerData;
const pg = new PGlite(dataDir, {
  pgliteWasmModule: wasmModule,
  // Ids are int8; every id we hand out stays far below 2^53, so numbers are safe and JSON-friendly.
  // Timestamps as node-postgres reads them (postgres-date): PGlite's own parser is `new Date(text)`, which V8 reads
  // wrong for years 1 to 99 in PostgreSQL's format ("0050-01-01 00:00:00+00" is 1950, "0026-…" Invalid Date).
  parsers: { [types.INT8]: (value) => Number(value), [types.TIMESTAMPTZ]: parseTimestamp, [types.TIMESTAMP]: parseTimestamp },
  // PostgreSQL settings after PGlite's own (EMBEDDED_SETTINGS in pglite.ts).
  startParams: [...PGlite.defaultStartParams, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])],
  ...(loadDataDir ? { loadDataDir } : {}),
});

/** Open transactions: PGlite's handle, how to end it, and the promise of its end (COMMIT or ROLLBACK). */
const transactions = new Map();
let nextTx = 1;
/** Thrown into PGlite's transaction callback to roll it back; not an error of the caller's. */
const ROLLBACK = Symbol('rollback');

/** Begins a transaction; the answer is posted once PGlite runs its callback (BEGIN done), or with BEGIN's error. */
function begin(id) {
  const tx = nextTx++;
  let entered = false;
  const open = {};
  const ended = new Promise((resolve, reject) => (open.end = (commit) => (commit ? resolve() : reject(ROLLBACK))));
  open.done = pg.transaction(async (handle) => {
    entered = true;
    open.handle = handle;
    transactions.set(tx, open);
    parentPort.postMessage({ id, tx });
    await ended;
  });
  open.done.catch((error) => {
    if (!entered) parentPort.postMessage({ id, error: errorFields(error) });
  });
}

/** Statements prepared on this connection, by name: their text and their parameters' type oids. */
const prepared = new Map();

/** Runs protocol messages as one exchange; its DatabaseError, if any, is thrown once Sync has been processed. */
const exchange = (...messages) => pg.execProtocolStream(Buffer.concat(messages), { syncToFs: false });

/**
 * A named statement, as node-postgres runs one on server PostgreSQL: parsed once per connection, then only bound
 * and executed, so that PostgreSQL may keep its plan (after five runs, when the plan made for any value costs no
 * more). PGlite's query() parses, describes and plans every statement at every call: a small write cost 3 times,
 * a page read 2.6 times what the prepared one does (bench/RESULTS.md, 2026-11-28, named statements on PGlite).
 * The parameters are written as PGlite's query() writes them, by the types PostgreSQL gave them.
 */
async function runPrepared(name, text, params) {
  let statement = prepared.get(name);
  if (statement && statement.text !== text) throw new Error(`the prepared statement ${name} has another text`);
  if (!statement) {
    const described = await exchange(
      protocol.serialize.parse({ name, text }),
      protocol.serialize.describe({ type: 'S', name }),
      protocol.serialize.sync(),
    );
    const parameters = described.find((m) => m.name === 'parameterDescription');
    statement = { text, types: parameters ? parameters.dataTypeIDs : [] };
    prepared.set(name, statement);
  }
  const values = params.map((value, i) => {
    if (value === null || value === undefined) return null;
    const serialize = pg.serializers[statement.types[i]];
    return serialize ? serialize(value) : value.toString();
  });
  const messages = await exchange(
    protocol.serialize.bind({ statement: name, values }),
    protocol.serialize.describe({ type: 'P' }),
    protocol.serialize.execute({}),
    protocol.serialize.sync(),
  );
  return parse.parseResults(messages, pg.parsers)[0]?.rows ?? [];
}

async function handle(message) {
  const { id, op } = message;
  switch (op) {
    case 'query': {
      const on = message.tx === undefined ? pg : transactions.get(message.tx)?.handle;
      if (!on) throw new Error('the transaction has ended');
      if (message.name === undefined) return { id, rows: (await on.query(message.text, message.params)).rows };
      // As PGlite's own query(): one statement at a time, and outside a transaction only when none is open
      // (_runExclusiveTransaction is the lock query() takes; pglite-prepared.test holds the order).
      const run = () => pg.runExclusive(() => runPrepared(message.name, message.text, message.params));
      if (message.tx !== undefined) return { id, rows: await run() };
      const rows = await pg._runExclusiveTransaction(run);
      await pg.syncToFs(); // as query() after a statement outside a transaction (nothing to do on Node's file system)
      return { id, rows };
    }
    case 'copy':
      // '/dev/blob' in the statement reads the Blob given with it.
      await pg.query(message.text, [], { blob: new Blob([message.data]) });
      return { id };
    case 'script': {
      const on = transactions.get(message.tx)?.handle;
      if (!on) throw new Error('the transaction has ended');
      await on.exec(message.sql);
      return { id };
    }
    case 'begin':
      begin(id);
      return null; // answered by begin()
    case 'end': {
      const open = transactions.get(message.tx);
      if (!open) throw new Error('the transaction has ended');
      transactions.delete(message.tx);
      open.end(message.commit);
      try {
        await open.done;
      } catch (error) {
        if (error !== ROLLBACK) throw error;
      }
      return { id };
    }
    case 'listen':
      await pg.listen(message.channel, (payload) => parentPort.postMessage({ notification: message.channel, payload }));
      return { id };
    case 'dump':
      return { id, dump: await pg.dumpDataDir('none') };
    case 'close':
      if (!pg.closed) await pg.close();
      return { id };
    default:
      throw new Error(`unknown request ${op}`);
  }
}

parentPort.on('message', (message) => {
  handle(message).then(
    (answer) => {
      if (answer) parentPort.postMessage(answer);
      if (message.op === 'close') parentPort.close();
    },
    (error) => parentPort.postMessage({ id: message.id, error: errorFields(error) }),
  );
});

pg.waitReady.then(
  () => parentPort.postMessage({ ready: true }),
  (error) => parentPort.postMessage({ ready: false, error: errorFields(error) }),
);
