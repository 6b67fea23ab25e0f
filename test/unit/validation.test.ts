// How a body's validation errors become the 422's details, and the NUL rule (README: API notes, "Required
// fields and validation details" and "NUL characters"): the validator and the mapping, without a server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type, type TSchema } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { bodyErrorDetails, fieldPath, unstorableCharacterErrors, validatorCompiler } from '../../src/platform/validation.ts';

type Check = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** The body validator a route with this schema gets. */
function bodyValidator(schema: TSchema): Check {
  return validatorCompiler()({ schema, httpPart: 'body', method: 'POST', url: '/' }) as Check;
}

/** The details a 422 answers for `body`, or null when the body is valid. */
function detailsFor(schema: TSchema, body: unknown): Array<[string, string]> | null {
  const check = bodyValidator(schema);
  if (check(body)) return null;
  return bodyErrorDetails(check.errors ?? []).map((d) => [d.field, d.code]);
}

const Person = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    tags: Type.Optional(Type.Array(Type.String({ maxLength: 3 }))),
    address: Type.Optional(Type.Object({ city: Type.String() }, { additionalProperties: false })),
  },
  { additionalProperties: false },
);

describe('field paths', () => {
  test('JSON pointers read as the API names fields: dots for objects, brackets for indexes', () => {
    assert.equal(fieldPath(''), '');
    assert.equal(fieldPath('/name'), 'name');
    assert.equal(fieldPath('/address/city'), 'address.city');
    assert.equal(fieldPath('/security_groups/0'), 'security_groups[0]');
    assert.equal(fieldPath('/rows/2/cells/10'), 'rows[2].cells[10]');
    assert.equal(fieldPath('/0'), '[0]');
  });

  test('the child (a missing or unknown property) is appended to the path', () => {
    assert.equal(fieldPath('', 'name'), 'name');
    assert.equal(fieldPath('/address', 'zip'), 'address.zip');
    assert.equal(fieldPath('/tags', '3'), 'tags[3]');
  });

  test('escaped pointer characters are decoded, ~1 before ~0 (RFC 6901)', () => {
    assert.equal(fieldPath('/a~1b'), 'a/b');
    assert.equal(fieldPath('/a~0b'), 'a~b');
    assert.equal(fieldPath('/~01'), '~1');
  });
});

describe('validation details of a body', () => {
  test('a valid body has none', () => {
    assert.equal(detailsFor(Person, { name: 'Ada', tags: ['a'], address: { city: 'Bern' } }), null);
  });

  test('a missing required field is `invalid` and says it is required', () => {
    const check = bodyValidator(Person);
    assert.equal(check({}), false);
    assert.deepEqual(bodyErrorDetails(check.errors ?? []), [{ field: 'name', code: 'invalid', message: 'name is required.' }]);
  });

  test('every unknown field gets its own `unknown_field`, nested ones by their path', () => {
    assert.deepEqual(detailsFor(Person, { name: 'Ada', nick: 'A', age: 3, address: { city: 'Bern', zip: '3000' } }), [
      ['nick', 'unknown_field'],
      ['age', 'unknown_field'],
      ['address.zip', 'unknown_field'],
    ]);
  });

  test('wrong types and bounds are `invalid` on the field, with its path; a body that is no object is `body`', () => {
    assert.deepEqual(detailsFor(Person, { name: '', tags: ['ok', 'long', 7] }), [
      ['name', 'invalid'],
      ['tags[1]', 'invalid'],
      ['tags[2]', 'invalid'],
    ]);
    assert.deepEqual(detailsFor(Person, 'Ada'), [['body', 'invalid']]);
  });

  test('bodies are never coerced: "true" is no boolean and "5" no integer', () => {
    const schema = Type.Object({ on: Type.Boolean(), n: Type.Integer() });
    assert.deepEqual(detailsFor(schema, { on: 'true', n: '5' }), [
      ['on', 'invalid'],
      ['n', 'invalid'],
    ]);
    assert.equal(detailsFor(schema, { on: true, n: 5 }), null);
  });

  test('a value outside a union of constants lists what is allowed, null too; a nullable number says its type', () => {
    const schema = Type.Object({
      channel: Type.Union([Type.Literal('sms'), Type.Literal('email'), Type.Literal('both')]),
      system: Type.Union([Type.Literal('sandbox'), Type.Literal('uhppote'), Type.Null()]),
      colour: Type.Unsafe<string>({ type: 'string', enum: ['red', 'green'] }),
      only: Type.Literal('v1'),
      allowance: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
      scopes: Type.Array(Type.Union([Type.Literal('a:read'), Type.Literal('a:write')])),
    });
    const messages = (body: unknown) => {
      const check = bodyValidator(schema);
      assert.equal(check(body), false);
      return bodyErrorDetails(check.errors ?? []).map((d) => [d.field, d.code, d.message]);
    };
    assert.deepEqual(messages({ channel: 'fax', system: 'acme', colour: 'blue', only: 'v2', allowance: 'many', scopes: ['a:read', 'b'] }), [
      ['channel', 'invalid', 'channel must be one of "sms", "email", "both".'],
      ['system', 'invalid', 'system must be one of "sandbox", "uhppote", null.'],
      ['colour', 'invalid', 'colour must be one of "red", "green".'],
      ['only', 'invalid', 'only must be "v1".'],
      ['allowance', 'invalid', 'allowance must be integer or null.'],
      ['scopes[1]', 'invalid', 'scopes[1] must be one of "a:read", "a:write".'],
    ]);
    // A value of another type (null, a number) is told the literals, not the type of each ("string or string or …").
    assert.deepEqual(messages({ channel: null, system: 7, colour: 'red', only: 1, allowance: null, scopes: [false] }), [
      ['channel', 'invalid', 'channel must be one of "sms", "email", "both".'],
      ['system', 'invalid', 'system must be one of "sandbox", "uhppote", null.'],
      ['only', 'invalid', 'only must be "v1".'],
      ['scopes[0]', 'invalid', 'scopes[0] must be one of "a:read", "a:write".'],
    ]);
    // A bound broken by a value of the right type is what is said, not the null it could also have been.
    assert.deepEqual(messages({ channel: 'sms', system: null, colour: 'red', only: 'v1', allowance: -1, scopes: [] }), [
      ['allowance', 'invalid', 'allowance must be >= 0.'],
    ]);
  });

  test('a body that may be left out (a union with null) is not also told it "must be null"', () => {
    const Resend = Type.Union([
      Type.Object({ channel: Type.Optional(Type.Union([Type.Literal('sms'), Type.Literal('email')])) }, { additionalProperties: false }),
      Type.Null(),
    ]);
    const details = (body: unknown) => {
      const check = bodyValidator(Resend);
      assert.equal(check(body), false);
      return bodyErrorDetails(check.errors ?? []).map((d) => [d.field, d.code, d.message]);
    };
    assert.deepEqual(details({ channel: 'fax' }), [['channel', 'invalid', 'channel must be one of "sms", "email".']]);
    assert.deepEqual(details({ channel: 'sms', colour: 'red' }), [['colour', 'unknown_field', 'colour is not a field of this request.']]);
    assert.deepEqual(details('sms'), [['body', 'invalid', 'body must be object or null.']]);
  });

  test('one detail per field and code, however many rules the value broke', () => {
    const schema = Type.Object({ code: Type.String({ minLength: 5, pattern: '^[a-z]+$' }) });
    const check = bodyValidator(schema);
    assert.equal(check({ code: 'A1' }), false);
    assert.ok((check.errors ?? []).length >= 2, 'ajv reports both rules');
    assert.deepEqual(bodyErrorDetails(check.errors ?? []).map((d) => d.field), ['code']);
  });
});

describe('the NUL and lone-surrogate rule', () => {
  test('finds U+0000 in values and in field names, wherever they are', () => {
    const found = unstorableCharacterErrors({ a: 'ok', b: 'x\u0000', list: ['fine', 'y\u0000z'], nested: { 'k\u0000': 1, deep: { s: '\u0000' } } });
    assert.ok(found.every((e) => e.keyword === 'nulCharacter'));
    assert.deepEqual(found.map((e) => e.instancePath).sort(), ['/b', '/list/1', '/nested/deep/s', '/nested/k\u0000']);
  });

  test('a string body, numbers, booleans and null: only text is looked at', () => {
    assert.deepEqual(unstorableCharacterErrors('\u0000').map((e) => e.instancePath), ['']);
    assert.deepEqual(unstorableCharacterErrors({ n: 0, b: false, z: null, s: 'no nul here' }), []);
    assert.deepEqual(unstorableCharacterErrors(['\\u0000 written out is no NUL']), []);
  });

  test('field names with / and ~ keep their pointer escapes, so the detail names the field as sent', () => {
    const [error] = unstorableCharacterErrors({ 'a/b~c': '\u0000' });
    assert.equal(error?.instancePath, '/a~1b~0c');
    assert.equal(fieldPath(error?.instancePath ?? ''), 'a/b~c');
  });

  test('finds unpaired surrogates, high or low, in values and field names; a pair is text like any other', () => {
    const found = unstorableCharacterErrors({ a: 'x\ud800', b: '\udc00y', c: 'z\ud83d', pair: 'ok \ud83d\ude00', 'k\udfff': 1 });
    assert.ok(found.every((e) => e.keyword === 'loneSurrogate'));
    assert.deepEqual(found.map((e) => e.instancePath).sort(), ['/a', '/b', '/c', '/k\udfff']);
  });

  test('walks any depth without recursion (100,000 nested arrays)', () => {
    let deep: unknown = 'bottom\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const found = unstorableCharacterErrors(deep);
    assert.equal(found.length, 1);
    assert.equal(found[0]?.instancePath.length, '/0'.length * 100_000);
  });

  test('in a body it is reported with the schema errors, as one detail per field', () => {
    assert.deepEqual(detailsFor(Person, { name: 'A\u0000', extra: 1 }), [
      ['name', 'invalid'],
      ['extra', 'unknown_field'],
    ]);
    assert.deepEqual(detailsFor(Person, { name: 'Ada', 'n\u0000': 'x' }), [
      ['n\u0000', 'invalid'],
      ['n\u0000', 'unknown_field'],
    ]);
  });
});
