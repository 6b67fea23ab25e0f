// The console's one way to the service: the session endpoints and the /console/api proxy (docs/console.md).
// Every answer that is not a success becomes an RequestError with the spec's envelope; a 401 from anything means
// the session is gone, and the app goes back to the sign-in page.

export interface FieldProblem {
  field: string;
  code: string;
  message?: string;
}

export class RequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldProblem[] = [],
  ) {
    super(message);
    this.name = 'RequestError';
  }
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}

export interface Session {
  csrf_token: string;
  expires_at: string;
}

type Query = Record<string, string | number | boolean | null | undefined>;

let csrf = '';
const signedOutListeners = new Set<() => void>();

/** Called when any request answers 401: the session has ended. */
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

function signedOut(): void {
  csrf = '';
  for (const listener of signedOutListeners) listener();
}

/** Words for a detail code when the service gave no message. */
const DETAIL_WORDS: Record<string, string> = {
  invalid: 'This value is not valid.',
  unknown_field: 'This field is not accepted here.',
  reserved_name: 'This name is reserved.',
  unknown_security_group: 'No such security group at this location.',
  sms_disabled: 'SMS is not enabled for this account.',
  limit_reached: 'The limit is reached.',
  not_editable: 'This cannot be changed on this key.',
};

export function problemWords(problem: FieldProblem): string {
  return problem.message || DETAIL_WORDS[problem.code] || problem.code;
}

async function toError(response: Response): Promise<RequestError> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: a proxy or the network in between
  }
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (error && typeof error.code === 'string') {
    const details = Array.isArray(error.details) ? (error.details as FieldProblem[]) : [];
    let message = typeof error.message === 'string' ? error.message : error.code;
    if (response.status === 429) {
      const wait = response.headers.get('retry-after');
      if (wait) message += ` Try again in ${wait} s.`;
    }
    return new RequestError(response.status, error.code, message, details);
  }
  return new RequestError(response.status, 'server_error', `The service answered ${response.status}.`);
}

function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || value === null || value === '') continue;
    params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `${path}${path.includes('?') ? '&' : '?'}${text}` : path;
}

export interface RequestOptions {
  /** The account a `/v1` path acts in (header Latchkey-Account). */
  account?: number;
  body?: unknown;
  query?: Query;
}

async function send(method: string, url: string, options: RequestOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['x-csrf-token'] = csrf;
  if (options.account !== undefined) headers['latchkey-account'] = String(options.account);
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  try {
    return await fetch(url, { method, headers, body, credentials: 'same-origin' });
  } catch {
    throw new RequestError(0, 'network', 'The service could not be reached. Check the connection and try again.');
  }
}

/** A call of the operator API (`/admin/v1/…`) or the public API (`/v1/…`, with `account`). */
export async function api<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  return (await apiWithStatus<T>(method, path, options)).body;
}

/** As api, with the status of a success too (`POST /v1/people` answers 200 for a person who already exists). */
export async function apiWithStatus<T>(method: string, path: string, options: RequestOptions = {}): Promise<{ status: number; body: T }> {
  if (path.startsWith('/v1/') && options.account === undefined) throw new Error(`${path} needs an account`);
  const response = await send(method, withQuery('/console/api' + path, options.query), options);
  if (response.status === 401) {
    signedOut();
    throw await toError(response);
  }
  if (!response.ok) throw await toError(response);
  if (response.status === 204 || response.headers.get('content-length') === '0') return { status: response.status, body: undefined as T };
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export const get = <T>(path: string, options: Omit<RequestOptions, 'body'> = {}) => api<T>('GET', path, options);

/** The live session, or null when there is none (the sign-in page). */
export async function currentSession(): Promise<Session | null> {
  const response = await send('GET', '/console/session', {});
  if (response.status === 401) return null;
  if (!response.ok) throw await toError(response);
  const session = (await response.json()) as Session;
  csrf = session.csrf_token;
  return session;
}

export async function signIn(token: string): Promise<Session> {
  const response = await send('POST', '/console/session', { body: { token } });
  if (!response.ok) throw await toError(response);
  const session = (await response.json()) as Session;
  csrf = session.csrf_token;
  return session;
}

export async function signOut(): Promise<void> {
  const response = await send('DELETE', '/console/session', {});
  if (!response.ok && response.status !== 401) throw await toError(response);
  signedOut();
}
