// HTTP plumbing shared by every route: validation, the error envelope, Cache-Control, 404 and 405.
import { randomUUID } from 'node:crypto';
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchemaCompiler,
  RouteOptions,
} from 'fastify';
import type { RouteAccess } from './access.ts';
import { ApiError, errors, type ErrorDetail } from './errors.ts';

export const CACHE_CONTROL = 'no-store, private';

// Bodies are validated strictly (no coercion, every error reported so each unknown field gets its detail);
// query strings and route parameters arrive as text, so they are coerced to the schema's types.
// Schema defaults document the API; services apply them, so an update never receives fields it was not sent.
// strictNumbers: a JSON number that overflows (`1e400`) parses as Infinity, which is no number of any field.
function newAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: !coerce,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: false,
    strict: false,
    strictNumbers: true,
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
    return new ApiError(status, 'invalid_request', message);
  }
  return null;
}

export function installHttpPlumbing(app: FastifyInstance): void {
  app.setValidatorCompiler(validatorCompiler());

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('cache-control', CACHE_CONTROL);
    reply.header('x-request-id', request.id);
    done();
  });

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const apiError = toApiError(error);
    if (apiError) {
      if (apiError.headers) reply.headers(apiError.headers);
      return reply.code(apiError.status).send(apiError.toBody());
    }
    request.log.error({ err: error, requestId: request.id }, 'unexpected error');
    return reply.code(500).send({
      error: { code: 'server_error', message: `An unexpected error occurred (request ${request.id}).` },
    });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.header('cache-control', CACHE_CONTROL);
    const body = errors.notFound('route').toBody();
    return reply.code(404).send(body);
  });
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
    if (access.kind === 'public') {
      // The OpenAPI document names the scopes each operation accepts (any one of them).
      route.schema = { ...route.schema, security: [{ bearer: access.scopes }] };
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method];
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
