// What the service logs of an MQTT connection that reconnects by itself (src/modules/devices/connection-log.ts),
// driven event by event on a stand-in client and a clock of the test's own.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import type { MqttClient } from 'mqtt';
import pino from 'pino';
import { logConnection } from '../../src/modules/devices/connection-log.ts';

function harness(options: { clientIdSetting?: string } = {}) {
  const lines: Array<{ level: number; msg: string; errorsNotLogged?: number }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }) as unknown as FastifyBaseLogger;
  const client = new EventEmitter();
  let clock = 0;
  logConnection(client as unknown as MqttClient, log, { name: 'link', clientId: 'the-id', connected: true, ...options }, () => clock);
  return {
    lines,
    at: (ms: number) => (clock = ms),
    emit: (event: 'connect' | 'close' | 'error') => client.emit(event, event === 'error' ? new Error('refused') : undefined),
    said: () => lines.map((l) => l.msg),
  };
}

test('after a takeover ends, a later outage is logged again: lost, its first error, back', () => {
  const h = harness({ clientIdSetting: 'MQTT_CLIENT_ID' });
  // Three connections closed right after being accepted, within a minute: another process holds the id.
  for (const t of [1000, 2000, 3000]) {
    h.at(t);
    h.emit('close');
    h.at(t + 100);
    h.emit('connect');
  }
  assert.equal(h.lines.filter((l) => l.level === 50).length, 1);
  assert.match(h.said().find((m) => m.startsWith('the broker keeps closing')) ?? '', /same client id \(MQTT_CLIENT_ID\)/);
  // Ten minutes of a steady connection, then the broker goes away for a while.
  h.lines.length = 0;
  h.at(600_000);
  h.emit('close');
  h.emit('error');
  h.emit('error');
  h.at(630_000);
  h.emit('connect');
  assert.deepEqual(h.said(), ['link lost; reconnecting', 'link error', 'link is back']);
  assert.equal(h.lines.at(-1)?.errorsNotLogged, 1);
});

test('a connection under a client id of the service’s own making is not said to be taken over', () => {
  const h = harness();
  for (const t of [1000, 2000, 3000]) {
    h.at(t);
    h.emit('close');
    h.at(t + 100);
    h.emit('connect');
  }
  const flapping = h.lines.filter((l) => l.level === 50);
  assert.deepEqual(flapping.map((l) => l.msg), ['the broker keeps closing the link right after accepting it']);
});
