// HTTP plumbing shared by every route: the error envelope, Cache-Control and the request id on every answer,
// 404, and the answers the router and Node's HTTP parser would otherwise give in their own formats.
// Validation rules are in validation.ts, the route table (405, declared access) in route-table.ts.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { ErrorObject } from 'ajv';
import fastJson, { type Schema as FastJsonSchema } from 'fast-json-stringify';
import type { ConnectionError, FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from './db/errors.ts';
import { ApiError, errors, type ErrorBody } from './errors.ts';
import { loggableError } from './logging.ts';
import { inlineRefs, namedSchemas } from './openapi-schemas.ts';
import { bodyErrorDetails, compiledOnFirstUse, fieldPath, parameterProblem, validatorCompiler, type CompileOptions } from './validation.ts';

export const CACHE_CONTROL = 'no-store, private';

function toApiError(error: FastifyError): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error.validation) {
    if (error.validationContext === 'body') return errors.validation(bodyErrorDetails(error.validation as ErrorObject[]));
    const first = error.validation[0] as ErrorObject | undefined;
    const name = first ? fieldPath(first.instancePath, (first.params as { missingProperty?: string }).missingProperty) : '';
    const where = error.validationContext === 'params' ? 'path parameter' : 'query parameter';
    const problem = parameterProblem(error.validation as ErrorObject[]);
    return errors.invalidRequest(`The ${where} ${name || '(unknown)'} ${problem}.`.replace(/\s+\./, '.'));
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Fastify's own client errors: malformed JSON, unsupported media type, body too large.
    const message =
      error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError
        ? 'The request body is not valid JSON.'
        : error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
          ? 'Unsupported Media Type: the request body must be JSON, sent with Content-Type: application/json.'
          : error.message;
    return errors.badRequest(status, message);
  }
  return null;
}

/**
 * The deepest nesting of arrays and objects a JSON body may have. The API's own bodies are 3 deep at most;
 * JSON.parse has no bound, and a megabyte of brackets cost seconds of one event loop and hundreds of MB.
 */
export const MAX_JSON_DEPTH = 32;

/** Whether `text` nests arrays and objects deeper than `max`: one pass over the characters, strings skipped. */
export function nestedDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character, a quote among them
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * application/json for every route: UTF-8 (bytes that are not would be stored as U+FFFD without a word),
 * nested at most MAX_JSON_DEPTH (checked before parsing), then Fastify's own parser (prototype poisoning
 * refused). Malformed JSON keeps its 400.
 */
function installJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // Fastify also reads text/plain by default, as a string, which then failed the body's schema with a 422. Every
  // body of the API is JSON: any other type answers 415 invalid_request (README: API notes).
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    let text: string;
    try {
      text = strictUtf8.decode(body);
    } catch {
      return done(errors.invalidRequest('The request body is not valid UTF-8.'), undefined);
    }
    // No body at all, sent as JSON (many clients label every POST so): as if none was sent. A route without a body
    // then runs; one that needs a body answers its 422 rather than Fastify's "Body cannot be empty".
    if (body.length === 0) return done(null, undefined);
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      return done(errors.invalidRequest(`The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`), undefined);
    }
    parseJson(request, text, done);
  });
}

/** The one body of a 500: no internals, the request id to find the details in the log. */
const serverErrorBody = (requestId: string): ErrorBody => errors.serverError(requestId).toBody();

/**
 * Response serialisers from the schema with its named parts inlined. Fastify's default hands every route's
 * serialiser all shared schemas, which fast-json-stringify checks one by one for each response of each route:
 * that tripled the start-up (about 200 ms to 800 ms) once the documents named their schemas. Compiled on first
 * use, as the validators are (validation.ts, CompileOptions).
 */
export function serializerCompiler({ lazy = true }: CompileOptions = {}) {
  return ({ schema }: { schema: unknown }): ((data: unknown) => string) => {
    const serialize = compiledOnFirstUse(() => fastJson(inlineRefs(schema) as FastJsonSchema), lazy);
    return (data) => serialize()(data);
  };
}

export function installHttpPlumbing(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler(namedSchemas()));
  installJsonParser(app);
  app.setSerializerCompiler(serializerCompiler());

  // Requests that arrive on an open connection while the app closes (app.ts sets return503OnClosing: false,
  // whose 503 had Fastify's own body) are refused here, in the envelope; Fastify adds Connection: close.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('cache-control', CACHE_CONTROL);
    // No answer is ever to be read as another type than it says (a JSON error as HTML, say).
    reply.header('x-content-type-options', 'nosniff');
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
    reply.header('x-content-type-options', 'nosniff');
    const body = errors.notFound('route').toBody();
    return reply.code(404).send(body);
  });
}

export const STREAM_NOT_FORWARDED =
  'This endpoint is a stream (server-sent events), served only to a client connected to the service itself: the operator console does not forward it. Call it with an API key (`latchkey webhooks listen`).';

/**
 * Takes a reply over for a stream (server-sent events) and writes its head: `headers`, the stream's own, over
 * those the hooks have set (X-Request-Id, X-Content-Type-Options, X-RateLimit-*, Cache-Control). Fastify holds
 * those until it sends, and a hijacked reply is never sent by Fastify, so without the copy they were lost.
 */
export function takeOverForStream(reply: FastifyReply, headers: OutgoingHttpHeaders): ServerResponse {
  // A request made in-process by app.inject (the console's forwarder) has no connection to stream on: its
  // answer is collected whole, so a stream would never complete it. Refused before anything is taken over.
  const socket = reply.raw.socket;
  if (socket !== null && !(socket instanceof Socket)) throw errors.invalidRequest(STREAM_NOT_FORWARDED);
  const head: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) head[name] = value;
  reply.hijack();
  reply.raw.writeHead(200, { ...head, ...headers });
  return reply.raw;
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
 * No request line is longer: Node's HTTP parser refuses headers over 16 KiB, the request line among them, with
 * 431 before anything else runs. The bound of query values that match nothing when unrecognised (spec: an
 * empty page, not an error), where a schema's limit is only a guard.
 */
export const MAX_REQUEST_LINE_LENGTH = 16 * 1024;

/**
 * The router's parameter length limit: longer than any request line Node's parser accepts (16 KiB of
 * headers), so an over-long parameter reaches its schema and answers 400 invalid_request, counted, rather
 * than the router's own 414.
 */
export const ROUTER_MAX_PARAM_LENGTH = MAX_REQUEST_LINE_LENGTH;

/**
 * Fastify's `frameworkErrors`: what the router still answers itself (a URL it cannot decode despite the
 * rewrite above, a parameter beyond ROUTER_MAX_PARAM_LENGTH), in the envelope with the usual headers.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('cache-control', CACHE_CONTROL);
  reply.header('x-content-type-options', 'nosniff');
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
      'X-Content-Type-Options: nosniff\r\n' +
      `X-Request-Id: ${genReqId()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

export const genReqId = (): string => randomUUID();

/**
 * A path's printable ASCII escapes decoded, again and again (`%2561` is `%61` is `a`), so that every spelling
 * of `/activate/…` a client may send (`/%61ctivate/…`, `/activate%2F…`) reads as one. Other escapes (control
 * characters, UTF-8 bytes) stay as they are: what comes out is printable, never a NUL the request log cannot hold.
 */
function decodedAscii(path: string): string {
  let current = path;
  for (;;) {
    const next = current.replace(/%([2-7][0-9a-fA-F])/g, (escape, hex: string) => {
      const code = parseInt(hex, 16);
      return code >= 0x20 && code < 0x7f ? String.fromCharCode(code) : escape;
    });
    if (next === current) return current;
    current = next;
  }
}

/**
 * A path safe to log: no query string (it may hold e-mail or phone), no setup-link token. The token is masked
 * on the path as the router reads it and in any other spelling: whatever segment follows one that reads
 * `activate` once decoded, whatever its case, with repeated or encoded slashes
 * (`GET /%61ctivate/<token>` reaches the activation page).
 */
export function safePath(url: string): string {
  const end = url.search(/[?#]/);
  const path = end === -1 ? url : url.slice(0, end);
  if (!path.includes('%') && !/activate/i.test(path)) return path;
  const segments = decodedAscii(path).split('/').filter((segment) => segment !== '');
  let masked = false;
  for (let i = 0; i < segments.length - 1; i++) {
    if ((segments[i] as string).toLowerCase() === 'activate') {
      segments[i + 1] = '[token]';
      masked = true;
      i++;
    }
  }
  return masked ? `/${segments.join('/')}` : path;
}
