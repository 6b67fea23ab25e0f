// Person, command, subscription and delivery ids are UUIDs in their plain form. The URN form (`urn:uuid:…`) passed
// ajv-formats' uuid check, reached the database, whose uuid type refuses it, and answered 500; upper case is the
// same id as lower case.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createAccount, createApiKey } from '../helpers/fixtures.ts';
import { useTestService } from '../helpers/service.ts';
import type { ErrorBody } from '../helpers/types.ts';

let token: string;
let personId: string;

const ctx = useTestService(async (service) => {
  const account = await createAccount(service);
  token = (await createApiKey(service, account.rootLocationId, ['people:write', 'keys:write', 'events:read', 'webhooks:manage'])).token;
  personId = (await service.admin<{ id: string }>('POST', '/admin/v1/people', { name: 'Ada Door', location_id: account.rootLocationId })).body.id;
}, {}, { transport: 'inject' });

describe('uuid ids', () => {
  test('the URN form is malformed in a path, a query and a body: 400 or 422, never a database error', async () => {
    const urn = `urn:uuid:${personId}`;
    for (const path of [`/v1/people/${urn}`, `/v1/events?person_id=${urn}`, `/v1/keys?person_id=${urn}`, `/v1/webhooks/${urn}`]) {
      const res = await ctx.service.request<ErrorBody>('GET', path, { token });
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'invalid_request', path);
    }
    const created = await ctx.service.request<ErrorBody>('POST', '/v1/keys', { token, body: { person_id: urn, type: 'card', name: 'badge' } });
    assert.equal(created.status, 422, created.text);
    assert.ok(created.body.error.details?.some((d) => d.field === 'person_id'), created.text);
  });

  test('upper case names the same person', async () => {
    const res = await ctx.service.request<{ id: string }>('GET', `/v1/people/${personId.toUpperCase()}`, { token });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.id, personId);
  });
});
