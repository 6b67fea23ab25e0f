import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment } from '../helpers/fixtures.ts';
import { startService, useTestService } from '../helpers/service.ts';
import type { ErrorBody, Page, Person } from '../helpers/types.ts';

interface EventRow {
  type: string;
  data: Record<string, unknown>;
  person_id: string;
}

const ctx = useTestService(undefined, {}, { transport: 'inject' });

async function tenant(accountBody: Record<string, unknown> = {}) {
  const account = await createAccount(ctx.service, accountBody);
  const key = await createApiKey(ctx.service, account.rootLocationId, ['people:write']);
  return { account, token: key.token };
}

async function eventsOf(personId: string): Promise<EventRow[]> {
  return ctx.database.db.query<EventRow>('SELECT type, data, person_id FROM domain_events WHERE person_id = $1 ORDER BY id', [personId]);
}

async function create(token: string, body: Record<string, unknown>) {
  return ctx.service.request<Person & ErrorBody>('POST', '/v1/people', { token, body });
}

describe('POST /people', () => {
  test('creates a person (201) with the phone in E.164 and emits person.created with the Person', async () => {
    const { token, account } = await tenant();
    const res = await create(token, {
      name: 'Ann Lee',
      email: 'Ann@Example.com',
      phone: '+44 (20) 7946-0958',
      company_name: 'Acme',
      title: 'Engineer',
      language: 'EN-gb',
    });
    assert.equal(res.status, 201);
    assert.match(res.body.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual({ ...res.body, id: 'x' }, {
      id: 'x',
      name: 'Ann Lee',
      email: 'Ann@Example.com',
      phone: '+442079460958',
      company_name: 'Acme',
      title: 'Engineer',
      language: 'en-GB',
      location: { id: account.rootLocationId, name: 'Acme' },
    });
    const events = await eventsOf(res.body.id);
    assert.deepEqual(events, [{ type: 'person.created', data: res.body, person_id: res.body.id }]);
  });

  test('is idempotent on data: the same phone in another format or the same e-mail in another case answers 200, unchanged', async () => {
    const { token } = await tenant();
    const first = await create(token, { name: 'Bo', phone: '+1 212 555 0123', email: 'bo@example.com' });
    assert.equal(first.status, 201);
    const byPhone = await create(token, { name: 'Someone Else', phone: '+12125550123' });
    assert.equal(byPhone.status, 200);
    assert.deepEqual(byPhone.body, first.body);
    const byEmail = await create(token, { name: 'Other', email: 'BO@EXAMPLE.COM', title: 'New title' });
    assert.equal(byEmail.status, 200);
    assert.deepEqual(byEmail.body, first.body);
    assert.equal((await eventsOf(first.body.id)).length, 1, 'nothing changed, nothing was emitted');
  });

  test("de-duplicates only inside the key's scope", async () => {
    const { account, token } = await tenant();
    const deptA = await createDepartment(ctx.service, account.rootLocationId, 'A');
    const deptB = await createDepartment(ctx.service, account.rootLocationId, 'B');
    const keyA = (await createApiKey(ctx.service, deptA, ['people:write'])).token;
    const keyB = (await createApiKey(ctx.service, deptB, ['people:write'])).token;
    const inA = await create(keyA, { name: 'Cy', phone: '+33 1 23 45 67 89' });
    const inB = await create(keyB, { name: 'Cy', phone: '+33123456789' });
    assert.equal(inA.status, 201);
    assert.equal(inB.status, 201);
    assert.notEqual(inA.body.id, inB.body.id);
    // The root key sees both and matches the older one.
    const atRoot = await create(token, { name: 'Cy', phone: '+33123456789' });
    assert.equal(atRoot.status, 200);
    assert.equal(atRoot.body.id, inA.body.id);
  });

  test('two concurrent creates with the same phone in two formats make one person', async () => {
    const { token } = await tenant();
    for (let round = 0; round < 5; round++) {
      const phone = `+4930123456${round}`;
      const [a, b] = await Promise.all([
        create(token, { name: `Racer ${round}`, phone }),
        create(token, { name: `Racer ${round}`, phone: `${phone.slice(0, 3)} ${phone.slice(3, 5)} ${phone.slice(5)}` }),
      ]);
      assert.deepEqual([a.status, b.status].sort(), [200, 201], `round ${round}`);
      assert.equal(a.body.id, b.body.id);
      const rows = await ctx.database.db.query('SELECT id FROM people WHERE phone = $1', [phone]);
      assert.equal(rows.length, 1);
      assert.equal((await eventsOf(a.body.id)).length, 1);
    }
  });

  test('a malformed phone answers 422 invalid on phone; a reserved name 422 reserved_name', async () => {
    const { token } = await tenant();
    for (const phone of ['020 7946 0958', '+44 12', '+999 123 456 789', 'call me']) {
      const res = await create(token, { name: 'Dee', phone });
      assert.equal(res.status, 422, phone);
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['phone', 'invalid']], phone);
    }
    // The last three: a zero-width space, a fullwidth A, a Cyrillic A (README: API notes, reserved names).
    for (const name of ['Admin', 'admin', 'ADMIN Smith', 'ServiceUser', 'serviceuser  x', 'Latchkey', 'latchkey support', 'Admin\u200b', '\uff21dmin', '\u0410dmin Smith']) {
      const res = await create(token, { name });
      assert.equal(res.status, 422, name);
      assert.deepEqual(
        res.body.error.details?.map((d) => [d.field, d.code]),
        [['name', 'reserved_name']],
        name,
      );
    }
    for (const name of ['Administrator', 'Adminson Lee', 'Latchkeys Ltd']) {
      assert.equal((await create(token, { name })).status, 201, name);
    }
  });

  test('the brand name is configurable', async () => {
    const branded = await startService(ctx.database.db, { BRAND_NAME: 'DoorCo' });
    try {
      const account = await createAccount(branded);
      const key = await createApiKey(branded, account.rootLocationId, ['people:write']);
      const res = await branded.request<ErrorBody>('POST', '/v1/people', { token: key.token, body: { name: 'doorco helpdesk' } });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.details?.[0]?.code, 'reserved_name');
    } finally {
      await branded.close();
    }
  });

  test('name is required; unknown fields and bounds answer 422 with one detail each', async () => {
    const { token } = await tenant();
    const missing = await create(token, { email: 'x@example.com' });
    assert.deepEqual(missing.body.error.details?.map((d) => [d.field, d.code]), [['name', 'invalid']]);
    const unknown = await create(token, { name: 'Eve', nickname: 'E', secret: 1 });
    assert.deepEqual(
      unknown.body.error.details?.map((d) => [d.field, d.code]).sort(),
      [
        ['nickname', 'unknown_field'],
        ['secret', 'unknown_field'],
      ],
    );
    const bounds = await create(token, { name: 'x'.repeat(201), email: 'not-an-email', language: 'english' });
    assert.deepEqual(
      bounds.body.error.details?.map((d) => d.field).sort(),
      ['email', 'language', 'name'],
    );
    assert.equal((await create(token, { name: '   ' })).status, 422);
  });

  test("location_id must be in the key's scope; it defaults to the key's location", async () => {
    const { account } = await tenant();
    const dept = await createDepartment(ctx.service, account.rootLocationId, 'Dept');
    const sibling = await createDepartment(ctx.service, account.rootLocationId, 'Sibling');
    const sub = await createDepartment(ctx.service, dept, 'Sub');
    const key = (await createApiKey(ctx.service, dept, ['people:write'])).token;
    const defaulted = await create(key, { name: 'Fay' });
    assert.deepEqual(defaulted.body.location, { id: dept, name: 'Dept' });
    const inSub = await create(key, { name: 'Gus', location_id: sub });
    assert.deepEqual(inSub.body.location, { id: sub, name: 'Sub' });
    for (const location_id of [sibling, account.rootLocationId, 999999]) {
      const res = await create(key, { name: 'Hal', location_id });
      assert.equal(res.status, 422);
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [['location_id', 'invalid']]);
    }
  });
});

describe('GET /people', () => {
  test('e-mail is folded the same on search as on create: ASCII letters only, so İ is no I and the Kelvin sign no K', async () => {
    const { token } = await tenant();
    const inci = await create(token, { name: 'Inci', email: 'inci@example.com' });
    const kate = await create(token, { name: 'Kate', email: 'kate@example.com' });
    const search = async (email: string) =>
      (await ctx.service.request<Page<Person>>('GET', `/v1/people?email=${encodeURIComponent(email)}`, { token })).body.data.map((p) => p.id);
    assert.deepEqual(await search('INCI@EXAMPLE.COM'), [inci.body.id]);
    assert.deepEqual(await search('İNCI@example.com'), []);
    assert.deepEqual(await search('\u212Aate@example.com'), []);
    assert.deepEqual(await search('KATE@example.com'), [kate.body.id]);
    // Create refuses both spellings (an address is ASCII), so nothing stored could ever match them.
    for (const email of ['İnci@example.com', '\u212Aate@example.com']) assert.equal((await create(token, { name: 'X', email })).status, 422, email);
  });

  test('filters by e-mail (case-insensitive) and by phone in any format; pages by id', async () => {
    const { token } = await tenant();
    const ivy = await create(token, { name: 'Ivy', email: 'ivy@example.com', phone: '+61 2 9374 4000' });
    await create(token, { name: 'Jo', email: 'jo@example.com' });
    const byEmail = await ctx.service.request<Page<Person>>('GET', '/v1/people?email=IVY%40example.com', { token });
    assert.deepEqual(byEmail.body.data.map((p) => p.id), [ivy.body.id]);
    const byPhone = await ctx.service.request<Page<Person>>(`GET`, `/v1/people?phone=${encodeURIComponent('+61 (2) 9374-4000')}`, { token });
    assert.deepEqual(byPhone.body.data.map((p) => p.id), [ivy.body.id]);
    const bad = await ctx.service.request<ErrorBody>('GET', '/v1/people?phone=93744000', { token });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_request');

    const first = await ctx.service.request<Page<Person>>('GET', '/v1/people?limit=1', { token });
    assert.equal(first.body.data.length, 1);
    assert.ok(first.body.next_cursor);
    const second = await ctx.service.request<Page<Person>>('GET', `/v1/people?limit=1&cursor=${first.body.next_cursor}`, { token });
    assert.equal(second.body.data.length, 1);
    assert.notEqual(second.body.data[0]?.id, first.body.data[0]?.id);
    assert.equal(second.body.next_cursor, null);
  });

  test("a read scope is enough; other locations' people are not listed", async () => {
    const { account, token } = await tenant();
    const other = await tenant();
    await create(other.token, { name: 'Kim' });
    const mine = await create(token, { name: 'Lou' });
    const reader = (await createApiKey(ctx.service, account.rootLocationId, ['people:read'])).token;
    const list = await ctx.service.request<Page<Person>>('GET', '/v1/people', { token: reader });
    assert.deepEqual(list.body.data.map((p) => p.id), [mine.body.id]);
  });
});

describe('GET /people/{id}', () => {
  test('answers the Person plus keys; 404 outside the scope; 400 for a malformed id', async () => {
    const { token } = await tenant();
    const other = await tenant();
    const person = await create(token, { name: 'Max' });
    const res = await ctx.service.request<Person & { keys: unknown[] }>('GET', `/v1/people/${person.body.id}`, { token });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ...person.body, keys: [] });
    assert.equal((await ctx.service.request('GET', `/v1/people/${person.body.id}`, { token: other.token })).status, 404);
    assert.equal((await ctx.service.request('GET', '/v1/people/not-a-uuid', { token })).status, 400);
  });
});

describe('PUT /people/{id}', () => {
  test('changes only the fields sent and emits person.updated with changed_fields', async () => {
    const { token } = await tenant();
    const person = await create(token, { name: 'Ned', email: 'ned@example.com', title: 'Dev', company_name: 'Old Co' });
    const res = await ctx.service.request<Person>('PUT', `/v1/people/${person.body.id}`, {
      token,
      body: { title: 'Lead', company_name: 'New Co', phone: '+49 30 901820' },
    });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { ...person.body, title: 'Lead', company_name: 'New Co', phone: '+4930901820' });
    const events = await eventsOf(person.body.id);
    assert.deepEqual(events.map((e) => e.type), ['person.created', 'person.updated']);
    assert.deepEqual(events[1]?.data, { ...res.body, changed_fields: ['phone', 'company_name', 'title'] });
  });

  test('a save that changes nothing sends nothing; null clears a field', async () => {
    const { token } = await tenant();
    const person = await create(token, { name: 'Oli', email: 'oli@example.com', language: 'de' });
    const same = await ctx.service.request<Person>('PUT', `/v1/people/${person.body.id}`, {
      token,
      body: { name: 'Oli', email: 'oli@example.com', language: 'DE' },
    });
    assert.equal(same.status, 200);
    assert.deepEqual(same.body, person.body);
    const empty = await ctx.service.request('PUT', `/v1/people/${person.body.id}`, { token, body: {} });
    assert.equal(empty.status, 200);
    assert.equal((await eventsOf(person.body.id)).length, 1);
    const cleared = await ctx.service.request<Person>('PUT', `/v1/people/${person.body.id}`, { token, body: { email: null } });
    assert.equal(cleared.body.email, null);
    const events = await eventsOf(person.body.id);
    assert.deepEqual(events[1]?.data.changed_fields, ['email']);
  });

  test('validates like create, and answers 404 outside the scope', async () => {
    const { token } = await tenant();
    const other = await tenant();
    const person = await create(token, { name: 'Pam' });
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ name: 'Admin' }, 'name', 'reserved_name'],
      [{ phone: '12345' }, 'phone', 'invalid'],
      [{ colour: 'red' }, 'colour', 'unknown_field'],
      [{ name: null }, 'name', 'invalid'],
    ];
    for (const [body, field, code] of cases) {
      const res = await ctx.service.request<ErrorBody>('PUT', `/v1/people/${person.body.id}`, { token, body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]), [[field, code]]);
    }
    const foreign = await ctx.service.request('PUT', `/v1/people/${person.body.id}`, { token: other.token, body: { title: 'x' } });
    assert.equal(foreign.status, 404);
    assert.equal((await eventsOf(person.body.id)).length, 1);
  });

  test('moving a person to another location in scope reports location in changed_fields', async () => {
    const { account, token } = await tenant();
    const dept = await createDepartment(ctx.service, account.rootLocationId, 'Moved here');
    const person = await create(token, { name: 'Quin' });
    const res = await ctx.service.request<Person>('PUT', `/v1/people/${person.body.id}`, { token, body: { location_id: dept } });
    assert.deepEqual(res.body.location, { id: dept, name: 'Moved here' });
    const events = await eventsOf(person.body.id);
    assert.deepEqual(events[1]?.data.changed_fields, ['location']);
  });
});

describe('DELETE /people/{id}', () => {
  test('answers 204 with no body, emits person.deleted, and the person is gone', async () => {
    const { account, token } = await tenant();
    const person = await create(token, { name: 'Ray', email: 'ray@example.com', phone: '+14155550100' });
    const res = await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    const events = await eventsOf(person.body.id);
    assert.deepEqual(events.map((e) => e.type), ['person.created', 'person.deleted']);
    assert.deepEqual(events[1]?.data, {
      id: person.body.id,
      name: 'Ray',
      email: 'ray@example.com',
      location: { id: account.rootLocationId, name: 'Acme' },
    });
    assert.equal((await ctx.service.request('GET', `/v1/people/${person.body.id}`, { token })).status, 404);
    assert.equal((await ctx.service.request('DELETE', `/v1/people/${person.body.id}`, { token })).status, 404);
    // A deleted person no longer matches: the same phone makes a new person.
    const again = await create(token, { name: 'Ray', phone: '+14155550100' });
    assert.equal(again.status, 201);
    assert.notEqual(again.body.id, person.body.id);
  });
});

describe('people managed by the service', () => {
  test('are created by the operator API and answer 403 forbidden to PUT and DELETE', async () => {
    const { account, token } = await tenant();
    const res = await ctx.service.admin<Person>('POST', '/admin/v1/people', {
      name: 'Sam Managed',
      location_id: account.rootLocationId,
      managed: true,
    });
    assert.equal(res.status, 201);
    assert.equal((await eventsOf(res.body.id))[0]?.type, 'person.created');
    for (const [method, body] of [
      ['PUT', { title: 'x' }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await ctx.service.request<ErrorBody>(method, `/v1/people/${res.body.id}`, { token, body });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'forbidden');
    }
    assert.equal((await ctx.service.request('GET', `/v1/people/${res.body.id}`, { token })).status, 200);
  });
});
