// The embedded database's thread (pglite.ts starts it). PGlite runs PostgreSQL in WebAssembly and holds the thread
// it runs on for the whole of each statement: on the service's thread, an ANALYZE, a large read or a busy minute of
// door-event writes kept access decisions and HTTP answers waiting behind it (bench/RESULTS.md, 2026-11-28). Here
// it holds only this thread. Plain JavaScript, loaded as it is by both the TypeScript loader and the service's
// bundle (scripts/server-bundle.mjs).
//
// The protocol, one message each way per request, in order on one port:
//   → { id, op: 'query', text, params, tx? }   ← { id, rows }         a statement, in a transaction when tx is given
//   → { id, op: 'script', sql, tx }            ← { id }               statements separated by `;`, in a transaction
//   → { id, op: 'copy', text, data }           ← { id }               COPY … FROM '/dev/blob', reading `data` (bytes)
//   → { id, op: 'begin' }                      ← { id, tx }           once PGlite's transaction has begun
//   → { id, op: 'end', tx, commit }            ← { id }               once it committed or rolled back
//   → { id, op: 'listen', channel }            ← { id }               then { notification: channel, payload } as they come
//   → { id, op: 'dump' }                       ← { id, dump }         the data directory as a tarball (a Blob)
//   → { id, op: 'close' }                      ← { id }               and the thread ends
// A failed request answers { id, error: { message, code, … } }: the error's own fields, never its parameters.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';

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
  parsers: { [types.INT8]: (value) => Number(value) },
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

async function handle(message) {
  const { id, op } = message;
  switch (op) {
    case 'query': {
      const on = message.tx === undefined ? pg : transactions.get(message.tx)?.handle;
      if (!on) throw new Error('the transaction has ended');
      const result = await on.query(message.text, message.params);
      return { id, rows: result.rows };
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
