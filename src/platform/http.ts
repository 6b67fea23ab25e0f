// HTTP plumbing shared by every route: validation, the error envelope, Cache-Control, 404 and 405, and the
// answers the router and Node's HTTP parser would otherwise give in their own formats.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type {
  ConnectionError,
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  RouteOptions,
} from 'fastify';
import type { RouteAccess } from './access.ts';
import { isDatabaseUnavailable } from './db/errors.ts';
import { ApiError, errors, type ErrorBody, type ErrorDetail } from './errors.ts';
import { loggableError } from './logging.ts';
import { ErrorEnvelope } from './schemas.ts';

export const CACHE_CONTROL = 'no-store, private';

// Bodies are validated strictly (no coercion, every error reported so each unknown field gets its detail);
// query strings and route parameters arrive as text, so they are coerced to the schema's types.
// Schema defaults document the API; services apply them, so an update never receives fields it was not sent.
// strictNumbers (bodies): a JSON number that overflows (`1e400`) parses as Infinity, which is no number of any
// field. Not for text: ajv would skip `maximum` on the Infinity its coercion makes of 400 digits, so there the
// decimal-digits rule below and each schema's bounds decide (a 400-digit id is over its maximum).
function newAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: !coerce,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: false,
    strict: false,
    strictNumbers: !coerce,
  });
  addFormats.default(ajv);
  return ajv;
}

const NUL = '\u0000';

/** A JSON pointer segment, as ajv writes them in `instancePath`. */
const pointer = (key: string | number): string => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

function ruleError(instancePath: string, keyword: string, message: string): ErrorObject {
  return { keyword, instancePath, schemaPath: '#', params: {}, message };
}

/**
 * Every string (and object key) holding U+0000, wherever it sits in a body, query or path: PostgreSQL text
 * cannot store it, so it is refused for every field at once here rather than field by field (README: API
 * notes). Walked without recursion, so no nesting depth can overflow the stack.
 */
export function nulCharacterErrors(data: unknown): ErrorObject[] {
  const found: ErrorObject[] = [];
  const pending: Array<[string, unknown]> = [['', data]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [path, value] = next;
    if (typeof value === 'string') {
      if (value.includes(NUL)) found.push(ruleError(path, 'nulCharacter', 'must not contain the NUL character (U+0000)'));
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => pending.push([path + pointer(index), item]));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes(NUL)) found.push(ruleError(path + pointer(key), 'nulCharacter', 'must not contain the NUL character (U+0000)'));
        pending.push([path + pointer(key), item]);
      }
    }
  }
  return found.reverse();
}

/** Plain decimal digits, optionally negative: no `+`, spaces, `0x`, fractions or exponents. */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

/** The properties of a query or params schema that are integers (README: API notes, path ids and limits). */
function integerProperties(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  return Object.entries(properties)
    .filter(([, property]) => property.type === 'integer')
    .map(([name]) => name);
}

/**
 * Text that ajv's coercion would read as an integer although it is not written as one: `0x7`, `7.0`, `7e0`,
 * `+7`, ` 7` and `Infinity` all became 7 (or Infinity), so a path id had many spellings.
 */
function malformedIntegerErrors(data: unknown, integerNames: string[]): ErrorObject[] {
  if (integerNames.length === 0 || data === null || typeof data !== 'object') return [];
  const found: ErrorObject[] = [];
  for (const name of integerNames) {
    const value = (data as Record<string, unknown>)[name];
    const texts = Array.isArray(value) ? value : [value];
    if (texts.some((text) => typeof text === 'string' && !DECIMAL_INTEGER.test(text))) {
      found.push(ruleError(pointer(name), 'decimalInteger', 'must be a plain decimal integer'));
    }
  }
  return found;
}

type CheckFunction = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = newAjv(false);
  const textAjv = newAjv(true);
  return ({ schema, httpPart }) => {
    if (httpPart === 'body') {
      const validate = bodyAjv.compile(schema as object);
      // The NUL rule is reported together with every schema error, so a body gets all its details at once.
      const check: CheckFunction = (data) => {
        const nul = nulCharacterErrors(data);
        const valid = validate(data);
        check.errors = [...nul, ...(validate.errors ?? [])];
        return valid && nul.length === 0;
      };
      return check;
    }
    const validate = textAjv.compile(schema as object);
    const integers = integerProperties(schema);
    // Query and path text is checked before ajv coerces it (the first problem is the answer's message).
    const check: CheckFunction = (data) => {
      const problems = [...nulCharacterErrors(data), ...malformedIntegerErrors(data, integers)];
      if (problems.length > 0) {
        check.errors = problems;
        return false;
      }
      const valid = validate(data);
      check.errors = validate.errors ?? null;
      return valid;
    };
    return check;
  };
}

/** `/security_groups/0` -> `security_groups[0]`; `/a/b` -> `a.b`. */
export function fieldPath(instancePath: string, child?: string): string {
  const parts = instancePath.split('/').filter((p) => p !== '');
  if (child !== undefined) parts.push(child);
  let out = '';
  for (const part of parts) {
    const decoded = part.replace(/~1/g, '/').replace(/~0/g, '~');
    if (/^\d+$/.test(decoded)) out += `[${decoded}]`;
    else out += out === '' ? decoded : `.${decoded}`;
  }
  return out;
}

export function bodyErrorDetails(validation: ErrorObject[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const error of validation) {
    let detail: ErrorDetail;
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'additionalProperties') {
      const field = fieldPath(error.instancePath, String(params.additionalProperty));
      detail = { field, code: 'unknown_field', message: `${field} is not a field of this request.` };
    } else if (error.keyword === 'required') {
      const field = fieldPath(error.instancePath, String(params.missingProperty));
      detail = { field, code: 'invalid', message: `${field} is required.` };
    } else {
      const field = fieldPath(error.instancePath) || 'body';
      detail = { field, code: 'invalid', message: `${field} ${error.message ?? 'is invalid'}.` };
    }
    const key = `${detail.field}|${detail.code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push(detail);
  }
  return details;
}

function toApiError(error: FastifyError): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error.validation) {
    if (error.validationContext === 'body') return errors.validation(bodyErrorDetails(error.validation as ErrorObject[]));
    const first = error.validation[0] as ErrorObject | undefined;
    const name = first ? fieldPath(first.instancePath, (first.params as { missingProperty?: string }).missingProperty) : '';
    const where = error.validationContext === 'params' ? 'path parameter' : 'query parameter';
    return errors.invalidRequest(`The ${where} ${name || '(unknown)'} ${first?.message ?? 'is invalid'}.`.replace(/\s+\./, '.'));
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Fastify's own client errors: malformed JSON, unsupported media type, body too large.
    const message =
      error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError
        ? 'The request body is not valid JSON.'
        : error.message;
    return errors.badRequest(status, message);
  }
  return null;
}

/** The one body of a 500: no internals, the request id to find the details in the log. */
const serverErrorBody = (requestId: string): ErrorBody => errors.serverError(requestId).toBody();

export function installHttpPlumbing(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler());

  // Requests that arrive on an open connection while the app closes (app.ts sets return503OnClosing: false,
  // whose 503 had Fastify's own body) are refused here, in the envelope; Fastify adds Connection: close.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('cache-control', CACHE_CONTROL);
    reply.header('x-request-id', request.id);
    if (closing) return done(errors.shuttingDown());
    done();
  });

  // After authentication and rate limits (onRequest), so a path the router could not decode, or an HTTP/1.1
  // request without Host (which Node would refuse with an empty 400, app.ts turns that off), is counted and
  // refused like any other malformed request.
  app.addHook('preValidation', (request, _reply, done) => {
    if (malformedPaths.has(request.raw)) return done(errors.invalidRequest('The path is not valid percent-encoded UTF-8.'));
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return done(errors.invalidRequest('An HTTP/1.1 request needs a Host header.'));
    }
    done();
  });

  // An Expect header other than 100-continue made Node answer an empty 417 itself. RFC 9110 lets a server
  // ignore it (417 is a MAY), so such a request is served like any other.
  app.server.on('checkExpectation', (req, res) => app.routing(req, res));

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (isDatabaseUnavailable(error)) {
      // Server PostgreSQL away or too slow (README: Faults): the client may retry; nothing of it is stored
      // under an Idempotency-Key (5xx never are).
      request.log.warn({ err: loggableError(error), requestId: request.id, route: request.routeOptions.url }, 'database unavailable');
      const unavailable = errors.databaseUnavailable();
      return reply.code(unavailable.status).headers(unavailable.headers ?? {}).send(unavailable.toBody());
    }
    const apiError = toApiError(error);
    if (apiError) {
      if (apiError.headers) reply.headers(apiError.headers);
      return reply.code(apiError.status).send(apiError.toBody());
    }
    // The route's pattern, not its URL: the query string may hold e-mail or phone.
    request.log.error(
      { err: error, requestId: request.id, method: request.method, route: request.routeOptions.url },
      'unexpected error',
    );
    return reply.code(500).send(serverErrorBody(request.id));
  });

  app.setNotFoundHandler((request, reply) => {
    reply.header('cache-control', CACHE_CONTROL);
    const body = errors.notFound('route').toBody();
    return reply.code(404).send(body);
  });
}

/** Requests whose path is not valid percent-encoding; refused with 400 once authenticated and counted. */
const malformedPaths = new WeakSet<IncomingMessage>();

/**
 * Fastify's `rewriteUrl`: a path that does not percent-decode (`/v1/locks/%ff`) would make the router answer
 * in its own format, before authentication and rate limits. Its `%` are escaped so that it routes like any
 * path, and it is flagged for the preValidation hook above.
 */
export function escapeMalformedPath(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  if (!path.includes('%')) return url;
  try {
    decodeURIComponent(path);
    return url;
  } catch {
    malformedPaths.add(req);
    return path.replace(/%/g, '%25') + url.slice(path.length);
  }
}

/**
 * The router's parameter length limit: longer than any request line Node's parser accepts (16 KiB of
 * headers), so an over-long parameter reaches its schema and answers 400 invalid_request, counted, rather
 * than the router's own 414.
 */
export const ROUTER_MAX_PARAM_LENGTH = 16 * 1024;

/**
 * Fastify's `frameworkErrors`: what the router still answers itself (a URL it cannot decode despite the
 * rewrite above, a parameter beyond ROUTER_MAX_PARAM_LENGTH), in the envelope with the usual headers.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', CACHE_CONTROL);
  reply.header('x-request-id', request.id);
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    const message = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long.' : 'The path is not a valid URL path.';
    void reply.code(status).send(errors.badRequest(status, message).toBody());
    return;
  }
  request.log.error({ err: error, requestId: request.id }, 'unexpected router error');
  void reply.code(500).send(serverErrorBody(request.id));
}

const CLIENT_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large.'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request was not received in time.'],
};

/**
 * The answer to a request Node's HTTP parser refused before Fastify saw it (headers over 16 KiB, a line
 * that is not HTTP, a request too slow to arrive): the envelope, written to the socket directly as Node
 * requires, with Cache-Control and a request id. Not counted against any budget: no header was read, so
 * neither the API key nor (behind a proxy) the client IP is known.
 */
export function answerClientError(this: { log: FastifyBaseLogger }, error: ConnectionError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // Only the code: the error's rawPacket holds the request's bytes, its headers and token among them.
  this.log.debug({ code: error.code }, 'client error');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] = CLIENT_ERRORS[error.code] ?? [400, 'The request is not valid HTTP.'];
  const body = JSON.stringify(errors.badRequest(status, message).toBody());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `Cache-Control: ${CACHE_CONTROL}\r\n` +
      `X-Request-Id: ${genReqId()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** A route as a module declared it: the rules common to every route are tested by walking these. */
export interface DeclaredRoute {
  methods: string[];
  url: string;
  schema: RouteOptions['schema'];
  access: RouteAccess;
}

const declaredRoutesOf = new WeakMap<FastifyInstance, DeclaredRoute[]>();

/** Every route the modules declared on `app` (not the 405 answers added by trackRoutes). */
export function declaredRoutes(app: FastifyInstance): readonly DeclaredRoute[] {
  return declaredRoutesOf.get(app) ?? [];
}

/** Methods whose requests carry a body that the service parses. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Records every route's methods as they are added, so that answerUnsupportedMethods() can answer
 * `405 invalid_request` (with `Allow`) for a known path called with another method.
 */
export function trackRoutes(app: FastifyInstance): () => void {
  const methodsByPath = new Map<string, Set<string>>();
  const declared: DeclaredRoute[] = [];
  declaredRoutesOf.set(app, declared);
  app.addHook('onRoute', (route: RouteOptions) => {
    const access = route.config?.access;
    // A route that forgot to say who may call it must not go live open.
    if (!access) throw new Error(`route ${String(route.method)} ${route.url} declares no access`);
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (access.kind === 'public') {
      // The OpenAPI document names the scopes each operation accepts (any one of them), and, where a body
      // can be sent, the answers to one too large (413) or not JSON (415).
      const bodyErrors = methods.some((m) => BODY_METHODS.has(m)) ? { 413: ErrorEnvelope, 415: ErrorEnvelope } : {};
      const response = route.schema?.response ? { ...bodyErrors, ...(route.schema.response as object) } : undefined;
      route.schema = { ...route.schema, security: [{ bearer: access.scopes }], ...(response ? { response } : {}) };
    }
    declared.push({ methods, url: route.url, schema: route.schema, access });
    const set = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of methods) set.add(method);
    methodsByPath.set(route.url, set);
  });
  return () => {
    const frozen = [...declared];
    declaredRoutesOf.set(app, frozen);
    const all = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
    for (const [url, methods] of [...methodsByPath]) {
      const missing = all.filter((m) => !methods.has(m));
      if (missing.length === 0 || url === '*') continue;
      const allowed = [...methods].filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
      app.route({
        method: missing,
        url,
        schema: { hide: true },
        config: { access: { kind: 'open' } },
        handler: async (request) => {
          throw errors.methodNotAllowed(request.method, allowed);
        },
      });
    }
  };
}

export const genReqId = (): string => randomUUID();

/** A path safe to log: no query string (it may hold e-mail or phone), no setup-link token. */
export function safePath(url: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.startsWith('/activate/') ? path.replace(/^\/activate\/[^/]+/, '/activate/[token]') : path;
}
