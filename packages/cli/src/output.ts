// What commands print: tables for lists, "field  value" lines for one object, and with --json the API's own
// JSON (lists as the page envelope `{ data, next_cursor }`), so scripts read what the API documents.
import { createRequire } from 'node:module';
import type TableModule from 'cli-table3';

// Loaded when a table is printed, not on every call (--help, --json, one object): cli-table3 and its
// string-width dependencies are most of what the CLI would load otherwise.
const require = createRequire(import.meta.url);

export type Column<T> = [header: string, cell: (row: T) => unknown];

/** A plain table (no borders, upper-case headers), wide characters measured by cli-table3. */
export function table<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>): string {
  const Table = require('cli-table3') as typeof TableModule;
  const grid = new Table({
    head: columns.map(([header]) => header.toUpperCase()),
    chars: {
      top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
      bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
      left: '', 'left-mid': '', mid: '', 'mid-mid': '', right: '', 'right-mid': '', middle: '  ',
    },
    // No colours: the output is read by people and by grep alike.
    style: { 'padding-left': 0, 'padding-right': 0, head: [], border: [] },
  });
  for (const row of rows) grid.push(columns.map(([, cell]) => text(cell(row))));
  // cli-table3 pads the last column too; trailing blanks only get in the way of grep and diff.
  return grid.toString().split('\n').map((line) => line.trimEnd()).join('\n');
}

/** One object as aligned `field  value` lines; nested objects are flattened (`root_location.id`). */
export function details(value: object): string {
  const lines: Array<[string, string]> = [];
  flatten(value, '', lines);
  const width = Math.max(0, ...lines.map(([field]) => field.length));
  return lines.map(([field, cell]) => `${field.padEnd(width)}  ${cell}`.trimEnd()).join('\n');
}

function flatten(value: object, prefix: string, lines: Array<[string, string]>): void {
  for (const [field, cell] of Object.entries(value)) {
    const name = prefix + field;
    if (cell !== null && typeof cell === 'object' && !Array.isArray(cell)) flatten(cell as object, `${name}.`, lines);
    else lines.push([name, text(cell)]);
  }
}

/** A cell: `-` for null, lists joined by commas, objects as JSON. */
export function text(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map((item) => (typeof item === 'object' ? JSON.stringify(item) : String(item))).join(', ');
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** `Acme (1)` for a `{ id, name }` reference. */
export function ref(value: { id: number | string; name: string } | null | undefined): string {
  return value ? `${value.name} (${value.id})` : '-';
}

export function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}
