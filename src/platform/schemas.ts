// Shared schemas of every module: the error envelope by reference, row ids, nullable fields, empty answers.
import { type TSchema, Type } from '@sinclair/typebox';
import { ErrorEnvelope as NamedErrorEnvelope } from './errors.ts';
import { ref } from './openapi-schemas.ts';
import { FORM, NOT_BLANK, SINGLE_LINE } from './validation.ts';

/** The error envelope (components.schemas.Error), for routes outside the documents that answer in it. */
export const ErrorEnvelope = ref(NamedErrorEnvelope);

/**
 * A row id in a path, query or body: a positive integer no larger than JavaScript can hold exactly, so
 * an absurd id is a 400/422, never a database range error.
 */
export const Id = (options: { description?: string } = {}) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', ...options });

/**
 * A name or title: 1 to 200 characters, not whitespace only (a name of spaces lists as a blank row nobody can pick),
 * on one line (no control character, line break or bidirectional control: validation.ts, SINGLE_LINE).
 */
export const Name = (options: { description?: string; default?: string } = {}) =>
  Type.String({ minLength: 1, maxLength: 200, pattern: NOT_BLANK, format: SINGLE_LINE, ...options });

/** A short text shown on one line that may be empty or have its own bounds (a lock's place, a group's code). */
export const SingleLine = (options: { minLength?: number; maxLength: number; pattern?: string; default?: string; description?: string; [FORM]?: string }) =>
  Type.String({ format: SINGLE_LINE, ...options });

export const NoContent = Type.Null({ description: 'No content.' });

/** A field that may be null: the schema or null, as the spec writes `string|null`. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
