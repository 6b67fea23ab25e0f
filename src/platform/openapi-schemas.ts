// Named schemas: a TypeBox schema given an `$id` is registered with app.addSchema and used by `$ref`, so the
// OpenAPI documents show it once under components.schemas and SDK generators name the type after it.
// Validation (validation.ts) and serialisation resolve the same `$ref`s, so a body reads and writes as before.
import type { TSchema } from '@sinclair/typebox';

const registry = new Map<string, TSchema>();

/**
 * `schema` under `name` (its `$id`, its components.schemas key). Schemas are named where they are declared,
 * at import time, so the registry is complete before buildApp registers it.
 */
export function named<T extends TSchema>(name: string, schema: T): T & { $id: string } {
  if (registry.has(name)) throw new Error(`schema ${name} is named twice`);
  const result = { ...schema, $id: name };
  registry.set(name, result);
  return result;
}

/**
 * A reference to a named schema. It is typed as the schema itself: it accepts and serialises exactly what the
 * schema does, and Fastify's TypeBox provider infers handler types from it (it infers none from Type.Unsafe).
 */
export function ref<T extends TSchema>(schema: T, options: { description?: string } = {}): T {
  if (!schema.$id || registry.get(schema.$id) !== schema) throw new Error('ref() takes a schema made by named()');
  return { $ref: schema.$id, ...options } as unknown as T;
}

/** Every named schema, for app.addSchema and for the validators' ajv instances. */
export function namedSchemas(): TSchema[] {
  return [...registry.values()];
}

/** `schema` with every reference to a named schema replaced by the schema itself (for walks over route schemas). */
export function inlineRefs(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(inlineRefs);
  if (!schema || typeof schema !== 'object') return schema;
  const { $ref, ...rest } = schema as { $ref?: unknown };
  const target = typeof $ref === 'string' ? registry.get($ref) : undefined;
  if (target) {
    const { $id: _id, ...named } = target;
    return inlineRefs({ ...named, ...rest });
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, inlineRefs(value)]));
}
