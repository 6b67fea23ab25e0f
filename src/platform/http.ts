// HTTP plumbing shared by every route: validation, the error envelope, Cache-Control, 404 and 405.
import { randomUUID } from 'node:crypto';
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler, RouteOptions } from 'fastify';
import './access.ts';
import { ApiError, errors, type ErrorDetail } from './errors.ts';

export const CACHE_CONTROL = 'no-store, private';

// Bodies are validated strictly (no coercion, every error reported so each unknown field gets its detail);
// query strings and route parameters arrive as text, so they are coerced to the schema's types.
// Schema defaults document the API; services apply them, so an update never receives fields it was not sent.
function newAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: !coerce,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: false,
    strict: false,
  });
  addFormats.default(ajv);
  return ajv;
}

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = newAjv(false);
  const textAjv = newAjv(true);
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema as object);
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

/**
 * Records every route's methods as they are added, so that answerUnsupportedMethods() can answer
 * `405 invalid_request` (with `Allow`) for a known path called with another method.
 */
export function trackRoutes(app: FastifyInstance): () => void {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route: RouteOptions) => {
    const access = route.config?.access;
    // A route that forgot to say who may call it must not go live open.
    if (!access) throw new Error(`route ${String(route.method)} ${route.url} declares no access`);
    if (access.kind === 'public') {
      // The OpenAPI document names the scopes each operation accepts (any one of them).
      route.schema = { ...route.schema, security: [{ bearer: access.scopes }] };
    }
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of methods) set.add(method);
    methodsByPath.set(route.url, set);
  });
  return () => {
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
