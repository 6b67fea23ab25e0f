// The database port: one SQL dialect (PostgreSQL) over two engines, embedded PGlite and server PostgreSQL.

import type { Channel } from '../channels.ts';
import type { AppendColumn, AppendValue } from './append-rows.ts';

export type { AppendColumn, AppendValue } from './append-rows.ts';

export type Row = Record<string, unknown>;

/**
 * A statement of a hot path, prepared once per connection (the name must be unique per text): by node-postgres
 * on server PostgreSQL, by the embedded database's thread on PGlite. Planning can cost more than running a small
 * query. After five runs PostgreSQL may keep a plan made for any value: a statement whose best plan depends on
 * its values stays a plain string.
 */
export interface PreparedSql {
  name: string;
  text: string;
  /**
   * Its best plan does not depend on its values (a write of many rows from arrays, say): on server PostgreSQL it
   * runs on connections of its own that plan it once for any value (plan_cache_mode = force_generic_plan), not for
   * the values of each of its first five runs on every connection of the pool. PGlite ignores it.
   */
  anyValue?: true;
}

export type Sql = string | PreparedSql;

export function sqlText(sql: Sql): string {
  return typeof sql === 'string' ? sql : sql.text;
}

export interface Queryable {
  /** Runs one parameterised statement and returns its rows. */
  query<T extends object = Row>(sql: Sql, params?: readonly unknown[]): Promise<T[]>;
}

/** A transaction: statements, and whole scripts of several statements (migrations) in the same transaction. */
export interface Transaction extends Queryable {
  /** Runs a script of statements separated by `;`, unparameterised, as one message (simple query protocol). */
  script(sql: string): Promise<void>;
  /**
   * pg_notify on `channel` (namespaced like Database.listen) inside this transaction: heard only if it
   * commits. This instance's own listeners hear it as soon as the commit returns, so a change is never
   * served from this instance's cache after the call that made it; other instances, when PostgreSQL
   * delivers it (a handler may hear one notification twice: handlers only drop or refresh).
   */
  notify(channel: Channel, payload?: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly engine: 'pglite' | 'postgres';
  /**
   * Appends rows to `table` in one statement, the cheapest bulk write of the engine (append-rows.ts; for the
   * append-only request log, written on every request): each row holds the values of `columns` in order. All or
   * none of the rows are written.
   */
  appendRows(table: string, columns: readonly AppendColumn[], rows: ReadonlyArray<readonly AppendValue[]>): Promise<void>;
  /** Runs fn inside one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /**
   * Subscribes to a NOTIFY channel (used to invalidate caches across instances).
   * The channel name is namespaced per database schema so that test runs never hear each other.
   * When the listening connection was lost and is back, onMessage is called once with an empty payload:
   * what was notified meanwhile was missed, so a cache must be dropped (README: Faults).
   */
  listen(channel: Channel, onMessage: (payload: string) => void): Promise<void>;
  /**
   * The channel name to pass to pg_notify, namespaced like listen(): `latchkey_{schema}_{name}`, so that
   * SQL can build it too (`'latchkey_' || current_schema() || '_' || name`).
   */
  channel(name: string): string;
  /** The connection pool's use (server PostgreSQL); null or absent for the embedded database, which has none. */
  poolStats?(): PoolStats | null;
  close(): Promise<void>;
}

export interface PoolStats {
  /** Connections open, idle or in use. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}


