// Acting as a gateway over real MQTT, as a device would.
import { after } from 'node:test';
import mqtt, { type MqttClient } from 'mqtt';
import type { TestService } from './service.ts';

export interface GatewayCredentials {
  id: number;
  mqtt: { url: string; client_id: string; username: string; password: string; topic_prefix: string };
}

/** Creates a gateway through the operator API. */
export async function createGateway(service: TestService, locationId: number): Promise<GatewayCredentials> {
  const res = await service.admin<GatewayCredentials>('POST', '/admin/v1/gateways', { location_id: locationId, name: 'gw' });
  if (res.status !== 201) throw new Error(res.text);
  return res.body;
}

/**
 * Connects with the gateway's credentials; the clients of a test file are ended after its tests
 * (call from the file's top level once, through gatewayClients()).
 */
export function gatewayClients(): (gateway: GatewayCredentials, options?: mqtt.IClientOptions) => Promise<MqttClient> {
  const clients: MqttClient[] = [];
  after(async () => {
    for (const client of clients) await client.endAsync(true).catch(() => undefined);
  });
  return async (gateway, options = {}) => {
    const client = await mqtt.connectAsync(gateway.mqtt.url.replace('localhost', '127.0.0.1'), {
      clientId: gateway.mqtt.client_id,
      username: gateway.mqtt.username,
      password: gateway.mqtt.password,
      reconnectPeriod: 0,
      ...options,
    });
    clients.push(client);
    return client;
  };
}

/** Resolves once the check passes; fails the test after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out: ${what}`);
}

/** The promise's value, or a failure after `ms` (a refused connection can leave an MQTT call pending). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out: ${what}`)), ms).unref())]);
}

/** Whether the broker closes the client's connection within `ms` (call before provoking it). */
export function closedWithin(client: MqttClient, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    client.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** The topic of one kind of gateway message: `latchkey/v1/gateways/{id}/{kind}`. */
export function gatewayTopic(gateway: GatewayCredentials, kind: string): string {
  return `${gateway.mqtt.topic_prefix}/gateways/${gateway.id}/${kind}`;
}

/** Resolves when the broker closes the client's connection; fails after 5 seconds. */
export function dropped(client: MqttClient): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!client.connected) return resolve();
    const timer = setTimeout(() => reject(new Error('the connection was not dropped')), 5000);
    client.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** An MQTT fixed header: the packet type byte and the remaining length, as announced. */
export function fixedHeader(typeByte: number, remainingLength: number): Buffer {
  const bytes = [typeByte];
  let left = remainingLength;
  do {
    let byte = left % 128;
    left = Math.floor(left / 128);
    if (left > 0) byte |= 0x80;
    bytes.push(byte);
  } while (left > 0);
  return Buffer.from(bytes);
}
