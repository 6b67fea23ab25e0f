// Route schemas are compiled on their first use (validation.ts, CompileOptions), so a schema that ajv or
// fast-json-stringify cannot compile would only show at that route's first request, as a 500. This compiles
// every declared route's schemas at once, with the service's own compilers, so such a schema fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifySchema } from 'fastify';
import { serializerCompiler } from '../../src/platform/http.ts';
import { namedSchemas } from '../../src/platform/openapi-schemas.ts';
import { declaredRoutes } from '../../src/platform/route-table.ts';
import { validatorCompiler } from '../../src/platform/validation.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

test("every route's request and response schemas compile", () => {
  const validator = validatorCompiler(namedSchemas(), { lazy: false });
  const serializer = serializerCompiler({ lazy: false });
  const routes = declaredRoutes(ctx.service.latchkey.app);
  assert.ok(routes.length > 50, `only ${routes.length} routes declared`);
  let compiled = 0;
  for (const route of routes) {
    const schema = (route.schema ?? {}) as FastifySchema;
    const name = `${route.methods.join(',')} ${route.url}`;
    for (const httpPart of ['body', 'querystring', 'params', 'headers'] as const) {
      const part = schema[httpPart];
      if (!part) continue;
      assert.doesNotThrow(() => validator({ schema: part, httpPart, method: route.methods[0] ?? 'GET', url: route.url }), `${name} ${httpPart}`);
      compiled += 1;
    }
    for (const [status, answer] of Object.entries((schema.response ?? {}) as Record<string, unknown>)) {
      // A response schema is either the schema or, for content types, { content: { type: { schema } } }.
      const content = (answer as { content?: Record<string, { schema: unknown }> }).content;
      for (const one of content ? Object.values(content).map((c) => c.schema) : [answer]) {
        assert.doesNotThrow(() => serializer({ schema: one }), `${name} ${status}`);
        compiled += 1;
      }
    }
  }
  assert.ok(compiled > routes.length, `${compiled} schemas compiled for ${routes.length} routes`);
});

test('a schema that cannot compile fails here, not only at its first request', () => {
  const validator = validatorCompiler([], { lazy: false });
  const serializer = serializerCompiler({ lazy: false });
  const broken = { type: 'object', properties: { a: { $ref: '#/nowhere' } } };
  assert.throws(() => validator({ schema: broken, httpPart: 'body', method: 'POST', url: '/' }));
  assert.throws(() => serializer({ schema: broken }));
  // Lazy, the same schema is accepted until its first use.
  const lazy = validatorCompiler([], {})({ schema: broken, httpPart: 'body', method: 'POST', url: '/' }) as (data: unknown) => boolean;
  assert.throws(() => lazy({ a: 1 }));
});
