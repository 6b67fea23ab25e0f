// The embedded broker listens where MQTT_HOST says (all interfaces by default), not where HOST puts the HTTP
// listener: an API bound to loopback behind a reverse proxy must not cut the gateways off.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { test } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

const ctx = useTestService();

/** An IPv4 address of this machine that is not loopback, if it has one. */
const outside = Object.values(networkInterfaces())
  .flat()
  .find((a) => a?.family === 'IPv4' && !a.internal)?.address;

const reachable = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host, port }, () => {
      resolve(true);
      socket.destroy();
    });
    socket.on('error', () => resolve(false));
  });

test('HOST=127.0.0.1 binds the HTTP listener only; the broker follows MQTT_HOST', { skip: outside ? false : 'no address but loopback' }, async () => {
  for (const [mqttHost, fromOutside] of [[undefined, true], ['127.0.0.1', false]] as const) {
    const app = await buildApp({
      config: loadConfig({ ADMIN_TOKEN, SANDBOX: 'true', HOST: '127.0.0.1', MQTT_PORT: '0', ...(mqttHost ? { MQTT_HOST: mqttHost } : {}) }),
      db: ctx.database.db,
      logger: { level: 'silent' },
    });
    try {
      const port = Number(new URL(app.mqttUrl as string).port);
      assert.equal(await reachable('127.0.0.1', port), true, `${mqttHost ?? 'default'}: on loopback`);
      assert.equal(await reachable(outside as string, port), fromOutside, `${mqttHost ?? 'default'}: from ${outside}`);
    } finally {
      await app.close();
    }
  }
});
