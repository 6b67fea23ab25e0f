// Keyset pagination (README: API notes, "Pagination"): limits, opaque cursors and the page a list answers.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { clampLimit, decodeCursor, DEFAULT_LIMIT, encodeCursor, MAX_LIMIT, pageRequest, toPage, type CursorTag } from '../../src/platform/pagination.ts';
import { ApiError } from '../../src/platform/errors.ts';

/** Asserts that reading `cursor` is the 400 a forged cursor answers. */
function assertRefused(cursor: string, kind: 'number' | 'uuid', tag: CursorTag = 'locks'): void {
  assert.throws(
    () => decodeCursor(cursor, kind, tag),
    (error: unknown) => error instanceof ApiError && error.status === 400 && error.code === 'invalid_request' && /cursor/.test(error.message),
    `${kind} cursor ${JSON.stringify(cursor)}`,
  );
}

const base64url = (text: string) => Buffer.from(text).toString('base64url');

describe('limit', () => {
  test('defaults to 50 and is clamped to 1…200', () => {
    assert.equal(DEFAULT_LIMIT, 50);
    assert.equal(MAX_LIMIT, 200);
    assert.equal(clampLimit(undefined), 50);
    for (const [given, used] of [
      [1, 1],
      [37, 37],
      [200, 200],
      [201, 200],
      [Number.MAX_SAFE_INTEGER, 200],
      [0, 1],
      [-5, 1],
    ] as const) {
      assert.equal(clampLimit(given), used, `limit ${given}`);
    }
  });
});

describe('cursors', () => {
  test('a number key and a uuid key come back as they went in', () => {
    for (const id of [1, 42, Number.MAX_SAFE_INTEGER]) assert.equal(decodeCursor(encodeCursor(id, 'keys'), 'number', 'keys'), id);
    const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    assert.equal(decodeCursor(encodeCursor(uuid, 'people'), 'uuid', 'people'), uuid);
  });

  test('are opaque base64url text, safe in a query string without escaping', () => {
    for (const key of [1, 2 ** 40, 'ffffffff-ffff-7fff-bfff-ffffffffffff']) {
      const cursor = encodeCursor(key, 'op.security_groups');
      assert.match(cursor, /^[A-Za-z0-9_-]+$/);
      assert.equal(encodeURIComponent(cursor), cursor);
      assert.notEqual(cursor, String(key), 'the key is not shown as is');
    }
  });

  test('no cursor, or an empty one, is the first page', () => {
    assert.equal(decodeCursor(undefined, 'number', 'locks'), null);
    assert.equal(decodeCursor('', 'uuid', 'people'), null);
  });

  test('a cursor this endpoint did not hand out is refused with 400 invalid_request', () => {
    assertRefused('not a cursor', 'number');
    assertRefused(base64url('{"id":1}'), 'number');
    assertRefused(base64url('[1,2]'), 'number');
    assertRefused(base64url('[]'), 'number');
    assertRefused(base64url('["1"]'), 'number');
    assertRefused(base64url('[1.5]'), 'number');
    assertRefused(base64url(`[${2 ** 53}]`), 'number');
    assertRefused(base64url('[1e400]'), 'number');
    assertRefused(base64url('[null]'), 'number');
    // The same shapes with the list's tag.
    assertRefused(base64url('["locks"]'), 'number');
    assertRefused(base64url('["locks","1"]'), 'number');
    assertRefused(base64url('["locks",1.5]'), 'number');
    assertRefused(base64url(`["locks",${2 ** 53}]`), 'number');
    assertRefused(base64url('["locks",1e400]'), 'number');
    assertRefused(base64url('["locks",null]'), 'number');
    assertRefused(base64url('["locks",1,2]'), 'number');
    assertRefused(base64url('[1,"locks"]'), 'number');
  });

  test('a cursor of the form handed out before cursors named their list is refused', () => {
    assertRefused(base64url('[1]'), 'number');
    assertRefused(base64url('["0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"]'), 'uuid', 'people');
  });

  test('an id no row has, zero or below, is refused', () => {
    for (const id of [0, -1, -42, Number.MIN_SAFE_INTEGER]) assertRefused(encodeCursor(id, 'locks'), 'number');
    assertRefused(base64url('["locks",-0]'), 'number');
  });

  test("another list's cursor is refused, though its key would do", () => {
    const tags: CursorTag[] = ['locks', 'security_groups', 'keys', 'invitations', 'events', 'op.accounts', 'op.locks', 'op.controllers'];
    for (const from of tags) {
      for (const to of tags) {
        if (from === to) assert.equal(decodeCursor(encodeCursor(5, from), 'number', to), 5);
        else assertRefused(encodeCursor(5, from), 'number', to);
      }
    }
    const uuid = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    for (const [from, to] of [['people', 'webhooks'], ['webhooks', 'deliveries'], ['deliveries', 'people'], ['people', 'op.people']] as const) {
      assertRefused(encodeCursor(uuid, from), 'uuid', to);
    }
  });

  test("another list's cursor is refused: a number where a uuid goes, and the other way round", () => {
    assertRefused(encodeCursor(7, 'people'), 'uuid', 'people');
    assertRefused(encodeCursor('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', 'locks'), 'number');
    assertRefused(encodeCursor("x' OR '1'='1", 'people'), 'uuid', 'people');
  });
});

describe('pages', () => {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i + 1 }));

  test('a request reads its limit and where to start', () => {
    assert.deepEqual(pageRequest({}, 'locks'), { limit: 50, afterId: null });
    assert.deepEqual(pageRequest({ limit: 500, cursor: encodeCursor(9, 'locks') }, 'locks'), { limit: 200, afterId: 9 });
  });

  test('as many rows as the limit, or fewer, are the last page', () => {
    assert.deepEqual(toPage(rows(3), 3, (r) => r.id, 'locks'), { data: rows(3), next_cursor: null });
    assert.deepEqual(toPage([], 3, (r: { id: number }) => r.id, 'locks'), { data: [], next_cursor: null });
  });

  test('the extra row fetched says there is more: it is dropped and the cursor points after the last row shown', () => {
    const page = toPage(rows(4), 3, (r) => r.id, 'invitations');
    assert.deepEqual(page.data, rows(3));
    assert.ok(page.next_cursor);
    assert.deepEqual(pageRequest({ limit: 3, cursor: page.next_cursor }, 'invitations'), { limit: 3, afterId: 3 });
    assert.throws(() => pageRequest({ limit: 3, cursor: page.next_cursor as string }, 'op.accounts'), ApiError);
  });
});
