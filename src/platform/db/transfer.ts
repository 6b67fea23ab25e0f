// Moves everything an embedded data directory holds into an empty PostgreSQL database: every table's rows
// with their ids, then every identity sequence set past the largest id, so new rows never clash. The
// settings table travels too (the operator token's hash, the server key that seals webhook secrets), so
// tokens, keys and subscriptions keep working. Both sides are migrated to the same version first.
import type { Database, Queryable } from './database.ts';
import { migrate } from './migrate.ts';

/** Rows read and written per statement: bounded memory whatever the size of the access log. */
const BATCH_ROWS = 2000;

export interface TransferProgress {
  table: string;
  rows: number;
}

export interface TransferResult {
  tables: TransferProgress[];
  rows: number;
}

export class TransferRefused extends Error {}

interface TableInfo {
  name: string;
  /** Tables its foreign keys point at (itself excluded). */
  refs: string[];
  /** The single-column primary key and its type, to read in key order (parents before children); else ctid. */
  key: { column: string; type: string } | null;
}

/** Copies `source` into `target` in one transaction on the target: all of it or nothing. */
export async function transferDatabase(source: Database, target: Database, onTable: (progress: TransferProgress) => void = () => {}): Promise<TransferResult> {
  await migrate(source);
  await migrate(target);
  const tables = inDependencyOrder(await tableInfo(source));
  for (const table of tables) {
    if (table.name === 'schema_migrations') continue;
    const [row] = await target.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${quoted(table.name)}) AS any`);
    if (row?.any) throw new TransferRefused(`the target database is not empty (table ${table.name} has rows); move into a new database`);
  }

  return target.transaction(async (tx) => {
    const done: TransferProgress[] = [];
    let total = 0;
    for (const table of tables) {
      if (table.name === 'schema_migrations') continue;
      const rows = await copyTable(source, tx, table);
      done.push({ table: table.name, rows });
      total += rows;
      onTable({ table: table.name, rows });
    }
    await resetSequences(tx);
    return { tables: done, rows: total };
  });
}

async function tableInfo(db: Queryable): Promise<TableInfo[]> {
  const rows = await db.query<{ name: string; refs: string[] | null; key_column: string | null; key_type: string | null }>(
    `SELECT c.relname AS name,
            (SELECT array_agg(DISTINCT f.relname::text) FROM pg_constraint k JOIN pg_class f ON f.oid = k.confrelid
              WHERE k.conrelid = c.oid AND k.contype = 'f' AND f.oid <> c.oid) AS refs,
            (SELECT a.attname::text FROM pg_constraint p JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.conkey[1]
              WHERE p.conrelid = c.oid AND p.contype = 'p' AND cardinality(p.conkey) = 1) AS key_column,
            (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_constraint p JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.conkey[1]
              WHERE p.conrelid = c.oid AND p.contype = 'p' AND cardinality(p.conkey) = 1) AS key_type
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema()
      ORDER BY c.relname`,
  );
  return rows.map((r) => ({
    name: r.name,
    refs: r.refs ?? [],
    key: r.key_column && r.key_type ? { column: r.key_column, type: r.key_type } : null,
  }));
}

/** Referenced tables before the tables that refer to them. */
function inDependencyOrder(tables: TableInfo[]): TableInfo[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const ordered: TableInfo[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (table: TableInfo): void => {
    if (state.get(table.name) === 'done') return;
    if (state.get(table.name) === 'visiting') throw new Error(`foreign keys form a cycle through ${table.name}`);
    state.set(table.name, 'visiting');
    for (const ref of table.refs) {
      const referenced = byName.get(ref);
      if (referenced) visit(referenced);
    }
    state.set(table.name, 'done');
    ordered.push(table);
  };
  tables.forEach(visit);
  return ordered;
}

async function copyTable(source: Queryable, target: Queryable, table: TableInfo): Promise<number> {
  const name = quoted(table.name);
  // In key order where there is one (a location's parent has a smaller id), else in physical order.
  const [order, after] = table.key ? [quoted(table.key.column), `${quoted(table.key.column)} > $1::${table.key.type}`] : ['ctid', 'ctid > $1::tid'];
  let last: string | null = null;
  let copied = 0;
  for (;;) {
    const batch: Array<{ position: string; row: string }> = await source.query(
      `SELECT ${order}::text AS position, row_to_json(t)::text AS row FROM ${name} t
        WHERE $1::text IS NULL OR ${after} ORDER BY ${order} LIMIT ${BATCH_ROWS}`,
      [last],
    );
    if (batch.length === 0) return copied;
    // JSON in, records out: every column type (arrays, jsonb, bytea, timestamps) round-trips by name.
    await target.query(`INSERT INTO ${name} SELECT * FROM json_populate_recordset(NULL::${name}, $1::json)`, [`[${batch.map((b) => b.row).join(',')}]`]);
    copied += batch.length;
    last = (batch[batch.length - 1] as { position: string }).position;
  }
}

/** Every identity or serial column's sequence continues after the largest id copied. */
async function resetSequences(tx: Queryable): Promise<void> {
  const columns = await tx.query<{ table_name: string; column_name: string }>(
    `SELECT table_name::text, column_name::text FROM information_schema.columns
      WHERE table_schema = current_schema() AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`,
  );
  for (const { table_name, column_name } of columns) {
    await tx.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(${quoted(column_name)}) FROM ${quoted(table_name)}), 0) + 1, false)`,
      [table_name, column_name],
    );
  }
}

function quoted(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}
