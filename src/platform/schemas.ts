// Shared response schemas: the error envelope, for the OpenAPI document and response serialisation.
import { type TSchema, Type } from '@sinclair/typebox';
import { ErrorEnvelope } from './errors.ts';

export { ErrorEnvelope };

/** The answers any public endpoint can give besides its own (spec: Endpoints preamble). */
export const errorResponses = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
  500: ErrorEnvelope,
};

/**
 * A row id in a path, query or body: a positive integer no larger than JavaScript can hold exactly, so
 * an absurd id is a 400/422, never a database range error.
 */
export const Id = (options: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', ...options });

export const NoContent = Type.Null({ description: 'no body' });

/** A field that may be null: the schema or null, as the spec writes `string|null`. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
