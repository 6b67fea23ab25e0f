// No acknowledged command result lost: the service is killed (SIGKILL) while a gateway sends the results of
// 30 unlock commands; after a restart every command is confirmed once, with one access.granted each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mosquittoAvailable } from '../helpers/mosquitto.ts';
import { startServiceProcess } from '../helpers/process.ts';
import { ADMIN, call, cleanups, connectGateway, countRows, setUp, waitFor, type Setup } from '../helpers/gateway-crash.ts';

for (const external of [false, true]) {
  const broker = external ? 'Mosquitto' : 'the embedded broker';
  const skip = external && !mosquittoAvailable() ? 'mosquitto is not installed' : false;

  test(`kill -9 while command results arrive through ${broker}: after restart every command is confirmed once`, { skip, timeout: 240_000 }, async () => {
    const setup = await setUp(external ? 'cmdcrash_ext' : 'cmdcrash', external);
    const gateway = setup.gateways[0] as Setup['gateways'][number];
    const client = await connectGateway(setup.brokerUrl, gateway);
    const base = `latchkey/v1/gateways/${gateway.id}`;
    const commands: Array<{ id: string; lock_id: number }> = [];
    client.on('message', (topic, payload) => {
      if (topic === `${base}/commands`) commands.push(JSON.parse(payload.toString()) as { id: string; lock_id: number });
    });
    await client.subscribeAsync(`${base}/commands`, { qos: 1 });
    await client.publishAsync(`${base}/presence`, '{"online":true}', { qos: 1, retain: true });
    // Locks of this gateway: the spec allows 10 unlocks a minute per lock, one command in flight per lock.
    const locks = [gateway.lock];
    for (let i = 0; i < 29; i++) {
      const lock = await call<{ id: number }>(setup.service.url, 'POST', '/admin/v1/locks', ADMIN, { location_id: setup.locationId, name: `Extra ${i}`, gateway_id: gateway.id });
      locks.push(lock.body.id);
    }
    const unlocker = await call<{ token: string }>(setup.service.url, 'POST', '/admin/v1/api_keys', ADMIN, { location_id: setup.locationId, name: 'unlocker', scopes: ['locks:control', 'catalog:read'], lock_allowlist: locks });
    await waitFor(async () => (await call<{ online: boolean }>(setup.service.url, 'GET', `/v1/locks/${gateway.lock}`, unlocker.body.token)).body.online, 'the gateway online');
    for (const lock of locks) {
      const res = await call(setup.service.url, 'POST', `/v1/locks/${lock}/unlock`, unlocker.body.token);
      assert.equal(res.status, 202, JSON.stringify(res.body));
    }
    await waitFor(() => commands.length >= locks.length, 'every command at the gateway');

    let acknowledged = 0;
    const results = commands.map(({ id }) => client.publishAsync(`${base}/commands/result`, JSON.stringify({ id, ok: true }), { qos: 1 }).then(() => void acknowledged++));
    // The embedded broker acknowledges once committed; Mosquitto on receipt: there, the first confirmed command.
    const commandStatus = async (base: string, command: { id: string; lock_id: number }) =>
      (await call<{ status: string }>(base, 'GET', `/v1/locks/${command.lock_id}/commands/${command.id}`, unlocker.body.token)).body.status;
    if (external) await waitFor(async () => (await Promise.all(commands.map((c) => commandStatus(setup.service.url, c)))).includes('confirmed'), 'the first result committed', 10_000);
    else await waitFor(() => acknowledged >= 1, 'the first result acknowledged', 10_000);
    setup.service.child.kill('SIGKILL');
    await setup.service.exited;

    const second = await startServiceProcess(setup.env);
    cleanups.push(async () => {
      second.child.kill('SIGKILL');
      await second.exited;
    });
    await Promise.race([Promise.all(results), new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${acknowledged} results acknowledged`)), 60_000).unref())]);
    await waitFor(async () => {
      for (const command of commands) if ((await commandStatus(second.url, command)) === 'published') return false;
      return true;
    }, 'every command ended', 60_000);
    await client.endAsync(true);
    second.child.kill('SIGTERM');
    await second.exited;

    const confirmed = await countRows(setup.env, "SELECT count(*) AS n FROM lock_commands WHERE status = 'confirmed'");
    const granted = await countRows(setup.env, "SELECT count(*) AS n FROM access_events WHERE type = 'access.granted'");
    console.log(`# ${broker}: ${commands.length} results sent, confirmed ${confirmed}, access.granted ${granted}`);
    assert.equal(confirmed, commands.length, 'every command confirmed');
    assert.equal(granted, commands.length, 'one access.granted per command');
  });
}
