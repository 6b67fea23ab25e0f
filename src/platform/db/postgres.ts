// Server PostgreSQL through node-postgres: a pool for queries, one dedicated client for LISTEN.
import pg from 'pg';
import type { Database, Queryable, Row, Sql } from './database.ts';
import { databaseError } from './errors.ts';

const INT8_OID = 20;
// Ids are int8; every id we hand out stays far below 2^53, so numbers are safe and JSON-friendly.
const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

function toConfig(sql: Sql, params: readonly unknown[]): pg.QueryConfig {
  return typeof sql === 'string'
    ? { text: sql, values: params as unknown[] }
    : { name: sql.name, text: sql.text, values: params as unknown[] };
}

/** Runs one statement on the pool or a client; a failure leaves as a DatabaseError (no row values). */
async function run<T extends object>(on: pg.Pool | pg.PoolClient, sql: Sql, params: readonly unknown[]): Promise<T[]> {
  const config = toConfig(sql, params);
  try {
    return (await on.query(config)).rows as T[];
  } catch (error) {
    throw databaseError(error, config.text);
  }
}

export interface PostgresOptions {
  connectionString: string;
  /** Run every statement in this schema (tests use one schema per run). */
  schema?: string;
  maxConnections?: number;
}

export async function openPostgres(options: PostgresOptions): Promise<PostgresDatabase> {
  const searchPath = options.schema ? { options: `-c search_path=${options.schema}` } : {};
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    types: typeParsers,
    ...searchPath,
  });
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  const [row] = (await pool.query<{ schema: string }>('SELECT current_schema() AS schema')).rows;
  return new PostgresDatabase(pool, options, row?.schema ?? 'public');
}

export class PostgresDatabase implements Database {
  readonly engine = 'postgres' as const;
  private listener: pg.Client | null = null;
  private readonly handlers = new Map<string, Array<(payload: string) => void>>();

  constructor(
    readonly pool: pg.Pool,
    private readonly options: PostgresOptions,
    /** The schema statements run in (search_path), which namespaces NOTIFY channels. */
    private readonly schema: string,
  ) {}

  async query<T extends object = Row>(sql: Sql, params: readonly unknown[] = []): Promise<T[]> {
    return run<T>(this.pool, sql, params);
  }

  async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((error: unknown) => {
      throw databaseError(error, '');
    });
    try {
      await run(client, 'BEGIN', []);
      const result = await fn({
        query: <R extends object = Row>(sql: Sql, params: readonly unknown[] = []) => run<R>(client, sql, params),
      });
      await run(client, 'COMMIT', []);
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async listen(channel: string, onMessage: (payload: string) => void): Promise<void> {
    const name = this.channel(channel);
    if (!this.listener) {
      const client = new pg.Client({ connectionString: this.options.connectionString });
      client.on('notification', (message) => {
        for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? '');
      });
      client.on('error', () => undefined);
      await client.connect();
      this.listener = client;
    }
    const existing = this.handlers.get(name);
    if (existing) {
      existing.push(onMessage);
      return;
    }
    this.handlers.set(name, [onMessage]);
    await this.listener.query(`LISTEN "${name}"`);
  }

  channel(name: string): string {
    return `latchkey_${this.schema}_${name}`;
  }

  async close(): Promise<void> {
    await this.listener?.end().catch(() => undefined);
    this.listener = null;
    await this.pool.end();
  }
}
