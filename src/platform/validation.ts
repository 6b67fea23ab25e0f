// Request validation: ajv for bodies (strict) and for query strings and path parameters (coerced), the rules
// every string and id obeys (no NUL, decimal integers), and the spec's `details` of a 422.
import { Ajv, type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { ErrorDetail } from './errors.ts';

// Bodies are validated strictly (no coercion, every error reported so each unknown field gets its detail);
// query strings and route parameters arrive as text, so they are coerced to the schema's types.
// Schema defaults document the API; services apply them, so an update never receives fields it was not sent.
// strictNumbers (bodies): a JSON number that overflows (`1e400`) parses as Infinity, which is no number of any
// field. Not for text: ajv would skip `maximum` on the Infinity its coercion makes of 400 digits, so there the
// decimal-digits rule below and each schema's bounds decide (a 400-digit id is over its maximum).
function newAjv(coerce: boolean, validateSchema: boolean): Ajv {
  const ajv = new Ajv({
    validateSchema,
    allErrors: !coerce,
    coerceTypes: coerce ? 'array' : false,
    removeAdditional: false,
    useDefaults: false,
    strict: false,
    strictNumbers: !coerce,
    // Body errors carry their schema, for a pattern's error to be told in its FORM's words (the path's and the
    // query's name only their first problem, and need none; their values stay out of error objects).
    verbose: !coerce,
  });
  addFormats.default(ajv);
  // ajv-formats' uuid also takes the URN form (`urn:uuid:…`), which PostgreSQL's uuid type refuses: such an id
  // reached the database and answered 500. Ids are the plain form, in either case.
  ajv.addFormat('uuid', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  ajv.addFormat(SINGLE_LINE, SINGLE_LINE_TEXT);
  return ajv;
}

const NUL = '\u0000';

/**
 * A schema's keyword (an OpenAPI extension) naming in words the form its `pattern` asks for: a value that does not
 * match is told `<field> is not in the expected form: <form>.`, never the regular expression.
 */
export const FORM = 'x-form';

/** The pattern of a text that must show something: a character that is not whitespace (names, titles). */
export const NOT_BLANK = '\\S';

/**
 * The format of a text shown on one line (names, titles, a lock's place, a group's code): no control character
 * (Unicode Cc: CR, LF, TAB, ESC, NEL …), no line or paragraph separator (U+2028, U+2029) and no bidirectional
 * embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), which reorder how the text after them reads. Such
 * a text reaches SMS and e-mails, webhooks, the console and gateways' displays, where a line of its own or
 * reordered words would read as someone else's (README: API notes, "Names on one line").
 */
export const SINGLE_LINE = 'single-line';
export const SINGLE_LINE_TEXT = /^[^\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]*$/u;

/** A JSON pointer segment, as ajv writes them in `instancePath`. */
const pointer = (key: string | number): string => `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;

function ruleError(instancePath: string, keyword: string, message: string): ErrorObject {
  return { keyword, instancePath, schemaPath: '#', params: {}, message };
}

/** A UTF-16 surrogate without its other half: JSON's `\ud800` escape makes one; UTF-8 cannot encode it. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function characterError(path: string, text: string): ErrorObject | null {
  if (text.includes(NUL)) return ruleError(path, 'nulCharacter', 'must not contain the NUL character (U+0000)');
  // Stored, it would turn into U+FFFD without a word.
  if (LONE_SURROGATE.test(text)) return ruleError(path, 'loneSurrogate', 'must not contain an unpaired surrogate (U+D800 to U+DFFF)');
  return null;
}

/**
 * Every string (and object key) holding text no database column can keep, wherever it sits in a body,
 * query or path: U+0000 (PostgreSQL text cannot store it) and unpaired surrogates (not encodable as UTF-8),
 * refused for every field at once here rather than field by field (README: API notes). Walked without
 * recursion, so no nesting depth can overflow the stack.
 */
export function unstorableCharacterErrors(data: unknown): ErrorObject[] {
  const found: ErrorObject[] = [];
  const pending: Array<[string, unknown]> = [['', data]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [path, value] = next;
    if (typeof value === 'string') {
      const error = characterError(path, value);
      if (error) found.push(error);
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => pending.push([path + pointer(index), item]));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const error = characterError(path + pointer(key), key);
        if (error) found.push(error);
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

export interface CompileOptions {
  /**
   * Compile each schema on its first use (the default) rather than when the route is added. Compiling every
   * route's schemas took about half a second of CPU at each start, the biggest part of an embedded start after
   * the database (and of every test file's); a route's first request pays its own few milliseconds instead.
   * `false` compiles at once: the test that compiles every route's schemas (test/platform/schemas-compile.test.ts).
   * Only then is each schema also checked against JSON Schema's meta-schema: done at every start, that check
   * (ajv compiling the meta-schema, per instance, to check the named schemas) took about 0.15 s of a start,
   * for schemas that are the service's own and the same at every start.
   */
  lazy?: boolean;
}

/** `make()` now, or on the first call of the returned function. */
export function compiledOnFirstUse<F extends (...args: never[]) => unknown>(make: () => F, lazy: boolean): () => F {
  if (!lazy) {
    const made = make();
    return () => made;
  }
  let made: F | undefined;
  return () => (made ??= make());
}

/** `named`: the schemas routes refer to by `$ref` (openapi-schemas.ts); both validators know them. */
export function validatorCompiler(named: readonly object[] = [], { lazy = true }: CompileOptions = {}): FastifySchemaCompiler<unknown> {
  const bodyAjv = newAjv(false, !lazy);
  const textAjv = newAjv(true, !lazy);
  for (const schema of named) {
    bodyAjv.addSchema(schema);
    textAjv.addSchema(schema);
  }
  return ({ schema, httpPart }) => {
    if (httpPart === 'body') {
      const validate = compiledOnFirstUse(() => bodyAjv.compile(schema as object), lazy);
      // The character rules are reported together with every schema error, so a body gets all its details at once.
      const check: CheckFunction = (data) => {
        const unstorable = unstorableCharacterErrors(data);
        const valid = validate()(data);
        check.errors = [...unstorable, ...(validate().errors ?? [])];
        return valid && unstorable.length === 0;
      };
      return check;
    }
    const validate = compiledOnFirstUse(() => textAjv.compile(schema as object), lazy);
    const integers = integerProperties(schema);
    // Query and path text is checked before ajv coerces it (the first problem is the answer's message).
    const check: CheckFunction = (data) => {
      const problems = [...unstorableCharacterErrors(data), ...malformedIntegerErrors(data, integers)];
      if (problems.length > 0) {
        check.errors = problems;
        return false;
      }
      const valid = validate()(data);
      check.errors = validate().errors ?? null;
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

const within = (path: string, of: string): boolean => path === of || path.startsWith(`${of}/`);
const isNullType = (error: ErrorObject): boolean => error.keyword === 'type' && (error.params as { type?: unknown }).type === 'null';

/** What one failed alternative allowed, as a message reads it: a JSON value (`"sms"`, `null`) or a type. */
function allowed(error: ErrorObject): string[] {
  const params = error.params as { allowedValue?: unknown; allowedValues?: unknown[]; type?: unknown };
  if (error.keyword === 'const') return [JSON.stringify(params.allowedValue)];
  if (error.keyword === 'enum') return (params.allowedValues ?? []).map((value) => JSON.stringify(value));
  return [String(params.type)];
}

/**
 * What a path or query parameter's first error says: a missing one "is required" (ajv's "must have required
 * property 'x'" reads oddly after its name); one outside a set of values names the set, as a body's does
 * (mergeAlternatives); else ajv's message.
 */
export function parameterProblem(validation: ErrorObject[]): string {
  const [first] = mergeAlternatives(validation);
  if (!first) return 'is invalid';
  return first.keyword === 'required' ? 'is required' : (first.message ?? 'is invalid');
}

/**
 * ajv reports a union (`anyOf`, TypeBox's Union and enums of literals) as each alternative's failure plus
 * "must match a schema in anyOf": a channel of `fax` read "must be equal to constant" three times, and a
 * body that may be left out added "body must be null". Where every alternative failed on the value itself
 * (a constant, an enum, a type), they become one error listing what is allowed; otherwise the union's own
 * error and its `null` alternative are dropped, and what went wrong inside the value speaks.
 */
function mergeAlternatives(reported: ErrorObject[]): ErrorObject[] {
  // A literal fails on its type too (null is no string): the literal says what is allowed, not "string".
  const literals = new Set(reported.filter((error) => error.keyword === 'const' || error.keyword === 'enum').map((error) => error.schemaPath.replace(/\/(const|enum)$/, '')));
  const validation = reported.filter((error) => !(error.keyword === 'type' && literals.has(error.schemaPath.replace(/\/type$/, ''))));
  const dropped = new Set<ErrorObject>();
  const merged = new Map<ErrorObject, ErrorObject>();
  for (const union of validation.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf')) {
    const path = union.instancePath;
    const related = validation.filter((error) => error !== union && !dropped.has(error) && within(error.instancePath, path));
    const simple = related.length > 0 && related.every((error) => error.instancePath === path && ['const', 'enum', 'type'].includes(error.keyword));
    if (simple) {
      const values = related.filter((error) => error.keyword !== 'type');
      const types = related.filter((error) => error.keyword === 'type' && !isNullType(error));
      const nullable = related.some(isNullType) ? ['null'] : [];
      const listed = (errors: ErrorObject[]) => [...new Set(errors.flatMap(allowed))];
      const message =
        types.length > 0
          ? `must be ${[...listed(types), ...listed(values), ...nullable].join(' or ')}`
          : `must be one of ${[...listed(values), ...nullable].join(', ')}`;
      for (const error of related) dropped.add(error);
      merged.set(union, { ...union, keyword: 'alternatives', message });
    } else if (related.length > 0) {
      for (const error of related) if (error.instancePath === path && isNullType(error)) dropped.add(error);
      dropped.add(union);
    }
  }
  return validation.filter((error) => !dropped.has(error)).map((error) => merged.get(error) ?? error);
}

export function bodyErrorDetails(validation: ErrorObject[]): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const error of mergeAlternatives(validation)) {
    let detail: ErrorDetail;
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'additionalProperties') {
      const field = fieldPath(error.instancePath, String(params.additionalProperty));
      detail = { field, code: 'unknown_field', message: `${field} is not a field of this request.` };
    } else if (error.keyword === 'required') {
      const field = fieldPath(error.instancePath, String(params.missingProperty));
      detail = { field, code: 'invalid', message: `${field} is required.` };
    } else if (error.keyword === 'enum' || error.keyword === 'const') {
      // ajv would say "must be equal to constant" without the constant.
      const field = fieldPath(error.instancePath) || 'body';
      const values = allowed(error);
      detail = { field, code: 'invalid', message: `${field} must be ${values.length === 1 ? values[0] : `one of ${values.join(', ')}`}.` };
    } else if (error.keyword === 'pattern' && params.pattern === NOT_BLANK) {
      // ajv would say `must match pattern "\S"`.
      const field = fieldPath(error.instancePath) || 'body';
      detail = { field, code: 'invalid', message: `${field} must not be blank.` };
    } else if (error.keyword === 'pattern') {
      // ajv would print the regular expression (`must match pattern "^(\d{4})-(\d{2})…"`).
      const field = fieldPath(error.instancePath) || 'body';
      const form: unknown = (error.parentSchema as Record<string, unknown> | undefined)?.[FORM];
      detail = { field, code: 'invalid', message: typeof form === 'string' ? `${field} is not in the expected form: ${form}.` : `${field} is not in the expected form.` };
    } else if (error.keyword === 'format' && params.format === SINGLE_LINE) {
      const field = fieldPath(error.instancePath) || 'body';
      detail = { field, code: 'invalid', message: `${field} must not contain control characters or line breaks.` };
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

