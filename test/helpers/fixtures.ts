// Tenancy fixtures made through the operator API, as an operator would make them.
import assert from 'node:assert/strict';
import { SCOPES } from '../../src/platform/scopes.ts';
import type { TestService } from './service.ts';

export interface AccountFixture {
  id: number;
  rootLocationId: number;
}

export async function createAccount(service: TestService, body: Record<string, unknown> = {}): Promise<AccountFixture> {
  const res = await service.admin<{ id: number; root_location: { id: number } }>('POST', '/admin/v1/accounts', {
    name: 'Acme',
    ...body,
  });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.id, rootLocationId: res.body.root_location.id };
}

export async function createDepartment(service: TestService, parentId: number, name = 'Dept'): Promise<number> {
  const res = await service.admin<{ id: number }>('POST', '/admin/v1/locations', { parent_id: parentId, name });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

export async function createApiKey(
  service: TestService,
  locationId: number,
  scopes: string[],
  extra: Record<string, unknown> = {},
): Promise<{ id: number; token: string }> {
  const res = await service.admin<{ id: number; token: string }>('POST', '/admin/v1/api_keys', {
    location_id: locationId,
    name: 'test key',
    scopes,
    ...extra,
  });
  assert.equal(res.status, 201, res.text);
  return { id: res.body.id, token: res.body.token };
}

export async function createLock(service: TestService, locationId: number, extra: Record<string, unknown> = {}): Promise<number> {
  const res = await service.admin<{ id: number }>('POST', '/admin/v1/locks', { location_id: locationId, name: 'Door', ...extra });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

export async function createSecurityGroup(service: TestService, locationId: number, code: string, extra: Record<string, unknown> = {}) {
  const res = await service.admin<{ id: number; code: string }>('POST', '/admin/v1/security_groups', {
    location_id: locationId,
    code,
    title: code,
    ...extra,
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/**
 * Moves the sandbox clock to just after the start of a minute, so that a test counting requests inside
 * one rate-limit window has the whole minute before the window rolls.
 */
export async function alignToMinuteStart(service: TestService): Promise<void> {
  const res = await service.admin<{ now: string }>('GET', '/admin/v1/sandbox/clock');
  const now = new Date(res.body.now);
  const intoMinute = now.getUTCSeconds() + now.getUTCMilliseconds() / 1000;
  await service.admin('POST', '/admin/v1/sandbox/clock/advance', { seconds: 60 - intoMinute + 0.5 });
}

export async function advanceClock(service: TestService, seconds: number): Promise<Date> {
  const res = await service.admin<{ now: string }>('POST', '/admin/v1/sandbox/clock/advance', { seconds });
  assert.equal(res.status, 200, res.text);
  return new Date(res.body.now);
}

export const ALL_SCOPES: string[] = [...SCOPES];
