// What of an error may be written out: to the log (pino's `err` serializer, app.ts) and to the terminal
// when start-up fails (main.ts, through platform/startup.ts). Never the request, a query's parameters or a row's values.

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
 * A connection URL as the log may show it: scheme, user, host, port and path (the database name), never
 * the password or the query string (which may carry one, e.g. `?password=` or `?sslpassword=`).
 */
export function shownUrl(raw: string): string {
  try {
    const url = new URL(raw);
    const user = url.username ? `${url.username}@` : '';
    return `${url.protocol}//${user}${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '[unparsable URL]';
  }
}
