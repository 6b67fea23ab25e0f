// The route table as the modules declared it: every route states who may call it, the 405 answers for
// known paths called with another method, and the list the tests walk to check rules common to all routes.
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { RouteAccess } from './access.ts';
import { errors } from './errors.ts';
import { withCommonFailures } from './openapi-answers.ts';
import { inlineRefs } from './openapi-schemas.ts';

/** A route as a module declared it, named schemas inlined: the rules common to every route are tested by walking these. */
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
 * Who may be told that a path lacks a method: whoever may call the path. On a public path the 405 is
 * authenticated and counted like any request (any valid key, whatever its scopes), so it carries the
 * rate-limit headers; on an operator path it needs ADMIN_TOKEN.
 */
function accessOf405(kinds: Set<RouteAccess['kind']>): RouteAccess {
  if (kinds.has('public')) return { kind: 'public', scopes: [] };
  if (kinds.has('admin')) return { kind: 'admin' };
  return { kind: 'open' };
}

/**
 * Records every route's methods as they are added, so that the function returned can answer
 * `405 invalid_request` (with `Allow`) for a known path called with another method.
 */
export function trackRoutes(app: FastifyInstance): () => void {
  const methodsByPath = new Map<string, Set<string>>();
  const accessKindsByPath = new Map<string, Set<RouteAccess['kind']>>();
  const declared: DeclaredRoute[] = [];
  declaredRoutesOf.set(app, declared);
  app.addHook('onRoute', (route: RouteOptions) => {
    const access = route.config?.access;
    // A route that forgot to say who may call it must not go live open.
    if (!access) throw new Error(`route ${String(route.method)} ${route.url} declares no access`);
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (access.kind !== 'open') {
      // The OpenAPI documents list the answers every route of its kind can give (among them 413 and 415
      // where a body can be sent), and each public operation names the scopes it accepts (any one of them).
      const takesBody = methods.some((m) => BODY_METHODS.has(m));
      const response = route.schema?.response
        ? { response: withCommonFailures(route.schema.response as Record<string, unknown>, access.kind, takesBody) }
        : {};
      route.schema = { ...route.schema, ...(access.kind === 'public' ? { security: [{ bearer: access.scopes }] } : {}), ...response };
    }
    // Inlined when read (only tests walk these): inlining every route's schemas took about 40 ms of each start.
    const declaredSchema = route.schema;
    let inlined: RouteOptions['schema'] | undefined;
    declared.push({
      methods,
      url: route.url,
      get schema() {
        return (inlined ??= inlineRefs(declaredSchema) as RouteOptions['schema']);
      },
      access,
    });
    const set = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of methods) set.add(method);
    methodsByPath.set(route.url, set);
    const kinds = accessKindsByPath.get(route.url) ?? new Set<RouteAccess['kind']>();
    kinds.add(access.kind);
    accessKindsByPath.set(route.url, kinds);
  });
  return () => {
    const frozen = [...declared];
    declaredRoutesOf.set(app, frozen);
    // OPTIONS and TRACE too (no route serves them; the spec's 405 is for any method a path lacks), and HEAD
    // where the path has no GET (Fastify answers HEAD wherever it has one).
    const all = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];
    for (const [url, methods] of [...methodsByPath]) {
      const missing = all.filter((m) => !methods.has(m) && !(m === 'HEAD' && methods.has('GET')));
      if (missing.length === 0 || url === '*') continue;
      const allowed = [...methods].filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
      app.route({
        method: missing,
        url,
        schema: { hide: true },
        config: { access: accessOf405(accessKindsByPath.get(url) ?? new Set()) },
        handler: async (request) => {
          throw errors.methodNotAllowed(request.method, allowed);
        },
      });
    }
  };
}

