// The gateway simulator (npm run gateway, which is `latchkey gateway simulate`) against a bare broker that records
// what it publishes: its presence is retained and announced on every connection, reconnections included; a wrong
// password is one line and a non-zero exit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Aedes, type Client } from 'aedes';
import { waitFor } from '../helpers/gateways.ts';

test('the simulator retains its presence and announces itself on every connect, reconnections included', async () => {
  const broker = await Aedes.createBroker();
  const server = createServer(broker.handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const presence: Array<{ payload: string; retain: boolean }> = [];
  const connections: Client[] = [];
  broker.on('client', (client) => connections.push(client));
  broker.on('publish', (packet, client) => {
    if (client && packet.topic === 'latchkey/v1/gateways/7/presence') presence.push({ payload: packet.payload.toString(), retain: packet.retain });
  });

  const dataFile = path.join(tmpdir(), `latchkey-gateway-7-${process.pid}.json`);
  // `latchkey gateway simulate`'s flags, the password from the environment.
  const simulator = spawn(process.execPath, ['--import', 'tsx', 'scripts/gateway.ts', '--mqtt-url', `mqtt://127.0.0.1:${port}`, '--id', '7', '--data', dataFile], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, LATCHKEY_GATEWAY_PASSWORD: 'secret' },
  });
  let output = '';
  simulator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  simulator.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => simulator.once('exit', resolve));
  try {
    await waitFor(() => presence.length === 1, 'the first announcement', 30_000).catch((error: Error) => assert.fail(`${error.message}\n${output}`));
    // The connection drops (a broker or network failure): the will, then the simulator reconnects and announces again.
    connections[0]?.conn.destroy();
    await waitFor(() => presence.length === 3, 'the announcement after reconnecting', 10_000).catch((error: Error) => assert.fail(`${error.message}\n${output}`));
    // A gateway that keeps access lists says what it holds (here: none yet).
    const online = JSON.stringify({ online: true, access_list: { version: 0, expired: false } });
    assert.deepEqual(presence, [
      { payload: online, retain: true },
      { payload: '{"online":false}', retain: true },
      { payload: online, retain: true },
    ]);
  } finally {
    simulator.kill('SIGTERM');
    await exited;
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** Runs `npm run gateway` with these arguments to its end. */
async function runGateway(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/gateway.ts', ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, output };
}

test('npm run gateway with a wrong password prints one line naming what to check, no stack trace, and exits non-zero', async () => {
  const broker = await Aedes.createBroker();
  broker.authenticate = (_client, _username, _password, done) => done(Object.assign(new Error('bad credentials'), { returnCode: 4 as const }), false);
  const server = createServer(broker.handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  try {
    const url = `mqtt://127.0.0.1:${port}`;
    const refused = await runGateway(['--id', '7', '--mqtt-url', url, '--data', path.join(tmpdir(), `latchkey-gateway-refused-${process.pid}.json`)], {
      LATCHKEY_GATEWAY_PASSWORD: 'wrong-password-value',
    });
    assert.notEqual(refused.code, 0);
    const lines = refused.output.split('\n').filter((line) => line.trim() !== '');
    assert.equal(lines.length, 1, JSON.stringify(refused.output));
    assert.match(lines[0] as string, new RegExp(`^error: gateway 7 could not connect to ${url} \\(.+\\): check --id and the password \\(--password or LATCHKEY_GATEWAY_PASSWORD\\)$`));
    assert.doesNotMatch(refused.output, /wrong-password-value/);

    // Nothing listening at the address (a port opened and closed again): the flag to check is named.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const nobody = `mqtt://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const unreachable = await runGateway(['--id', '7', '--mqtt-url', nobody, '--data', path.join(tmpdir(), `latchkey-gateway-nobody-${process.pid}.json`)], {
      LATCHKEY_GATEWAY_PASSWORD: 'x',
    });
    assert.notEqual(unreachable.code, 0);
    assert.match(unreachable.output, new RegExp(`^error: gateway 7 could not connect to ${nobody} \\(.*ECONNREFUSED.*\\): .*pass --mqtt-url`, 'm'));

    // The old flag for the broker is named, not silently taken as the service's URL.
    const oldFlag = await runGateway(['--id', '7', '--url', url], { LATCHKEY_GATEWAY_PASSWORD: 'x' });
    assert.equal(oldFlag.code, 2);
    assert.match(oldFlag.output, /give the broker with --mqtt-url/);
  } finally {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});
