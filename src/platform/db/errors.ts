// What a failed statement may tell the log. Driver errors carry the data the statement touched: PGlite
// attaches the statement's parameters (names, e-mails, phone numbers) to its errors, PostgreSQL's `detail`
// quotes row values ("Key (email)=(…) already exists", "Failing row contains (…)"), and some messages quote
// the offending value (`invalid input syntax for type uuid: "…"`). Every error leaving the database port is
// replaced by a DatabaseError that keeps only what identifies the failure (README: Security).

/** The fields of a PostgreSQL error that name the failure, never the data. */
const KEPT_FIELDS = ['code', 'severity', 'constraint', 'table', 'column', 'schema', 'dataType', 'routine'] as const;
type KeptField = (typeof KEPT_FIELDS)[number];

/** A quoted name in a PostgreSQL message, kept only when it is an identifier this failure is about. */
const QUOTED = /"([^"]*)"/g;
const IDENTIFIER = /^[a-z_][a-z0-9_$]*$/;

export class DatabaseError extends Error implements Partial<Record<KeptField, string>> {
  readonly code?: string;
  readonly severity?: string;
  readonly constraint?: string;
  readonly table?: string;
  readonly column?: string;
  readonly schema?: string;
  readonly dataType?: string;
  readonly routine?: string;

  constructor(
    message: string,
    fields: Partial<Record<KeptField, string>>,
    /**
     * The database could not be reached or did not answer in time (server PostgreSQL only: PGlite is in
     * process): not this statement's fault, a later attempt may succeed. Requests answer 503 (README: Faults).
     */
    readonly unavailable = false,
  ) {
    super(message);
    Object.assign(this, fields);
  }
}
DatabaseError.prototype.name = 'DatabaseError';

/**
 * The safe form of an error thrown by a driver while running `sql` (its text with placeholders, never
 * values). Its stack is the caller's, not the driver's: the driver's first stack line repeats the message.
 */
export function databaseError(error: unknown, sql: string, unavailable = false): DatabaseError {
  if (error instanceof DatabaseError) return error;
  const source = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const fields: Partial<Record<KeptField, string>> = {};
  for (const field of KEPT_FIELDS) {
    const value = source[field];
    if (typeof value === 'string' || typeof value === 'number') fields[field] = String(value);
  }
  const known = new Set([fields.constraint, fields.table, fields.column, fields.schema, fields.dataType]);
  const message = typeof source.message === 'string' ? source.message : String(error);
  const redacted = message.replace(QUOTED, (quoted, inner: string) =>
    IDENTIFIER.test(inner) && (known.has(inner) || sql.includes(inner)) ? quoted : '"[redacted]"',
  );
  return new DatabaseError(redacted, fields, unavailable);
}

/** Whether `error` says the database is away (or too slow) rather than that the statement was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return error instanceof DatabaseError && error.unavailable;
}
