// Server PostgreSQL through node-postgres: a pool for queries, one dedicated client for LISTEN.
import type pg from 'pg';
import { backoffMs } from '../backoff.ts';
import { insertFromJson, type AppendColumn, type AppendValue } from './append-rows.ts';
import type { Database, PoolStats, Row, Sql, Transaction } from './database.ts';
import { databaseError, isDatabaseUnavailable } from './errors.ts';

/**
 * node-postgres, loaded by the first openPostgres: an embedded start never needs it, and loading it took
 * about 50 ms of one (bench/RESULTS.md, start-up).
 */
let driver: typeof pg | undefined;

/** The driver, for a database openPostgres made. */
function loadedDriver(): typeof pg {
  if (!driver) throw new Error('node-postgres used before openPostgres loaded it');
  return driver;
}

const INT8_OID = 20;
// Ids are int8; every id we hand out stays far below 2^53, so numbers are safe and JSON-friendly.
const typeParsers = (types: typeof pg.types) => ({
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
});

function toConfig(sql: Sql, params: readonly unknown[]): pg.QueryConfig {
  return typeof sql === 'string'
    ? { text: sql, values: params as unknown[] }
    : { name: sql.name, text: sql.text, values: params as unknown[] };
}

/**
 * SQLSTATEs that say the server cannot serve now rather than that the statement is wrong: connection
 * exceptions (class 08, but not 08P01, a protocol violation such as a wrong parameter count), too many
 * connections, a server shutting down, crashed or starting up (57P01-57P03), and a statement cancelled by
 * statement_timeout (57014, which pg_cancel_backend also gives).
 */
const UNAVAILABLE_SQLSTATES = new Set(['08000', '08001', '08003', '08004', '08006', '53300', '57P01', '57P02', '57P03', '57014']);
/** Socket errors on the way to the server. */
const NETWORK_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** node-postgres's own errors for a connection that is gone, could not be made in time, or did not answer in time. */
const DRIVER_CONNECTION_ERRORS = /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/** Whether a driver error means the database is away or too slow (a request answers 503), not a wrong statement. */
function meansUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (driver && error instanceof driver.DatabaseError) return typeof code === 'string' && UNAVAILABLE_SQLSTATES.has(code);
  return (typeof code === 'string' && NETWORK_ERRORS.has(code)) || DRIVER_CONNECTION_ERRORS.test(error.message);
}

/** Runs one statement on the pool or a client; a failure leaves as a DatabaseError (no row values). */
async function run<T extends object>(on: pg.Pool | pg.PoolClient, sql: Sql, params: readonly unknown[]): Promise<T[]> {
  const config = toConfig(sql, params);
  try {
    return (await on.query(config)).rows as T[];
  } catch (error) {
    throw databaseError(error, config.text, meansUnavailable(error));
  }
}

/**
 * A connection that plans every prepared statement for any value, set by its first statement before the pool hands it
 * out. Not a startup parameter (`options`), which one in DATABASE_URL replaces and some poolers refuse; nor a query sent
 * on the pool's `connect` event, which ran beside the pool's first query (a deprecation warning of pg 8, an error in 9).
 */
function genericPlanClient(Client: typeof pg.Client): typeof pg.Client {
  return class GenericPlanClient extends Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<pg.Client> | void {
      const ready = super.connect().then(async (client) => {
        await super.query('SET plan_cache_mode = force_generic_plan');
        return client;
      });
      if (!callback) return ready;
      ready.then(() => callback(undefined as unknown as Error), callback);
    }
  };
}

/**
 * A statement the server does not cancel itself (it does not answer at all: stopped, or its host gone
 * silent) fails on the client this much later than statement_timeout, so that the server's own
 * cancellation, which keeps the connection, normally comes first.
 */
const CLIENT_TIMEOUT_MARGIN_MS = 500;

export interface PostgresOptions {
  connectionString: string;
  /** Run every statement in this schema (tests use one schema per run). */
  schema?: string;
  maxConnections?: number;
  /**
   * The longest wait for a connection (from the pool or a new one) and the longest a statement may run
   * (statement_timeout on the server, and on the client for a server that does not answer at all). Past it
   * the statement fails with `unavailable` set, and a request answers 503 (README: Faults). Unset: no limit
   * (migrations, which may build an index on a large table).
   */
  timeoutMs?: number;
}

/** Connection settings shared by the pool and the LISTEN connection. */
function clientConfig(options: PostgresOptions): pg.ClientConfig {
  const timeoutMs = options.timeoutMs;
  return {
    connectionString: options.connectionString,
    // A connection whose server vanished without closing it is found out by TCP keepalive.
    keepAlive: true,
    ...(timeoutMs ? { connectionTimeoutMillis: timeoutMs, statement_timeout: timeoutMs, query_timeout: timeoutMs + CLIENT_TIMEOUT_MARGIN_MS } : {}),
  };
}

/**
 * Connections of the statements planned once for any value (PreparedSql.anyValue): the door events' writes,
 * EVENT_WRITES_AT_ONCE of them at once, and an unlock's outcome beside them.
 */
const ANY_VALUE_CONNECTIONS = 4;

export async function openPostgres(options: PostgresOptions): Promise<PostgresDatabase> {
  const pg = (driver ??= (await import('pg')).default);
  const searchPath = options.schema ? { options: `-c search_path=${options.schema}` } : {};
  const poolConfig: pg.PoolConfig = { ...clientConfig(options), types: typeParsers(pg.types), ...searchPath };
  const pool = new pg.Pool({ ...poolConfig, max: options.maxConnections ?? 10 });
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  const [row] = (await pool.query<{ schema: string }>('SELECT current_schema() AS schema')).rows;
  return new PostgresDatabase(pool, options, row?.schema ?? 'public', poolConfig);
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const;
  private listener: pg.Client | null = null;
  /** Making the LISTEN connection, at the first listen() or after a loss. */
  private listenerConnecting: Promise<void> | null = null;
  private closed = false;
  private readonly handlers = new Map<string, Array<(payload: string) => void>>();
  /** The pool of PreparedSql.anyValue statements, made at the first. */
  private anyValuePool: pg.Pool | null = null;

  constructor(
    readonly pool: pg.Pool,
    private readonly options: PostgresOptions,
    /** The schema statements run in (search_path), which namespaces NOTIFY channels. */
    private readonly schema: string,
    /** What the pool's connections are made with (the anyValue pool's too). */
    private readonly poolConfig: pg.PoolConfig,
  ) {}

  async query<T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> {
    return run<T>(typeof sql !== 'string' && sql.anyValue ? this.anyValueConnections() : this.pool, sql, params);
  }

  /**
   * A first run of a prepared statement on a connection plans it for its values, and so do the next four, before
   * PostgreSQL may keep a plan for any value: the first burst of door events after a start paid that on every
   * connection of the pool it touched (bench/RESULTS.md, 2026-11-29). A few connections of their own, planning
   * once, pay it once each. Not the whole pool: the pages of the lists need plans made for their values.
   */
  private anyValueConnections(): pg.Pool {
    if (this.anyValuePool) return this.anyValuePool;
    if (this.closed) return this.pool; // which refuses, as any statement after close()
    const pool = new (loadedDriver().Pool)({ ...this.poolConfig, max: ANY_VALUE_CONNECTIONS, Client: genericPlanClient(loadedDriver().Client) });
    pool.on('error', () => undefined);
    this.anyValuePool = pool;
    return pool;
  }

  async appendRows(table: string, columns: readonly AppendColumn[], rows: ReadonlyArray<readonly AppendValue[]>): Promise<void> {
    const { text, param } = insertFromJson(table, columns, rows);
    await run(this.pool, text, [param]);
  }

  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      // No connection to be had: refused, not made in time, or refused by a server starting or stopping.
      throw databaseError(error, '', true);
    });
    // A connection that failed or did not answer is closed rather than reused (the server rolls back what
    // it held); ROLLBACK on it would only wait for the timeout once more.
    let broken: unknown = undefined;
    const notified: Array<[string, string]> = [];
    try {
      await run(client, 'BEGIN', []);
      const result = await fn({
        query: <R extends object = Row>(sql: Sql, params: readonly unknown[] = []) => run<R>(client, sql, params),
        // Without parameters node-postgres sends the simple query protocol, which takes several statements.
        script: async (sql: string) => void (await run(client, sql, [])),
        notify: async (channel: string, payload = '') => {
          await run(client, 'SELECT pg_notify($1, $2)', [this.channel(channel), payload]);
          notified.push([this.channel(channel), payload]);
        },
      });
      await run(client, 'COMMIT', []);
      // This instance's listeners at once; the server's delivery over the LISTEN connection follows.
      for (const [name, payload] of notified) this.deliver(name, payload);
      return result;
    } catch (error) {
      if (isDatabaseUnavailable(error)) broken = error;
      else await client.query('ROLLBACK').catch((rollbackError: unknown) => (broken = rollbackError));
      throw error;
    } finally {
      client.release(broken === undefined ? undefined : broken instanceof Error ? broken : true);
    }
  }

  /**
   * LISTENs on one connection of its own, made at the first call. When it is lost (the server restarted,
   * the network dropped it) it is made again with backoff, LISTENing every channel again; notifications sent
   * meanwhile are lost, so every handler is then called with an empty payload (see Database.listen).
   */
  async listen(channel: string, onMessage: (payload: string) => void): Promise<void> {
    const name = this.channel(channel);
    const existing = this.handlers.get(name);
    if (existing) {
      existing.push(onMessage);
      return;
    }
    this.handlers.set(name, [onMessage]);
    if (this.listener) {
      // If the connection is failing right now, its reconnection LISTENs on every channel, this one included.
      await this.listener.query(`LISTEN "${name}"`).catch((error: unknown) => {
        if (!meansUnavailable(error)) throw databaseError(error, 'LISTEN');
      });
    } else if (this.listenerConnecting) {
      await this.listenerConnecting;
    } else {
      // The first call: start-up needs the database, so a failure here is the caller's.
      this.listenerConnecting = this.connectListener().finally(() => (this.listenerConnecting = null));
      await this.listenerConnecting;
    }
  }

  private deliver(name: string, payload: string): void {
    for (const handler of this.handlers.get(name) ?? []) handler(payload);
  }

  /** Connects the LISTEN connection and LISTENs on every channel that has handlers, including any added meanwhile. */
  private async connectListener(): Promise<void> {
    const client = new (loadedDriver().Client)(clientConfig(this.options));
    client.on('notification', (message) => this.deliver(message.channel, message.payload ?? ''));
    client.on('error', () => undefined); // followed by 'end'
    try {
      await client.connect();
      const listening = new Set<string>();
      for (let next = [...this.handlers.keys()]; next.length > 0; next = [...this.handlers.keys()].filter((n) => !listening.has(n))) {
        for (const name of next) {
          await client.query(`LISTEN "${name}"`);
          listening.add(name);
        }
      }
    } catch (error) {
      await client.end().catch(() => undefined);
      throw databaseError(error, 'LISTEN', meansUnavailable(error));
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
    client.once('end', () => {
      if (this.listener !== client) return;
      this.listener = null;
      this.reconnectListener();
    });
  }

  private reconnectListener(): void {
    if (this.closed || this.listenerConnecting) return;
    this.listenerConnecting = (async () => {
      // First after 100 ms, doubling up to 5 s.
      for (let attempt = 0; !this.closed; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)).unref());
        if (this.closed) return;
        try {
          await this.connectListener();
        } catch {
          continue; // still away
        }
        // Whatever was notified while the connection was away was missed: caches drop, the dispatcher looks.
        for (const handlers of this.handlers.values()) for (const handler of handlers) handler('');
        return;
      }
    })().finally(() => (this.listenerConnecting = null));
  }

  channel(name: string): string {
    return `latchkey_${this.schema}_${name}`;
  }

  poolStats(): PoolStats {
    const pools = this.anyValuePool ? [this.pool, this.anyValuePool] : [this.pool];
    const sum = (count: (pool: pg.Pool) => number) => pools.reduce((total, pool) => total + count(pool), 0);
    return { total: sum((p) => p.totalCount), idle: sum((p) => p.idleCount), waiting: sum((p) => p.waitingCount) };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.listener?.end().catch(() => undefined);
    this.listener = null;
    await this.anyValuePool?.end();
    await this.pool.end();
  }
}
