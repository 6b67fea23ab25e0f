// No acknowledged door event lost: the service is killed (SIGKILL) in the middle of a burst of door events
// from several gateways that resend what was not acknowledged, as MQTT clients do; after a restart every
// event is stored exactly once. Once through the embedded broker, once through a Mosquitto of the test's
// own (whose session for the service keeps what the service had not acknowledged).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mosquittoAvailable } from '../helpers/mosquitto.ts';
import { startServiceProcess } from '../helpers/process.ts';
import { EVENTS, GATEWAYS, call, cleanups, connectGateway, countEvents, countRows, setUp, waitFor, type Setup } from '../helpers/gateway-crash.ts';

for (const external of [false, true]) {
  const broker = external ? 'Mosquitto' : 'the embedded broker';
  const skip = external && !mosquittoAvailable() ? 'mosquitto is not installed' : false;

  test(`kill -9 in the middle of a burst of ${EVENTS} door events through ${broker}: after restart every event is stored exactly once`, { skip, timeout: 240_000 }, async () => {
    const setup = await setUp(external ? 'gwcrash_ext' : 'gwcrash', external);
    const clients = await Promise.all(setup.gateways.map((g) => connectGateway(setup.brokerUrl, g)));
    let acknowledged = 0;
    const occurredAt = new Date().toISOString();
    const sent = clients.map((client, g) => {
      const gateway = setup.gateways[g] as Setup['gateways'][number];
      const all: Array<Promise<void>> = [];
      for (let i = g; i < EVENTS; i += GATEWAYS) {
        const event = { id: `e${i}`, lock_id: gateway.lock, type: 'access.denied', occurred_at: occurredAt, key_id: null, reason: 'unknown_key' };
        all.push(client.publishAsync(`latchkey/v1/gateways/${gateway.id}/events`, JSON.stringify(event), { qos: 1 }).then(() => void acknowledged++));
      }
      return Promise.all(all);
    });

    const started = Date.now();
    // The embedded broker acknowledges once stored; Mosquitto on receipt, so there the first stored event
    // (seen through the API) marks the middle of the burst.
    if (external) await waitFor(async () => (await call<{ data: unknown[] }>(setup.service.url, 'GET', '/v1/events?limit=1', setup.token)).body.data.length > 0, 'the first event stored');
    // Late in the burst, yet with a fifth of it in flight: a gateway resends what was not acknowledged one message at
    // a time after it reconnects (mqtt.js waits for each acknowledgement), each its own commit, so every event left
    // costs the restart a round trip.
    else await waitFor(() => acknowledged >= EVENTS * 0.8, 'four fifths of the burst acknowledged');
    setup.service.child.kill('SIGKILL');
    await setup.service.exited;
    const acknowledgedBeforeKill = acknowledged;
    // Mosquitto acknowledges on receipt, whatever the service does: only the embedded broker's count tells.
    if (!external) assert.ok(acknowledgedBeforeKill < EVENTS, 'killed in the middle of the burst');
    console.log(`# ${broker}: killed after ${Date.now() - started} ms`);

    const second = await startServiceProcess(setup.env);
    console.log(`# ${broker}: restarted ${Date.now() - started} ms after the burst began`);
    cleanups.push(async () => {
      second.child.kill('SIGKILL');
      await second.exited;
    });
    // Every event is acknowledged in the end: the gateways resent what the dead process had not acknowledged.
    await Promise.race([Promise.all(sent), new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${acknowledged} acknowledged`)), 120_000).unref())]);
    console.log(`# ${broker}: all acknowledged ${Date.now() - started} ms after the burst began`);
    // Through Mosquitto, the service's session holds what it had not acknowledged: wait until it is written.
    await waitFor(async () => (await countEvents(second.url, setup.token)) >= EVENTS, 'every event readable', 120_000);
    console.log(`# ${broker}: all stored ${Date.now() - started} ms after the burst began`);
    for (const client of clients) await client.endAsync(true);
    second.child.kill('SIGTERM');
    await second.exited;

    const stored = await countRows(setup.env, 'SELECT count(*) AS n FROM access_events');
    const distinct = await countRows(setup.env, 'SELECT count(DISTINCT (gateway_id, gateway_event_id)) AS n FROM access_events');
    console.log(`# ${broker}: sent ${EVENTS}, acknowledged before the kill ${acknowledgedBeforeKill}, stored ${stored}, lost ${EVENTS - distinct}`);
    assert.equal(distinct, EVENTS, 'no event lost');
    assert.equal(stored, EVENTS, 'no event stored twice');
  });
}
