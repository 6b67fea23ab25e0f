// The API's response bodies as the tests read them, derived from the source's own schemas so that a test's
// idea of a body cannot drift from what the routes declare.
import type { Static, TUnsafe } from '@sinclair/typebox';
import type { Page as PageSchema } from '../../src/platform/pagination.ts';

export type { ErrorBody } from '../../src/platform/errors.ts';
export type { Person } from '../../src/modules/people/schemas.ts';

/** A page of a list endpoint: `Page(item)` of src/platform/pagination.ts with items typed as T. */
export type Page<T> = Static<ReturnType<typeof PageSchema<TUnsafe<T>>>>;
