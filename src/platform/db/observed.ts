// The database as the app uses it, with every failed statement reported once (latchkey_database_query_errors_total):
// on the database, inside a transaction, or the transaction's own BEGIN or COMMIT.
import type { Database, Row, Sql, Transaction } from './database.ts';
import { DatabaseError } from './errors.ts';

export function reportingFailures(db: Database, failed: (unavailable: boolean) => void): Database {
  // An error seen inside a transaction leaves through transaction() too: counted once.
  const counted = new WeakSet<DatabaseError>();
  const report = (error: unknown): never => {
    if (error instanceof DatabaseError && !counted.has(error)) {
      counted.add(error);
      failed(error.unavailable);
    }
    throw error;
  };
  const observedTx = (tx: Transaction): Transaction => ({
    query: <T extends object = Row>(sql: Sql, params?: readonly unknown[]) => tx.query<T>(sql, params).catch(report),
    script: (sql: string) => tx.script(sql).catch(report),
    notify: (channel, payload) => tx.notify(channel, payload).catch(report),
  });
  return {
    get engine() {
      return db.engine;
    },
    query: <T extends object = Row>(sql: Sql, params?: readonly unknown[]) => db.query<T>(sql, params).catch(report),
    appendRows: (table, columns, rows) => db.appendRows(table, columns, rows).catch(report),
    transaction: <T>(fn: (tx: Transaction) => Promise<T>) => db.transaction((tx) => fn(observedTx(tx))).catch(report),
    listen: (channel, onMessage) => db.listen(channel, onMessage),
    channel: (name) => db.channel(name),
    poolStats: () => db.poolStats?.() ?? null,
    close: () => db.close(),
  };
}
