// Database.appendRows, the bulk write of the append-only request log, as each engine does it best:
// - embedded (PGlite): COPY in its binary format, read from a blob. PostgreSQL then parses no value; on WebAssembly,
//   an INSERT from a JSON array cost about three times as much, half of it parsing a timestamptz and a real from text
//   (bench/RESULTS.md, 2026-11-28).
// - server PostgreSQL: one INSERT from a JSON array. COPY there needs a driver stream (pg-copy-streams) that throws
//   out of an event handler, and so ends the process, when the server fails a COPY while data is still being sent
//   (brianc/node-pg-copy-streams#171); the server's CPU is not the service's.

/** A column of appendRows and the type its values are sent as (the table's column must be of that type). */
export interface AppendColumn {
  name: string;
  type: 'text' | 'int4' | 'int8' | 'float4' | 'timestamptz';
}

/** A value: a string (text), a number (integers, float4, and timestamptz as milliseconds since 1970), or null. */
export type AppendValue = string | number | null;

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** PostgreSQL counts timestamps in microseconds from 2000-01-01 UTC. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
const TWO_TO_32 = 2 ** 32;

function checkRowLength(columns: readonly AppendColumn[], row: readonly AppendValue[]): void {
  if (row.length !== columns.length) throw new Error(`appended row of ${row.length} values for ${columns.length} columns`);
}

function wrongValue(column: AppendColumn, value: AppendValue): Error {
  return new Error(`appended value for ${column.name} (${column.type}) is not one: ${typeof value}`);
}

/** Bytes of a value after its length word; -1 for null. Throws on a value of the wrong kind for its column. */
function valueSize(column: AppendColumn, value: AppendValue): number {
  if (value === null) return -1;
  if (column.type === 'text') {
    if (typeof value !== 'string') throw wrongValue(column, value);
    return Buffer.byteLength(value);
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) throw wrongValue(column, value);
  if (column.type === 'int4' && !(Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31)) throw wrongValue(column, value);
  if ((column.type === 'int8' || column.type === 'timestamptz') && !Number.isSafeInteger(column.type === 'int8' ? value : Math.round(value * 1000))) {
    throw wrongValue(column, value);
  }
  return column.type === 'int4' || column.type === 'float4' ? 4 : 8;
}

/** Writes a 64-bit two's-complement integer (|value| < 2^53) big-endian. */
function writeInt64(buffer: Buffer, value: number, offset: number): number {
  offset = buffer.writeInt32BE(Math.floor(value / TWO_TO_32), offset);
  return buffer.writeUInt32BE(value >>> 0, offset);
}

/** The whole binary COPY data of `rows`: header, one tuple per row, trailer. Throws on a value of the wrong kind. */
export function encodeCopyRows(columns: readonly AppendColumn[], rows: ReadonlyArray<readonly AppendValue[]>): Buffer {
  let size = SIGNATURE.length + 8 + 2;
  for (const row of rows) {
    checkRowLength(columns, row);
    size += 2;
    columns.forEach((column, i) => (size += 4 + Math.max(0, valueSize(column, row[i] as AppendValue))));
  }
  const buffer = Buffer.alloc(size);
  let offset = SIGNATURE.copy(buffer, 0);
  offset = buffer.writeUInt32BE(0, offset); // flags: no OIDs
  offset = buffer.writeUInt32BE(0, offset); // no header extension
  for (const row of rows) {
    offset = buffer.writeInt16BE(columns.length, offset);
    columns.forEach((column, i) => {
      const value = row[i] as AppendValue;
      if (value === null) {
        offset = buffer.writeInt32BE(-1, offset);
        return;
      }
      switch (column.type) {
        case 'text': {
          const written = buffer.write(value as string, offset + 4);
          offset = buffer.writeInt32BE(written, offset) + written;
          return;
        }
        case 'int4':
          offset = buffer.writeInt32BE(value as number, buffer.writeInt32BE(4, offset));
          return;
        case 'float4':
          offset = buffer.writeFloatBE(value as number, buffer.writeInt32BE(4, offset));
          return;
        case 'int8':
          offset = writeInt64(buffer, value as number, buffer.writeInt32BE(8, offset));
          return;
        case 'timestamptz':
          offset = writeInt64(buffer, Math.round(((value as number) - POSTGRES_EPOCH_MS) * 1000), buffer.writeInt32BE(8, offset));
          return;
      }
    });
  }
  buffer.writeInt16BE(-1, offset); // trailer
  return buffer;
}

/** The binary COPY of `columns` of `table` from a file (PGlite's '/dev/blob': the data given with the statement). */
export function copyStatement(table: string, columns: readonly AppendColumn[], file: string): string {
  return `COPY ${table} (${columns.map((c) => c.name).join(', ')}) FROM '${file}' WITH (FORMAT binary)`;
}

/**
 * The INSERT of `rows` as one JSON parameter, and that parameter (node-postgres escapes every element of an array
 * parameter, which cost about three times the CPU of JSON.stringify for a batch of 2,500 rows). Values are checked
 * as for COPY; times go as ISO 8601 text.
 */
export function insertFromJson(table: string, columns: readonly AppendColumn[], rows: ReadonlyArray<readonly AppendValue[]>): { text: string; param: string } {
  const names = columns.map((c) => c.name).join(', ');
  const records = rows.map((row) => {
    checkRowLength(columns, row);
    const record: Record<string, AppendValue> = {};
    columns.forEach((column, i) => {
      const value = row[i] as AppendValue;
      valueSize(column, value);
      record[column.name] = column.type === 'timestamptz' && value !== null ? new Date(value as number).toISOString() : value;
    });
    return record;
  });
  return {
    text: `INSERT INTO ${table} (${names}) SELECT ${names} FROM json_to_recordset($1::json) AS r (${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`,
    param: JSON.stringify(records),
  };
}
