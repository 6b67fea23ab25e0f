// Catalog reads: authenticated GET /v1/locks/{id} and GET /v1/locks?limit=50 at 50 connections.
import { admin, startBenchService, load, stop, type Measured } from './common.ts';

/** An account with 60 locks and a catalog key; returns the key and a lock id. */
async function seed(url: string): Promise<{ token: string; lockId: number }> {
  const account = await admin<{ root_location: { id: number } }>(url, 'POST', '/admin/v1/accounts', { name: 'Bench' });
  const location = account.root_location.id;
  await admin(url, 'POST', '/admin/v1/security_groups', { location_id: location, code: 'staff', title: 'Staff' });
  let lockId = 0;
  for (let i = 0; i < 60; i++) {
    const lock = await admin<{ id: number }>(url, 'POST', '/admin/v1/locks', {
      location_id: location,
      name: `Door ${i}`,
      place: 'Floor 1',
      security_groups: ['staff'],
    });
    if (i === 30) lockId = lock.id;
  }
  const key = await admin<{ token: string }>(url, 'POST', '/admin/v1/api_keys', {
    location_id: location,
    name: 'bench',
    scopes: ['catalog:read'],
  });
  return { token: key.token, lockId };
}

export async function serviceRuns(label: string, env: Record<string, string>): Promise<{ one: Measured; list: Measured; body: string }> {
  const server = await startBenchService(env);
  try {
    const { token, lockId } = await seed(server.url);
    const body = await (await fetch(`${server.url}/v1/locks/${lockId}`, { headers: { authorization: `Bearer ${token}` } })).text();
    const one = await load(`${label}: GET /v1/locks/{id}`, `${server.url}/v1/locks/${lockId}`, token);
    const list = await load(`${label}: GET /v1/locks?limit=50`, `${server.url}/v1/locks?limit=50`, token);
    return { one, list, body };
  } finally {
    await stop(server);
  }
}

