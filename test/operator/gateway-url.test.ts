// The broker address gateways are given (issue 27, deploying): GATEWAY_MQTT_URL when set, and never the
// service's own broker user and password.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { withoutCredentials } from '../../src/modules/devices/index.ts';
import { createAccount } from '../helpers/fixtures.ts';
import { createGateway } from '../helpers/gateways.ts';
import { useTestService } from '../helpers/service.ts';

const ctx = useTestService(undefined, { GATEWAY_MQTT_URL: 'mqtts://doors.example.com:8883' });

test('gateways are given GATEWAY_MQTT_URL, the address they dial', async () => {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  assert.equal(gateway.mqtt.url, 'mqtts://doors.example.com:8883');
});

test("derived from MQTT_URL, the address drops the service's user and password", () => {
  assert.equal(withoutCredentials('mqtt://latchkey:s3cret@mosquitto:1883'), 'mqtt://mosquitto:1883');
  assert.equal(withoutCredentials('mqtts://broker.example.com:8883'), 'mqtts://broker.example.com:8883');
});

test('GATEWAY_MQTT_URL must be an MQTT URL', () => {
  assert.throws(() => loadConfig({ GATEWAY_MQTT_URL: 'http://x' }), /GATEWAY_MQTT_URL/);
});
