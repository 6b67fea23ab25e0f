// What a setup link's message and page say the key opens: exactly the locks the access decision lets it open,
// with the key's codes read at its person's location and each lock's at the lock's (README "Which groups"). The
// same code defined separately in two sibling departments is two groups: a department's key never names the
// sibling's locks or group titles (a department API key could otherwise read them through an address of its own).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { linkPath, outboxFor } from '../helpers/keys.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService();

let counter = 0;

/** A department's API key makes a person with an address of its own and issues a key: the e-mail's body and the link's page. */
async function issueFromDepartment(departmentId: number, groups: string[]): Promise<{ body: string; page: string }> {
  const { token } = await createApiKey(ctx.service, departmentId, ['people:write', 'keys:write']);
  const email = `opens${++counter}.${process.pid}@example.com`;
  const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: 'Mallory', email } });
  assert.equal(person.status, 201, person.text);
  const issued = await ctx.service.request('POST', '/v1/keys', { token, body: { person_id: person.body.id, security_groups: groups, channel: 'email' } });
  assert.equal(issued.status, 202, issued.text);
  const [mail] = await outboxFor(ctx.service, email);
  assert.ok(mail?.link, 'an e-mail with a link');
  const page = await ctx.service.request('GET', linkPath(mail.link));
  assert.equal(page.status, 200);
  return { body: mail.body, page: page.text };
}

describe('what a setup link says the key opens', () => {
  test("sibling departments each defining `staff`: a key of one names its own department's lock only", async () => {
    const { rootLocationId: root } = await createAccount(ctx.service);
    const a = await createDepartment(ctx.service, root, 'A');
    const b = await createDepartment(ctx.service, root, 'B');
    await createSecurityGroup(ctx.service, a, 'staff', { title: 'A staff' });
    await createSecurityGroup(ctx.service, b, 'staff', { title: 'B staff' });
    await createLock(ctx.service, a, { name: 'A office door', security_groups: ['staff'] });
    await createLock(ctx.service, b, { name: 'B secret vault', security_groups: ['staff'] });

    const fromA = await issueFromDepartment(a, ['staff']);
    for (const text of [fromA.body, fromA.page]) {
      assert.match(text, /A office door/);
      assert.doesNotMatch(text, /B secret vault/);
    }
    const fromB = await issueFromDepartment(b, ['staff']);
    for (const text of [fromB.body, fromB.page]) {
      assert.match(text, /B secret vault/);
      assert.doesNotMatch(text, /A office door/);
    }
  });

  test("a root group shared by both departments names the locks it opens, not a lock where a department's own group of that code stands", async () => {
    const { rootLocationId: root } = await createAccount(ctx.service);
    const a = await createDepartment(ctx.service, root, 'A');
    const b = await createDepartment(ctx.service, root, 'B');
    await createSecurityGroup(ctx.service, root, 'shared', { title: 'Everyone' });
    await createSecurityGroup(ctx.service, b, 'shared', { title: 'B only' }); // B's own `shared`: another group
    await createLock(ctx.service, root, { name: 'Root entrance', security_groups: ['shared'] });
    await createLock(ctx.service, a, { name: 'A side door', security_groups: ['shared'] });
    await createLock(ctx.service, b, { name: 'B lab', security_groups: ['shared'] });

    const fromA = await issueFromDepartment(a, ['shared']);
    for (const text of [fromA.body, fromA.page]) {
      assert.match(text, /Root entrance/);
      assert.match(text, /A side door/);
      assert.doesNotMatch(text, /B lab/, "B's lock carries B's own `shared`, which A's key does not hold");
    }
    // B's person holds B's `shared`: B's lab only (the root's doors resolve `shared` at the root).
    const fromB = await issueFromDepartment(b, ['shared']);
    for (const text of [fromB.body, fromB.page]) {
      assert.match(text, /B lab/);
      assert.doesNotMatch(text, /Root entrance|A side door/);
    }
  });

  test("with no lock to name, the titles are those of the groups at the person's location, never a sibling's", async () => {
    const { rootLocationId: root } = await createAccount(ctx.service);
    const a = await createDepartment(ctx.service, root, 'A');
    const b = await createDepartment(ctx.service, root, 'B');
    await createSecurityGroup(ctx.service, a, 'cleaners', { title: 'A cleaning crew' });
    await createSecurityGroup(ctx.service, b, 'cleaners', { title: 'B night crew' });
    await createLock(ctx.service, b, { name: 'B storeroom', security_groups: ['cleaners'] });

    const fromA = await issueFromDepartment(a, ['cleaners']);
    for (const text of [fromA.body, fromA.page]) {
      assert.match(text, /A cleaning crew/);
      assert.doesNotMatch(text, /B storeroom|B night crew/);
    }
  });
});
