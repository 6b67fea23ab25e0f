// The gateway simulator (npm run gateway) against a bare broker that records what it publishes: its
// presence is retained and announced on every connection, reconnections included.
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
  const simulator = spawn(process.execPath, ['--import', 'tsx', 'scripts/gateway.ts', '--url', `mqtt://127.0.0.1:${port}`, '--id', '7', '--password', 'secret', '--data', dataFile], {
    stdio: ['pipe', 'pipe', 'pipe'],
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
