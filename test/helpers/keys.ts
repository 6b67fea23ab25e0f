// Fixtures of the keys area: a tenant with a security group, a lock, a person and a key-issuing API key.
import assert from 'node:assert/strict';
import { advanceClock, createAccount, createApiKey, createLock, createSecurityGroup } from './fixtures.ts';
import type { TestService } from './service.ts';
import type { ErrorBody } from './types.ts';

export interface KeysTenant {
  accountId: number;
  locationId: number;
  token: string;
  personId: string;
  phone: string;
  email: string;
}

let counter = 0;

export async function keysTenant(service: TestService, account: Record<string, unknown> = {}): Promise<KeysTenant> {
  const { id, rootLocationId } = await createAccount(service, account);
  await createSecurityGroup(service, rootLocationId, 'staff');
  await createSecurityGroup(service, rootLocationId, 'night');
  await createLock(service, rootLocationId, { name: 'Front door', security_groups: ['staff'] });
  const token = (await createApiKey(service, rootLocationId, ['people:write', 'keys:write'])).token;
  counter++;
  const phone = `+44207946${String(counter).padStart(4, '0')}`; // London numbers, one per tenant of this process
  const email = `person${counter}.${process.pid}@example.com`;
  const person = await service.request<{ id: string }>('POST', '/v1/people', { token, body: { name: `Person ${counter}`, phone, email } });
  assert.equal(person.status, 201, person.text);
  return { accountId: id, locationId: rootLocationId, token, personId: person.body.id, phone, email };
}

export interface OutboxEntry {
  id: number;
  channel: string;
  to: string;
  subject: string;
  body: string;
  link: string | null;
}

/** Runs due jobs (sending queued messages), then reads the sandbox outbox for an address. */
export async function outboxFor(service: TestService, to: string): Promise<OutboxEntry[]> {
  await advanceClock(service, 0);
  const res = await service.admin<{ data: OutboxEntry[] }>('GET', `/admin/v1/sandbox/outbox?to=${encodeURIComponent(to)}`);
  return res.body.data;
}

/** The newest setup link sent to an address. */
export async function latestLink(service: TestService, to: string): Promise<string> {
  const [latest] = await outboxFor(service, to);
  assert.ok(latest?.link, `no link sent to ${to}`);
  return latest.link;
}

/** The path of a setup link (the test service listens elsewhere than PUBLIC_URL). */
export function linkPath(link: string): string {
  return new URL(link).pathname;
}

export async function issueKey(service: TestService, tenant: KeysTenant, body: Record<string, unknown> = {}) {
  return service.request<{ invitation_id: number; state: string; sent: { email: boolean; sms: boolean } } & ErrorBody>(
    'POST',
    '/v1/keys',
    { token: tenant.token, body: { person_id: tenant.personId, security_groups: ['staff'], ...body } },
  );
}

export async function activate(service: TestService, link: string) {
  return service.request<{ key_id: number; invitation_id: number } & ErrorBody>('POST', linkPath(link), {
    headers: { accept: 'application/json' },
  });
}
