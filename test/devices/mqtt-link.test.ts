// The service's side of an external broker (MQTT_URL), seen from a broker of the test's own making that
// records what the service sends: its CONNECT and its subscriptions on every connection.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, test } from 'node:test';
import mqttPacket, { type Packet } from 'mqtt-packet';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { MqttLink } from '../../src/modules/devices/link.ts';
import { waitFor } from '../helpers/gateways.ts';

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/** An MQTT 5 broker that accepts everything (CONNACK with the session "present", SUBACK granting QoS 1) and keeps what it got. */
async function recordingBroker(): Promise<{ url: string; received: Packet[]; sockets: Set<Socket> }> {
  const received: Packet[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const parser = mqttPacket.parser({ protocolVersion: 5 });
    const send = (packet: Packet) => socket.write(mqttPacket.generate(packet, { protocolVersion: 5 }));
    parser.on('packet', (packet: Packet) => {
      received.push(packet);
      if (packet.cmd === 'connect') send({ cmd: 'connack', sessionPresent: true, reasonCode: 0 });
      if (packet.cmd === 'subscribe') send({ cmd: 'suback', messageId: packet.messageId, granted: packet.subscriptions.map(() => 1) });
      if (packet.cmd === 'unsubscribe') send({ cmd: 'unsuback', messageId: packet.messageId, granted: packet.unsubscriptions.map(() => 17) });
      if (packet.cmd === 'pingreq') send({ cmd: 'pingresp' });
    });
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { url: `mqtt://127.0.0.1:${address.port}`, received, sockets };
}

test("the service's CONNECT announces MQTT_MAX_PACKET_BYTES as its Maximum Packet Size, so the broker sends it nothing larger", async () => {
  const broker = await recordingBroker();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test', MQTT_MAX_PACKET_BYTES: '40000' });
  const link = new MqttLink(config, () => undefined, pino({ level: 'silent' }));
  await link.start();
  closers.push(() => link.close());
  const connect = broker.received.find((packet) => packet.cmd === 'connect');
  assert.equal(connect?.cmd === 'connect' ? connect.properties?.maximumPacketSize : undefined, 40000);
  assert.equal(loadConfig({}).mqttMaxPacketBytes, 65536, 'by default, the limit of the shipped mosquitto.conf');
});

test('every gateway topic is subscribed again on every connection, even when the broker says the session is present', async () => {
  const broker = await recordingBroker();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-2' });
  const link = new MqttLink(config, () => undefined, pino({ level: 'silent' }));
  await link.start();
  closers.push(() => link.close());
  const subscribed = () => broker.received.flatMap((packet) => (packet.cmd === 'subscribe' ? packet.subscriptions.map((s) => s.topic) : []));
  // Every kind of gateway message: door activity, results, presence and the access requests, syncs and applied versions.
  const filters = ['presence', 'heartbeat', 'events', 'commands/result', 'access/request', 'access/sync', 'access/applied'].map((kind) => `latchkey/v1/gateways/+/${kind}`);
  assert.deepEqual(subscribed().sort(), [...filters].sort(), 'per instance, not shared');
  assert.equal(link.state(), 'ok');
  for (const socket of broker.sockets) socket.destroy();
  await waitFor(() => subscribed().length === 2 * filters.length, 'subscribed again after the reconnection');
  await waitFor(() => link.state() === 'ok', 'linked again');
  assert.equal(link.missingSubscriptions(), 0);
});
