// Rows in COPY's binary format (PostgreSQL's "Binary Format" of COPY), for Database.copyIn. Binary rather than
// text: PostgreSQL then parses no value, and on the embedded database (WebAssembly) parsing a timestamptz and a
// real from text was half of a request-log row's cost (bench/RESULTS.md, 2026-11-28).

/** A column of copyIn and the type its values are sent as (the table's column must be of that type). */
export interface CopyColumn {
  name: string;
  type: 'text' | 'int4' | 'int8' | 'float4' | 'timestamptz';
}

/** A value: a string (text), a number (integers, float4, and timestamptz as milliseconds since 1970), or null. */
export type CopyValue = string | number | null;

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** PostgreSQL counts timestamps in microseconds from 2000-01-01 UTC. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
const TWO_TO_32 = 2 ** 32;

function wrongValue(column: CopyColumn, value: CopyValue): Error {
  return new Error(`COPY value for ${column.name} (${column.type}) is not one: ${typeof value}`);
}

/** Bytes of a value after its length word; -1 for null. */
function valueSize(column: CopyColumn, value: CopyValue): number {
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

/** The whole COPY data of `rows`: header, one tuple per row, trailer. Throws on a value of the wrong kind. */
export function encodeCopyRows(columns: readonly CopyColumn[], rows: ReadonlyArray<readonly CopyValue[]>): Buffer {
  let size = SIGNATURE.length + 8 + 2;
  for (const row of rows) {
    if (row.length !== columns.length) throw new Error(`COPY row of ${row.length} values for ${columns.length} columns`);
    size += 2;
    columns.forEach((column, i) => (size += 4 + Math.max(0, valueSize(column, row[i] as CopyValue))));
  }
  const buffer = Buffer.alloc(size);
  let offset = SIGNATURE.copy(buffer, 0);
  offset = buffer.writeUInt32BE(0, offset); // flags: no OIDs
  offset = buffer.writeUInt32BE(0, offset); // no header extension
  for (const row of rows) {
    offset = buffer.writeInt16BE(columns.length, offset);
    columns.forEach((column, i) => {
      const value = row[i] as CopyValue;
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

/** The COPY statement of `columns` of `table` in binary format, reading from `source` (STDIN, or a file). */
export function copyStatement(table: string, columns: readonly CopyColumn[], source: string): string {
  return `COPY ${table} (${columns.map((c) => c.name).join(', ')}) FROM ${source} WITH (FORMAT binary)`;
}
