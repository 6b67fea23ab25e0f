// Integers in paths and query strings are plain decimal digits (README: API notes, "Path ids and integer
// query parameters"): the text validator a route gets, without a server.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Type, type TSchema } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { validatorCompiler } from '../../src/platform/validation.ts';
import { PageQuery } from '../../src/platform/pagination.ts';
import { Id } from '../../src/platform/schemas.ts';

type Check = ((data: unknown) => boolean) & { errors?: ErrorObject[] | null };

function textValidator(schema: TSchema, httpPart: 'params' | 'querystring'): Check {
  return validatorCompiler()({ schema, httpPart, method: 'GET', url: '/' }) as Check;
}

const params = textValidator(Type.Object({ id: Id() }), 'params');
const query = textValidator(Type.Object({ ...PageQuery, location_id: Type.Optional(Id()), name: Type.Optional(Type.String()) }), 'querystring');

/** Whether `text` is read as an id, and the number it became. */
function readId(text: string): { valid: boolean; id: unknown; keyword: string | undefined } {
  const data: Record<string, unknown> = { id: text };
  const valid = params(data);
  return { valid, id: data.id, keyword: params.errors?.[0]?.keyword };
}

describe('path ids', () => {
  test('decimal digits are read as the number, leading zeros included', () => {
    assert.deepEqual(readId('7'), { valid: true, id: 7, keyword: undefined });
    assert.deepEqual(readId('007'), { valid: true, id: 7, keyword: undefined });
    assert.deepEqual(readId(String(Number.MAX_SAFE_INTEGER)), { valid: true, id: Number.MAX_SAFE_INTEGER, keyword: undefined });
  });

  test('every other spelling of a number is malformed before it is coerced', () => {
    for (const text of ['0x7', '7.0', '7.', '7e0', '+7', ' 7', '7 ', '\t7', 'Infinity', '1_000', '٧', '']) {
      const read = readId(text);
      assert.equal(read.valid, false, JSON.stringify(text));
      assert.equal(read.keyword, 'decimalInteger', JSON.stringify(text));
      assert.equal(read.id, text, 'left as sent');
    }
  });

  test('digits that pass the spelling rule still meet the schema: 0, negatives and ids past 2^53 are refused', () => {
    assert.equal(readId('0').keyword, 'minimum');
    assert.equal(readId('-1').keyword, 'minimum');
    assert.equal(readId(String(Number.MAX_SAFE_INTEGER + 1)).keyword, 'maximum');
    assert.equal(readId('1'.repeat(400)).keyword, 'maximum');
  });
});

describe('integer query parameters', () => {
  test('limit and location_id follow the same rule; text parameters are left alone', () => {
    const ok: Record<string, unknown> = { limit: '050', location_id: '3', name: '0x7' };
    assert.equal(query(ok), true);
    assert.deepEqual(ok, { limit: 50, location_id: 3, name: '0x7' });
    for (const limit of ['1e2', '5.0', 'NaN', '-Infinity', '0x10']) {
      const data = { limit };
      assert.equal(query(data), false, limit);
      assert.deepEqual(query.errors?.map((e) => [e.instancePath, e.keyword]), [['/limit', 'decimalInteger']], limit);
    }
  });

  test('a parameter sent as a list is checked value by value', () => {
    for (const location_id of [['0x3'], ['3', '0x3']]) {
      assert.equal(query({ location_id }), false, location_id.join());
      assert.deepEqual(query.errors?.map((e) => [e.instancePath, e.keyword]), [['/location_id', 'decimalInteger']], location_id.join());
    }
  });

  test('an out-of-range limit is no spelling error: it passes here and is clamped by the list', () => {
    for (const limit of ['0', '-3', '999']) assert.equal(query({ limit }), true, limit);
  });

  test('a NUL anywhere in the query is refused first, with the spelling errors', () => {
    const data = { name: 'a\u0000', limit: '1.5' };
    assert.equal(query(data), false);
    assert.deepEqual(query.errors?.map((e) => [e.instancePath, e.keyword]), [
      ['/name', 'nulCharacter'],
      ['/limit', 'decimalInteger'],
    ]);
  });
});
