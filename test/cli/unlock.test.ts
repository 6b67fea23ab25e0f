// `latchkey unlock --wait` against a gateway played by `latchkey gateway simulate` on the service's embedded
// broker: exit 0 once confirmed, exit 4 when the device refuses or never answers; and `events tail` reads
// what happened.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createAccount, createApiKey, createLock } from '../helpers/fixtures.ts';
import { createGateway, waitFor, type GatewayCredentials } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';
import { cliFor, outcome, startCli, type CliResult } from './cli.ts';

const ctx = useTestService();
const running: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const stop of running) await stop();
});

/** `latchkey gateway simulate` for this gateway (its password from the environment), once it says it is online. */
async function simulate(gateway: GatewayCredentials, extra: string[] = []) {
  const child = startCli(['gateway', 'simulate', '--id', String(gateway.id), '--mqtt-url', gateway.mqtt.url.replace('localhost', '127.0.0.1'), ...extra], {
    LATCHKEY_GATEWAY_PASSWORD: gateway.mqtt.password,
  });
  const { result, output } = outcome(child);
  let ended: CliResult | null = null;
  void result.then((r) => (ended = r));
  const stop = async (): Promise<CliResult> => {
    if (ended === null) child.stdin.end('quit\n');
    return result;
  };
  running.push(stop);
  await waitFor(() => output().includes(`gateway ${gateway.id} online`) || ended !== null, 'the simulator online', 30_000);
  assert.equal(ended, null, output());
  return { output, stop };
}

/** A remote lock on a fresh gateway, and an API key allowed to open it and read the log. */
async function site() {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lockId = await createLock(ctx.service, account.rootLocationId, { name: 'Gate', gateway_id: gateway.id });
  const { token } = await createApiKey(ctx.service, account.rootLocationId, ['locks:control', 'events:read', 'catalog:read'], { lock_allowlist: [lockId] });
  const cli = cliFor(ctx.service);
  const asClient = { LATCHKEY_API_KEY: token };
  const online = async () => {
    const lock = await ctx.service.request<{ online: boolean }>('GET', `/v1/locks/${lockId}`, { token });
    return lock.body.online;
  };
  return {
    gateway,
    lockId,
    online,
    run: (args: string[]) => cli.run(args, asClient),
    start: (args: string[]) => outcome(startCli(args, { ...cli.env, ...asClient })),
  };
}

describe('unlock --wait', () => {
  test('exits 0 once the simulated gateway confirms; the access log shows the opening', async () => {
    const s = await site();
    const gateway = await simulate(s.gateway);
    await waitFor(s.online, 'the lock online', 10_000);

    const opened = await s.run(['unlock', String(s.lockId), '--wait']);
    assert.equal(opened.code, 0, opened.stderr);
    assert.match(opened.stdout, new RegExp(`^Lock ${s.lockId}: confirmed \\(command [0-9a-f-]{36}\\)$`, 'm'));
    const json = await s.run(['--json', 'unlock', String(s.lockId), '--wait', '--poll', '0.1s']);
    assert.equal(json.code, 0, json.stderr);
    const command = JSON.parse(json.stdout) as { status: string; lock_id: number; confirmed_at: string | null };
    assert.deepEqual([command.status, command.lock_id], ['confirmed', s.lockId]);
    assert.ok(command.confirmed_at);
    assert.match(gateway.output(), /answered \{"id":"[0-9a-f-]{36}","ok":true\}/);

    const tail = await s.run(['--json', 'events', 'tail', '--since', '10m']);
    assert.equal(tail.code, 0, tail.stderr);
    const events = tail.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; source: string; lock: { id: number } });
    assert.deepEqual(events.map((e) => [e.type, e.source, e.lock.id]), [
      ['access.granted', 'api', s.lockId],
      ['access.granted', 'api', s.lockId],
    ]);
    // Who opened, in words: the API key by name and prefix (issue 27, item 6), in tail's lines and list's table.
    const lines = await s.run(['events', 'tail', '--since', '10m']);
    assert.equal(lines.code, 0, lines.stderr);
    const tailed = lines.stdout.trim().split('\n');
    assert.equal(tailed.length, 2);
    for (const line of tailed) assert.match(line, /access\.granted {2}success {2}Gate \(\d+\) {2}API key test key \(lk_[A-Za-z0-9_-]{8}\)$/);
    const listed = await s.run(['events', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    assert.match(header ?? '', /\bWHO\s+SOURCE$/);
    for (const row of rows) assert.match(row, /API key test key \(lk_[A-Za-z0-9_-]{8}\)\s+api$/);
    assert.equal((await gateway.stop()).code, 0);
  });

  test('exits 4 when the device refuses the command', async () => {
    const s = await site();
    const gateway = await simulate(s.gateway, ['--answer', 'error', '--error', 'device_missing']);
    await waitFor(s.online, 'the lock online', 10_000);
    const refused = await s.run(['unlock', String(s.lockId), '--wait']);
    assert.equal(refused.code, 4, refused.stderr);
    assert.match(refused.stdout, /: failed \(command/);
    assert.match(refused.stderr, new RegExp(`^error: unlock of lock ${s.lockId} failed: .+ \\(device_missing\\)$`, 'm'));
    await gateway.stop();
  });

  test('exits 4 when the device never answers and the command times out', async () => {
    const s = await site();
    const gateway = await simulate(s.gateway, ['--answer', 'none']);
    await waitFor(s.online, 'the lock online', 10_000);
    const waiting = s.start(['unlock', String(s.lockId), '--wait', '--poll', '0.1s']);
    await waitFor(() => /command unlock lock \d+/.test(gateway.output()), 'the command at the gateway', 10_000);
    const advanced = await cliFor(ctx.service).run(['sandbox', 'advance', '31s']); // past timeout_seconds (30)
    assert.equal(advanced.code, 0, advanced.stderr);
    const outcomeOfWait = await waiting.result;
    assert.equal(outcomeOfWait.code, 4, waiting.output());
    assert.match(outcomeOfWait.stderr, /timed_out/);
    await gateway.stop();
  });
});
