// The last touches @fastify/swagger cannot make from route schemas: each document keeps only the named
// schemas it uses, an optional body reads as optional, and answers show the headers the service sends.
type Json = Record<string, unknown>;

interface Operation {
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses?: Record<string, Json>;
}

const SCHEMAS = '#/components/schemas/';
const HEADERS = '#/components/headers/';

/** The headers the documents describe (spec: Limits; README: API notes, Rate limits). */
const PUBLIC_HEADERS = {
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    schema: { type: 'integer', minimum: 1 },
  },
  'X-RateLimit-Limit': {
    description: "Requests allowed a minute by the limiter closest to exhaustion (the API key's budget or the operation's own).",
    schema: { type: 'integer', minimum: 1 },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in the current one-minute window of that limiter.',
    schema: { type: 'integer', minimum: 0 },
  },
};

const header = (name: keyof typeof PUBLIC_HEADERS) => ({ $ref: `${HEADERS}${name}` });

/** Every `$ref` to a named schema anywhere under `value`. */
function schemaRefs(value: unknown, found: Set<string>): void {
  if (Array.isArray(value)) {
    for (const item of value) schemaRefs(item, found);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string' && item.startsWith(SCHEMAS)) found.add(item.slice(SCHEMAS.length));
      else schemaRefs(item, found);
    }
  }
}

/** Only the named schemas the paths use, directly or through other named schemas. */
function usedSchemas(paths: unknown, schemas: Record<string, unknown>): Record<string, unknown> {
  const used = new Set<string>();
  schemaRefs(paths, used);
  for (let grew = true; grew; ) {
    grew = false;
    for (const name of [...used]) {
      const before = used.size;
      schemaRefs(schemas[name], used);
      grew ||= used.size > before;
    }
  }
  return Object.fromEntries(Object.keys(schemas).sort().filter((name) => used.has(name)).map((name) => [name, schemas[name]]));
}

/**
 * A body that may be left out is a route schema `anyOf: [body, null]` (Fastify then accepts no body); the
 * document shows the body alone and marks it optional.
 */
function markOptionalBody(operation: Operation): void {
  const media = operation.requestBody?.content?.['application/json'];
  const anyOf = media?.schema?.anyOf;
  if (!media || !Array.isArray(anyOf) || anyOf.length !== 2) return;
  const body = (anyOf as Json[]).find((member) => member.type !== 'null');
  if (!body || !(anyOf as Json[]).some((member) => member.type === 'null')) return;
  media.schema = body;
  if (operation.requestBody) operation.requestBody.required = false;
}

function addHeaders(operation: Operation, kind: 'public' | 'admin'): void {
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const description = String(response.description ?? '');
    const headers: Record<string, unknown> = {};
    // Sent once the API key is known: with every success and with the 429 of an exhausted key or route budget.
    if (kind === 'public' && (status.startsWith('2') || status === '429')) {
      headers['X-RateLimit-Limit'] = header('X-RateLimit-Limit');
      headers['X-RateLimit-Remaining'] = header('X-RateLimit-Remaining');
    }
    if (status === '429' || status === '503' || description.includes('idempotency_in_progress')) headers['Retry-After'] = header('Retry-After');
    if (Object.keys(headers).length > 0) response.headers = { ...(response.headers as object | undefined), ...headers };
  }
}

/** The transformObject of both documents. */
export function finishDocument<T extends object>(document: T, kind: 'public' | 'admin'): T {
  const doc = document as Json & { paths?: Record<string, Record<string, Operation>>; components?: Json };
  for (const methods of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(methods)) {
      markOptionalBody(operation);
      addHeaders(operation, kind);
    }
  }
  const components = { ...doc.components };
  components.schemas = usedSchemas(doc.paths, (components.schemas ?? {}) as Record<string, unknown>);
  components.headers = kind === 'public' ? PUBLIC_HEADERS : { 'Retry-After': PUBLIC_HEADERS['Retry-After'] };
  return { ...document, components };
}
