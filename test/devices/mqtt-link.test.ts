// The service's side of an external broker (MQTT_URL), seen from a broker of the test's own making that
// records what the service sends: its CONNECT and its subscriptions on every connection.
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { after, test } from 'node:test';
import mqttPacket, { type Packet } from 'mqtt-packet';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { MAX_QOS0_BEHIND, MqttLink } from '../../src/modules/devices/link.ts';
import { waitFor } from '../helpers/gateways.ts';

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/**
 * An MQTT 5 broker that accepts everything (CONNACK with the session "present", SUBACK granting QoS 1) and keeps
 * what it got; `refuse` names the filters it refuses (SUBACK 0x87) the first time they are asked for.
 */
async function recordingBroker(
  refuse: string[] = [],
  options: { closeAfterMs?: number; port?: number } = {},
): Promise<{ url: string; received: Packet[]; sockets: Set<Socket>; close: () => Promise<void> }> {
  const refusing = new Set(refuse);
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
      // As Mosquitto 2.0 closes a client whose id another connection took: no DISCONNECT, the socket ends.
      if (packet.cmd === 'connect' && options.closeAfterMs !== undefined) setTimeout(() => socket.destroy(), options.closeAfterMs);
      if (packet.cmd === 'subscribe') send({ cmd: 'suback', messageId: packet.messageId, granted: packet.subscriptions.map((s) => (refusing.delete(s.topic) ? 0x87 : 1)) });
      if (packet.cmd === 'unsubscribe') send({ cmd: 'unsuback', messageId: packet.messageId, granted: packet.unsubscriptions.map(() => 17) });
      if (packet.cmd === 'pingreq') send({ cmd: 'pingresp' });
    });
    socket.on('data', (chunk: Buffer) => parser.parse(chunk));
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  closers.push(() => (server.listening ? close() : Promise.resolve()));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  return { url: `mqtt://127.0.0.1:${address.port}`, received, sockets, close };
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

/** A logger whose lines the test reads. */
type LogLine = { level: number; msg: string; missing?: number; err?: { message: string }; errorsNotLogged?: number; downForMs?: number };
function readLog(): { log: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  return { log: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

const subscribedIn = (received: Packet[]) => received.flatMap((packet) => (packet.cmd === 'subscribe' ? [packet.subscriptions.map((s) => s.topic)] : []));

test('a broker that grants every subscription at start: nothing is said missing, and no empty SUBSCRIBE is tried later', async () => {
  const broker = await recordingBroker();
  const { log, lines } = readLog();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-3' });
  const link = new MqttLink(config, () => undefined, log, { resubscribeMs: 20 });
  await link.start();
  closers.push(() => link.close());
  assert.equal(link.missingSubscriptions(), 0);
  assert.equal(link.state(), 'ok');
  // A reconnection (at least reconnectPeriod, 1 s, later: far past a retry's 20 ms) and its subscriptions.
  for (const socket of broker.sockets) socket.destroy();
  await waitFor(() => subscribedIn(broker.received).length === 2, 'subscribed again after the reconnection');
  await waitFor(() => link.state() === 'ok', 'linked again');
  const warned = lines.filter((line) => line.level >= 40).map((line) => `${line.msg} ${line.err?.message ?? ''}`);
  assert.deepEqual(warned, ['mqtt connection lost; reconnecting '], 'the loss said; no refusal, no "Invalid topic"');
  assert.ok(subscribedIn(broker.received).every((filters) => filters.length === 7), 'every SUBSCRIBE asks for the 7 filters');
});

test('a filter the broker refuses is said missing (that one), and asked for again, alone, until granted', async () => {
  const sync = 'latchkey/v1/gateways/+/access/sync';
  const broker = await recordingBroker([sync]);
  const { log, lines } = readLog();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-4' });
  const link = new MqttLink(config, () => undefined, log, { resubscribeMs: 20 });
  await link.start();
  closers.push(() => link.close());
  await waitFor(() => link.state() === 'ok', 'the refused filter granted when asked again');
  assert.deepEqual(subscribedIn(broker.received).map((filters) => filters.length), [7, 1]);
  assert.deepEqual(subscribedIn(broker.received)[1], [sync]);
  assert.deepEqual(lines.filter((line) => line.level >= 40).map((line) => [line.msg, line.missing]), [
    ["the MQTT broker refused some of the service's gateway subscriptions; asking again", 1],
  ]);
});

test('a gateway sending QoS 0 faster than its messages are handled: past MAX_QOS0_BEHIND of them in hand, the rest are dropped, and counted', async () => {
  const broker = await recordingBroker();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-qos0' });
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let handled = 0;
  const dropped: string[] = [];
  const link = new MqttLink(
    config,
    () => {
      handled++;
      return held; // the database is slow: nothing handled finishes until released
    },
    pino({ level: 'silent' }),
    { overloadDropped: (gatewayId, kind) => dropped.push(`${gatewayId} ${kind}`) },
  );
  await link.start();
  closers.push(() => link.close());
  const [socket] = broker.sockets;
  assert.ok(socket);
  const publish = (i: number) =>
    socket.write(mqttPacket.generate({ cmd: 'publish', topic: 'latchkey/v1/gateways/7/events', payload: JSON.stringify({ id: `e${i}` }), qos: 0, retain: false, dup: false }, { protocolVersion: 5 }));
  for (let i = 0; i < 1000; i++) publish(i);
  await waitFor(() => handled + dropped.length === 1000, 'every message handled or dropped');
  assert.equal(handled, MAX_QOS0_BEHIND, 'no more in hand than the bound');
  assert.equal(dropped.length, 1000 - MAX_QOS0_BEHIND);
  assert.equal(dropped[0], '7 events');
  // Once handled, the gateway's next messages are taken again.
  release();
  await new Promise((resolve) => setTimeout(resolve, 50));
  publish(1000);
  await waitFor(() => handled === MAX_QOS0_BEHIND + 1, 'the next message handled');
});

test('a broker away for seconds: one line when the connection is lost, its first error, and one when it is back; not a line a second', async () => {
  const broker = await recordingBroker();
  const { log, lines } = readLog();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-outage' });
  const link = new MqttLink(config, () => undefined, log);
  await link.start();
  closers.push(() => link.close());
  await broker.close();
  // mqtt.js tries again every second: three failed attempts.
  await new Promise((resolve) => setTimeout(resolve, 3500));
  assert.equal(link.state(), 'down');
  await recordingBroker([], { port: Number(new URL(broker.url).port) });
  await waitFor(() => link.state() === 'ok', 'connected again');
  const said = lines.map((line) => line.msg);
  assert.deepEqual(said.filter((msg) => msg === 'mqtt connection lost; reconnecting'), ['mqtt connection lost; reconnecting']);
  assert.ok(said.filter((msg) => msg === 'mqtt connection error').length <= 1, said.join('\n'));
  const back = lines.filter((line) => line.msg === 'mqtt connection is back');
  assert.equal(back.length, 1);
  assert.ok((back[0]?.errorsNotLogged ?? 0) >= 2, 'the failed attempts are counted, not logged');
  assert.ok((back[0]?.downForMs ?? 0) >= 3000);
});

test('a broker closing the connection right after accepting it, again and again (another process with this MQTT_CLIENT_ID): said once, as such', async () => {
  const broker = await recordingBroker([], { closeAfterMs: 100 });
  const { log, lines } = readLog();
  const config = loadConfig({ MQTT_URL: broker.url, MQTT_CLIENT_ID: 'latchkey-link-test-twice' });
  const link = new MqttLink(config, () => undefined, log);
  await link.start();
  closers.push(() => link.close());
  await waitFor(() => lines.some((line) => line.level === 50), 'the takeover said', 10_000);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const errors = lines.filter((line) => line.level === 50);
  assert.equal(errors.length, 1, 'said once');
  assert.match(errors[0]?.msg ?? '', /same client id \(MQTT_CLIENT_ID\); every instance needs its own/);
  assert.equal((errors[0] as { clientId?: string }).clientId, 'latchkey-link-test-twice');
  assert.ok(lines.filter((line) => line.msg === 'mqtt connection is back').length <= 2, 'no line a reconnection');
});

const externalUrl = process.env.TEST_MQTT_URL;

test('on Mosquitto (MQTT_URL): every subscription is there from the start, and nothing is said refused or failed', { skip: externalUrl ? false : 'needs TEST_MQTT_URL' }, async () => {
  const { log, lines } = readLog();
  const config = loadConfig({ MQTT_URL: externalUrl as string, MQTT_CLIENT_ID: `latchkey-link-test-${process.pid}`, MQTT_SESSION_EXPIRY_SECONDS: '0' });
  const link = new MqttLink(config, () => undefined, log, { resubscribeMs: 20 });
  await link.start();
  closers.push(() => link.close());
  assert.equal(link.missingSubscriptions(), 0);
  assert.equal(link.state(), 'ok');
  // Long past a retry (20 ms here), had one been scheduled: none was, so none ran.
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(link.missingSubscriptions(), 0);
  assert.deepEqual(lines.filter((line) => line.level >= 40).map((line) => `${line.msg} ${line.err?.message ?? ''}`), []);
});
