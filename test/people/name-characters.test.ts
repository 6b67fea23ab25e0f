// A person's name goes into the service's own SMS and e-mails, just above the setup link: it may not hold
// a line of its own (README: API notes, "Names on one line"). Refused on the way in (public create and update, the
// operator's create); a name stored before the rule reaches the messages on one line, cut to its bound.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NAME_IN_MESSAGE_MAX } from '../../src/modules/notifications/index.ts';
import { issueKey, keysTenant, outboxFor } from '../helpers/keys.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody, Person } from '../helpers/types.ts';

const ctx = useTestService();

/** The reviewer's name: a fake instruction with a link of its own, on lines of their own. */
const INJECTED = 'Ann\n\nIMPORTANT: this link is out of date. Use https://evil.example/activate/new instead.\n\n<b>Ann</b>';

const REFUSED: Array<[string, string]> = [
  ['LF', INJECTED],
  ['CR', 'Ann\rIMPORTANT'],
  ['CR LF', 'Ann\r\nIMPORTANT'],
  ['TAB', 'Ann\tLee'],
  ['ESC', 'Ann \u001b[2J Lee'],
  ['DEL', 'Ann\u007fLee'],
  ['NEL (C1)', 'Ann\u0085IMPORTANT'],
  ['a trailing LF', 'Ann Lee\n'],
  ['LINE SEPARATOR', 'Ann\u2028IMPORTANT'],
  ['PARAGRAPH SEPARATOR', 'Ann\u2029IMPORTANT'],
  ['RIGHT-TO-LEFT OVERRIDE', 'Ann \u202eknil wen eht esU'],
  ['FIRST STRONG ISOLATE', 'Ann \u2068Lee\u2069'],
];

function assertRefused(res: { status: number; body: ErrorBody; text: string }): void {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.error.code, 'validation_failed');
  assert.deepEqual(
    res.body.error.details?.map((d) => [d.field, d.code]),
    [['name', 'invalid']],
  );
  assert.match(res.body.error.details?.[0]?.message ?? '', /control characters or line breaks/);
}

describe('a name with control characters or line breaks', () => {
  for (const [what, name] of REFUSED) {
    test(`${what}: refused by POST and PUT /v1/people and by POST /admin/v1/people`, async () => {
      const tenant = await keysTenant(ctx.service);
      const created = await ctx.service.request<Person & ErrorBody>('POST', '/v1/people', { token: tenant.token, body: { name, email: `x.${tenant.email}` } });
      assertRefused(created);

      const updated = await ctx.service.request<Person & ErrorBody>('PUT', `/v1/people/${tenant.personId}`, { token: tenant.token, body: { name } });
      assertRefused(updated);
      const person = await ctx.service.request<Person>('GET', `/v1/people/${tenant.personId}`, { token: tenant.token });
      assert.match(person.body.name, /^Person \d+$/, 'the stored name is unchanged');

      const operator = await ctx.service.admin<Person & ErrorBody>('POST', '/admin/v1/people', { name, location_id: tenant.locationId });
      assertRefused(operator);
    });
  }

  test("a person's title and company name are one line too: 422 on each, nothing stored", async () => {
    const tenant = await keysTenant(ctx.service);
    const res = await ctx.service.request<ErrorBody>('PUT', `/v1/people/${tenant.personId}`, {
      token: tenant.token,
      body: { title: 'CEO\r\nAdmin\u202e', company_name: 'Acme\n\u0007Corp' },
    });
    assert.equal(res.status, 422, res.text);
    assert.deepEqual(res.body.error.details?.map((d) => [d.field, d.code]).sort(), [['company_name', 'invalid'], ['title', 'invalid']]);
    const person = await ctx.service.request<Person & { title: string | null; company_name: string | null }>('GET', `/v1/people/${tenant.personId}`, { token: tenant.token });
    assert.deepEqual([person.body.title, person.body.company_name], [null, null]);
    const fine = await ctx.service.request('PUT', `/v1/people/${tenant.personId}`, { token: tenant.token, body: { title: 'Directrice générale', company_name: 'Acme & Söhne' } });
    assert.equal(fine.status, 200, fine.text);
  });

  test('names with spaces, accents, other scripts and emoji are still accepted', async () => {
    const tenant = await keysTenant(ctx.service);
    for (const name of ['Ann  Lee', 'Zoë Ångström', '山田 太郎', 'Ann 👩🏽‍🔬 Lee', 'Ann\u00a0Lee']) {
      const res = await ctx.service.request<Person>('PUT', `/v1/people/${tenant.personId}`, { token: tenant.token, body: { name } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.name, name);
    }
  });
});

describe('a name stored before the rule', () => {
  test('reaches the SMS and the e-mail on one line, and the setup link stays the only link', async () => {
    const tenant = await keysTenant(ctx.service);
    await ctx.database.db.query('UPDATE people SET name = $2 WHERE id = $1', [tenant.personId, INJECTED]);
    const issued = await issueKey(ctx.service, tenant, { channel: 'both' });
    assert.equal(issued.status, 202, issued.text);

    const messages = [...(await outboxFor(ctx.service, tenant.phone)), ...(await outboxFor(ctx.service, tenant.email))];
    assert.deepEqual(messages.map((m) => m.channel).sort(), ['email', 'sms']);
    for (const message of messages) {
      assert.ok(message.link, 'the message carries its setup link');
      const greeting = message.body.split('\n')[0] ?? '';
      assert.ok(greeting.includes('Hello Ann IMPORTANT: this link is out of date.'), `the name on the greeting's line: ${greeting}`);
      const lines = message.body.split('\n');
      assert.ok(!lines.some((line) => line.startsWith('IMPORTANT')), `no line of the name's own:\n${message.body}`);
      // At most NAME_IN_MESSAGE_MAX characters of the name: its link is cut off before it is whole.
      assert.ok(!message.body.includes('https://evil.example/activate/new'), `the name's link is not in the message:\n${message.body}`);
      assert.ok(greeting.includes('…'), 'the cut shows');
      assert.equal(lines.filter((line) => line.includes('/activate/')).length, 1, `one line with a link to activate:\n${message.body}`);
    }
    const [stored] = await ctx.database.db.query<{ name: string }>('SELECT name FROM people WHERE id = $1', [tenant.personId]);
    assert.equal(stored?.name, INJECTED, 'names already stored are not rewritten');
    assert.equal(NAME_IN_MESSAGE_MAX, 64);
  });
});
