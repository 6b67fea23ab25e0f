// What of an error may be written out: to the log (pino's `err` serializer, app.ts) and to the terminal
// when start-up fails (main.ts). Never the request, a query's parameters or a row's values.

/**
 * An error as the log may hold it: what failed and where, never the request. Framework and library errors
 * carry extra properties with request data (Node's parser errors the raw bytes, URL errors the input, a
 * query error its parameters), so only these fields are kept.
 */
export function loggableError(error: unknown, depth = 0): { type: string; message: string; stack: string; [key: string]: unknown } {
  // A text our own code logged as the error (already stripped of personal data where it needs to be).
  if (typeof error === 'string') return { type: 'string', message: error, stack: '' };
  if (!(error instanceof Error)) return { type: typeof error, message: '', stack: '' };
  const fields = error as Error & Record<'code' | 'statusCode' | 'constraint' | 'table' | 'column' | 'routine', unknown>;
  return {
    type: error.constructor.name,
    message: error.message,
    stack: error.stack ?? '',
    ...(fields.code !== undefined ? { code: fields.code } : {}),
    ...(fields.statusCode !== undefined ? { statusCode: fields.statusCode } : {}),
    // PostgreSQL's names of where it failed; never `detail`, which quotes the values.
    ...Object.fromEntries((['constraint', 'table', 'column', 'routine'] as const).filter((k) => typeof fields[k] === 'string').map((k) => [k, fields[k]])),
    ...(error.cause !== undefined && depth < 3 ? { cause: loggableError(error.cause, depth + 1) } : {}),
  };
}

/**
 * A failed start as the terminal shows it: each error of the chain with its stack, innermost cause last,
 * so the part that failed (database, broker, port) is named by the error that says so.
 */
export function describeFailure(error: unknown): string {
  const lines: string[] = [];
  for (let e: ReturnType<typeof loggableError> | undefined = loggableError(error), first = true; e; e = e.cause as typeof e | undefined, first = false) {
    const code = e.code !== undefined ? ` [${String(e.code)}]` : '';
    const head = e.stack || `${e.type}: ${e.message}`;
    lines.push(`${first ? '' : 'caused by: '}${head.replace(/^([^\n]*)/, `$1${code}`)}`);
  }
  return lines.join('\n');
}
