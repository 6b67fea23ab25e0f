// Cursors belong to the list that handed them out (README, API notes: "A `cursor` that this endpoint did not hand
// out answers `400 invalid_request`"): every list, public and operator, walks its own cursors page by page and
// refuses another list's, a cursor of the old untagged form, and a forged one whose id no row has.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AccessLogWriter } from '../../src/modules/events/index.ts';
import { systemClock } from '../../src/platform/clock.ts';
import { encodeCursor, type CursorTag } from '../../src/platform/pagination.ts';
import { ALL_SCOPES, advanceClock, createAccount, createApiKey, createDepartment, createLock, createSecurityGroup } from '../helpers/fixtures.ts';
import { createGateway, waitFor } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody, Page } from '../helpers/types.ts';

const ctx = useTestService(undefined, { WEBHOOK_ALLOW_HOSTS: 'localhost' });

interface List {
  path: string;
  tag: CursorTag;
  token: string | null;
  /** A list with at least two rows: walked page by page (the operator's controllers have none here). */
  rows: boolean;
}

async function get<T>(path: string, token: string | null) {
  return token === null ? ctx.service.admin<T>('GET', path) : ctx.service.request<T>('GET', path, { token });
}

/** Every list endpoint, each with two rows or more of its own. */
async function lists(): Promise<List[]> {
  const account = await createAccount(ctx.service, { name: 'Cursors' });
  await createAccount(ctx.service, { name: 'Cursors too' });
  const root = account.rootLocationId;
  const dept = await createDepartment(ctx.service, root, 'Annex');
  const user = await ctx.service.admin<{ id: number }>('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops', email: 'ops.cursors@example.com' });
  await ctx.service.admin('POST', '/admin/v1/users', { account_id: account.id, name: 'Ops 2', email: 'ops2.cursors@example.com' });
  const token = (await createApiKey(ctx.service, root, ALL_SCOPES, { created_by_user_id: user.body.id })).token;
  await createApiKey(ctx.service, dept, ['catalog:read']);
  await createSecurityGroup(ctx.service, root, 'staff');
  await createSecurityGroup(ctx.service, dept, 'annex');
  const gateway = await createGateway(ctx.service, root);
  await createGateway(ctx.service, root);
  const front = await createLock(ctx.service, root, { name: 'Front', gateway_id: gateway.id, security_groups: ['staff'] });
  await createLock(ctx.service, dept, { name: 'Annex door', gateway_id: gateway.id });

  const hook = await ctx.service.request<{ id: string }>('POST', '/v1/webhooks', { token, body: { url: 'https://localhost:9/hook', events: ['person.created'] } });
  assert.equal(hook.status, 201, hook.text);
  await ctx.service.request('POST', '/v1/webhooks', { token, body: { url: 'https://localhost:9/other', events: ['key.issued'] } });
  for (const name of ['Ann', 'Bea', 'Cy']) {
    const person = await ctx.service.request<{ id: string }>('POST', '/v1/people', { token, body: { name, email: `${name.toLowerCase()}.cursors@example.com` } });
    assert.equal(person.status, 201, person.text);
    const issued = await ctx.service.request('POST', '/v1/keys', { token, body: { person_id: person.body.id, security_groups: ['staff'], channel: 'email' } });
    assert.equal(issued.status, 202, issued.text);
    await ctx.service.admin('POST', '/admin/v1/keys', { person_id: person.body.id, type: 'card', name: 'Badge' });
  }
  const writer = new AccessLogWriter(ctx.database.db, systemClock, ctx.service.latchkey.app.log);
  for (const id of ['e1', 'e2', 'e3']) {
    await writer.ingest(gateway.id, { id, lock_id: front, type: 'door.closed', occurred_at: '2026-11-20T08:00:00Z', key_id: null, reason: null });
  }
  await waitFor(async () => {
    await advanceClock(ctx.service, 0);
    return (await get<Page<unknown>>(`/v1/webhooks/${hook.body.id}/deliveries?limit=200`, token)).body.data.length >= 2;
  }, 'deliveries recorded');

  const a = account.id;
  return [
    { path: '/v1/locks', tag: 'locks', token, rows: true },
    { path: '/v1/security_groups', tag: 'security_groups', token, rows: true },
    { path: '/v1/people', tag: 'people', token, rows: true },
    { path: '/v1/keys', tag: 'keys', token, rows: true },
    { path: '/v1/invitations', tag: 'invitations', token, rows: true },
    { path: '/v1/events', tag: 'events', token, rows: true },
    { path: '/v1/webhooks', tag: 'webhooks', token, rows: true },
    { path: `/v1/webhooks/${hook.body.id}/deliveries`, tag: 'deliveries', token, rows: true },
    { path: '/admin/v1/accounts', tag: 'op.accounts', token: null, rows: true },
    { path: `/admin/v1/locations?account_id=${a}`, tag: 'op.locations', token: null, rows: true },
    { path: `/admin/v1/users?account_id=${a}`, tag: 'op.users', token: null, rows: true },
    { path: `/admin/v1/api_keys?account_id=${a}`, tag: 'op.api_keys', token: null, rows: true },
    { path: `/admin/v1/security_groups?account_id=${a}`, tag: 'op.security_groups', token: null, rows: true },
    { path: `/admin/v1/gateways?account_id=${a}`, tag: 'op.gateways', token: null, rows: true },
    { path: `/admin/v1/locks?account_id=${a}`, tag: 'op.locks', token: null, rows: true },
    { path: `/admin/v1/people?account_id=${a}`, tag: 'op.people', token: null, rows: true },
    { path: '/admin/v1/controllers', tag: 'op.controllers', token: null, rows: false },
  ];
}

const withQuery = (path: string, query: string) => `${path}${path.includes('?') ? '&' : '?'}${query}`;
const idOf = (item: unknown) => (item as { id: string | number }).id;

describe('cursors', () => {
  test("each list walks its own cursors to the end and refuses another list's, the old form and ids below 1", async () => {
    const all = await lists();
    const cursors = new Map<string, string>();
    for (const list of all.filter((l) => l.rows)) {
      const whole = await get<Page<unknown>>(withQuery(list.path, 'limit=200'), list.token);
      assert.equal(whole.status, 200, `${list.path}: ${whole.text}`);
      assert.ok(whole.body.data.length >= 2, `${list.path} has ${whole.body.data.length} rows`);
      // Page by page, one row each: the same rows in the same order, each cursor this list's. Twice: the second
      // walk reads the pages the first left in memory (lists with a page cache keep them by their cursor).
      for (const round of [1, 2]) {
        const walked: unknown[] = [];
        let cursor: string | null = null;
        do {
          const query: string = cursor === null ? 'limit=1' : `limit=1&cursor=${encodeURIComponent(cursor)}`;
          const page: Awaited<ReturnType<typeof get<Page<unknown>>>> = await get<Page<unknown>>(withQuery(list.path, query), list.token);
          assert.equal(page.status, 200, `${list.path}?${query}: ${page.text}`);
          walked.push(...page.body.data.map(idOf));
          if (cursor === null) cursors.set(list.path, page.body.next_cursor as string);
          cursor = page.body.next_cursor;
        } while (cursor !== null && walked.length <= whole.body.data.length);
        assert.deepEqual(walked, whole.body.data.map(idOf), `${list.path}, walk ${round}`);
      }
    }
    for (const list of all) {
      const refused: Array<[string, string]> = [...cursors].filter(([path]) => path !== list.path).map(([path, cursor]) => [`the cursor of ${path}`, cursor]);
      refused.push(
        ['an untagged cursor', Buffer.from('[1]').toString('base64url')],
        ['an untagged uuid cursor', Buffer.from('["00000000-0000-0000-0000-000000000000"]').toString('base64url')],
        ['id 0', encodeCursor(0, list.tag)],
        ['id -100', encodeCursor(-100, list.tag)],
      );
      for (const [what, cursor] of refused) {
        const res = await get<ErrorBody>(withQuery(list.path, `cursor=${encodeURIComponent(cursor)}`), list.token);
        assert.equal(res.status, 400, `${list.path} with ${what}: ${res.text}`);
        assert.equal(res.body.error.code, 'invalid_request', `${list.path} with ${what}`);
      }
    }
  });
});
