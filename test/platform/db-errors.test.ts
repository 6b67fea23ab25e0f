// A failing statement never puts the data it carried into the log (README: Security): not its parameters
// (PGlite attaches them to its errors), not the row values PostgreSQL quotes in `detail`, not a value quoted
// in the message. Checked through the HTTP API with the service's own log, and at the database port.
import assert from 'node:assert/strict';
import { inspect } from 'node:util';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { errors } from '../../src/platform/errors.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { startService, type TestService } from '../helpers/service.ts';

let database: TestDatabase;
let service: TestService;
const logLines: string[] = [];

before(async () => {
  database = await createTestDatabase();
  // Constraints only this test database has, so that a create fails in the database itself as a bug or a
  // schema drift would make it fail: a unique index (its error quotes the key) and a check (it quotes the
  // whole row).
  await database.db.query('CREATE UNIQUE INDEX test_people_email_once ON people (email)');
  await database.db.query(`ALTER TABLE people ADD CONSTRAINT test_name_refused CHECK (name <> 'Quentin Quarantine')`);
  service = await startService(database.db, {}, undefined, { level: 'info', stream: { write: (line: string) => logLines.push(line) } });
});

after(async () => {
  await service?.close();
  await database?.close();
});

async function personCreator(): Promise<(body: Record<string, unknown>) => ReturnType<TestService['request']>> {
  const account = await createAccount(service);
  const { token } = await createApiKey(service, account.rootLocationId, ['people:write']);
  return (body) => service.request('POST', '/v1/people', { token, body });
}

/** The log line of the 500 that answered `requestId`. */
function errorLine(requestId: string | null): { err: Record<string, unknown> } {
  const line = logLines.map((l) => JSON.parse(l) as { msg?: string; requestId?: string; err: Record<string, unknown> }).find((l) => l.requestId === requestId);
  assert.ok(line, `no log line for request ${requestId}`);
  assert.equal((line as { msg?: string }).msg, 'unexpected error');
  return line;
}

function assertNotLogged(values: string[]): void {
  const log = logLines.join('\n').toLowerCase();
  for (const value of values) assert.ok(!log.includes(value.toLowerCase()), `the log holds ${value}`);
}

describe('database errors in the log', () => {
  test('a unique violation answers 500 and logs its code and constraint, never the e-mail, name or phone', async () => {
    const email = 'rosalind.uniquefield@example.org';
    assert.equal((await (await personCreator())({ name: 'Rosalind First', email })).status, 201);
    const res = await (await personCreator())({ name: 'Rosalind Secondcopy', email, phone: '+44 20 7946 0555' });
    assert.equal(res.status, 500, res.text);
    assertNotLogged(['rosalind', 'uniquefield', 'Secondcopy', '2079460555']);
    const { err } = errorLine(res.headers.get('x-request-id'));
    assert.equal(err.code, '23505');
    assert.equal(err.constraint, 'test_people_email_once');
    assert.equal(err.type, 'DatabaseError');
  });

  test('a check violation logs no value of the failing row', async () => {
    const res = await (await personCreator())({ name: 'Quentin Quarantine', email: 'quentin.quarantine@example.org', company_name: 'Quirkworks' });
    assert.equal(res.status, 500, res.text);
    assertNotLogged(['quentin', 'quarantine', 'Quirkworks']);
    const { err } = errorLine(res.headers.get('x-request-id'));
    assert.equal(err.code, '23514');
    assert.equal(err.constraint, 'test_name_refused');
  });
});

describe('database errors at the port', () => {
  const value = 'olga.valuequote@example.org';

  /** Everything an error object carries, hidden properties too, and what pino's serializer makes of it. */
  function everything(error: unknown): string {
    return `${inspect(error, { showHidden: true, depth: null })}\n${JSON.stringify(pino.stdSerializers.err(error as Error))}`;
  }

  test('a value quoted in the message is redacted; the identifiers of the failure stay', async () => {
    const error = await database.db.query('SELECT $1::uuid', [value]).then(
      () => assert.fail('the query should fail'),
      (e: unknown) => e,
    );
    assert.equal((error as { code?: string }).code, '22P02');
    assert.match((error as Error).message, /invalid input syntax for type uuid/);
    assert.ok(!everything(error).includes('olga'), everything(error));

    const missing = await database.db.query('SELECT no_such_column FROM people WHERE email = $1', [value]).then(
      () => assert.fail('the query should fail'),
      (e: unknown) => e,
    );
    assert.match((missing as Error).message, /"no_such_column"/);
    assert.ok(!everything(missing).includes('olga'), everything(missing));
  });

  test('inside a transaction too; the caller\'s own errors pass through unchanged', async () => {
    const error = await database.db.transaction((tx) => tx.query('INSERT INTO people (id) VALUES ($1)', [value])).then(
      () => assert.fail('the insert should fail'),
      (e: unknown) => e,
    );
    assert.equal((error as { code?: string }).code, '22P02');
    assert.ok(!everything(error).includes('olga'), everything(error));

    const own = errors.invitationNotPending();
    await assert.rejects(
      database.db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        throw own;
      }),
      (e) => e === own,
    );
  });
});
