// What errors say and what the log may keep of them (README: Security, "Logged"), and the envelope's
// catalogue: pure functions of src/platform, without a server or a database.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, test } from 'node:test';
import { databaseError, DatabaseError, isDatabaseUnavailable } from '../../src/platform/db/errors.ts';
import { ERROR_CODES, errors } from '../../src/platform/errors.ts';
import { escapeMalformedPath } from '../../src/platform/http.ts';
import { loggableError } from '../../src/platform/logging.ts';

describe('the envelope', () => {
  test('details appear only when there are some', () => {
    assert.deepEqual(errors.notFound('lock').toBody(), { error: { code: 'not_found', message: 'No such lock.' } });
    assert.deepEqual(errors.invalidField('email', 'email is not an e-mail address.').toBody(), {
      error: {
        code: 'validation_failed',
        message: 'The request body failed validation.',
        details: [{ field: 'email', code: 'invalid', message: 'email is not an e-mail address.' }],
      },
    });
  });

  test('statuses and headers travel with the error; a 500 quotes the request id and nothing else', () => {
    const limited = errors.rateLimited(17);
    assert.equal(limited.status, 429);
    assert.deepEqual(limited.headers, { 'retry-after': '17' });
    assert.equal(errors.databaseUnavailable().headers?.['retry-after'], '5');
    assert.deepEqual(errors.methodNotAllowed('PUT', ['GET', 'HEAD']).headers, { allow: 'GET, HEAD' });
    assert.equal(errors.badRequest(431, 'too large').status, 431);
    assert.equal(errors.serverError('req-7').toBody().error.message, 'An unexpected error occurred (request req-7).');
  });

  test('every code a factory gives is in the catalogue the OpenAPI document lists', () => {
    const made = [
      errors.invalidRequest('x'),
      errors.unauthenticated(),
      errors.insufficientScope('people:read'),
      errors.notAvailable(),
      errors.lockNotAllowed(),
      errors.gatewayHasLocks(),
      errors.linkUnusable(),
      errors.entitlementExceeded(),
      errors.publishFailed(),
      errors.brokerUnavailable('down', ''),
    ];
    for (const error of made) assert.ok((ERROR_CODES as readonly string[]).includes(error.code), error.code);
  });
});

describe('database errors', () => {
  const driverError = (fields: Record<string, unknown>) => Object.assign(new Error(String(fields.message ?? 'failed')), fields);

  test('keep the fields that name the failure and drop detail, parameters and whatever else the driver attached', () => {
    const error = databaseError(
      driverError({
        message: 'duplicate key value violates unique constraint "people_email_key"',
        code: '23505',
        constraint: 'people_email_key',
        table: 'people',
        detail: 'Key (email)=(olga@example.org) already exists.',
        params: ['olga@example.org'],
        query: 'INSERT INTO people (email) VALUES ($1)',
      }),
      'INSERT INTO people (email) VALUES ($1)',
    );
    assert.ok(error instanceof DatabaseError);
    const present = Object.fromEntries(Object.entries(error).filter(([, value]) => value !== undefined));
    assert.deepEqual(present, { code: '23505', constraint: 'people_email_key', table: 'people', unavailable: false });
    assert.equal(error.message, 'duplicate key value violates unique constraint "people_email_key"');
    assert.ok(!JSON.stringify(loggableError(error)).includes('olga'));
  });

  test('a quoted value is redacted; an identifier of the statement or the failure is kept', () => {
    const sql = 'SELECT no_such_column FROM people WHERE id = $1';
    assert.equal(databaseError(driverError({ message: 'invalid input syntax for type uuid: "olga"' }), sql).message, 'invalid input syntax for type uuid: "[redacted]"');
    assert.equal(databaseError(driverError({ message: 'column "no_such_column" does not exist' }), sql).message, 'column "no_such_column" does not exist');
    assert.equal(databaseError(driverError({ message: 'value "Has Spaces" for "people"' }), sql).message, 'value "[redacted]" for "people"');
  });

  test('say whether the database is away, and are not wrapped twice', () => {
    const away = databaseError(new Error('Connection terminated'), 'SELECT 1', true);
    assert.equal(isDatabaseUnavailable(away), true);
    assert.equal(isDatabaseUnavailable(databaseError(new Error('syntax error'), 'SELEC 1')), false);
    assert.equal(isDatabaseUnavailable(new Error('Connection terminated')), false, 'only errors of the port count');
    assert.equal(databaseError(away, 'other'), away);
    assert.equal(databaseError('a thrown string', 'SELECT 1').message, 'a thrown string');
  });
});

describe('what the log keeps of an error', () => {
  test('type, message, stack and the codes; never properties that hold the request', () => {
    const parserError = Object.assign(new Error('Parse Error: Header overflow'), { code: 'HPE_HEADER_OVERFLOW', rawPacket: Buffer.from('Authorization: Bearer lk_secret'), input: '/v1/people?email=olga@example.org' });
    const kept = loggableError(parserError);
    assert.equal(kept.type, 'Error');
    assert.equal(kept.code, 'HPE_HEADER_OVERFLOW');
    assert.match(kept.stack, /Header overflow/);
    assert.deepEqual(Object.keys(kept).sort(), ['code', 'message', 'stack', 'type']);
  });

  test('causes are followed three levels deep; text and other values are logged by type', () => {
    let error: Error = new TypeError('root');
    for (let i = 0; i < 5; i++) error = new Error(`level ${i}`, { cause: error });
    const depth = (entry: Record<string, unknown>): number => (entry.cause ? 1 + depth(entry.cause as Record<string, unknown>) : 0);
    assert.equal(depth(loggableError(error)), 3);
    assert.deepEqual(loggableError('gateway 7 sent junk'), { type: 'string', message: 'gateway 7 sent junk', stack: '' });
    assert.deepEqual(loggableError({ password: 'x' }), { type: 'object', message: '', stack: '' });
  });
});

describe('paths that are not valid percent-encoding', () => {
  const rewrite = (url: string) => escapeMalformedPath({ url } as IncomingMessage);

  test('have their % escaped so that they route (and are refused later, counted)', () => {
    assert.equal(rewrite('/v1/locks/%ff'), '/v1/locks/%25ff');
    assert.equal(rewrite('/v1/locks/%e2%82'), '/v1/locks/%25e2%2582');
    assert.equal(rewrite('/v1/%zz?limit=5'), '/v1/%25zz?limit=5', 'the query string is left as it is');
  });

  test('valid paths, and a bad escape in the query string only, are left alone', () => {
    for (const url of ['/v1/locks/7', '/v1/people/%C3%A9', '/v1/locks?cursor=%ff', '/v1/a%20b#%ff']) assert.equal(rewrite(url), url);
  });
});
