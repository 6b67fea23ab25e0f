// A gateway's malformed message is dropped with one warning that says what is wrong (the field and the rule) and
// which message it was (its id once that is valid), so a gateway integration can be debugged from the log; the
// warning never carries what the gateway sent otherwise (a card's credential above all).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createAccount, createLock } from '../helpers/fixtures.ts';
import { createGateway, gatewayClients, gatewayTopic, waitFor } from '../helpers/gateways.ts';
import { ADMIN_TOKEN, useTestService } from '../helpers/service.ts';

const ctx = useTestService();
const connect = gatewayClients();

interface LogLine {
  level: number;
  msg: string;
  gatewayId?: number;
  problem?: string;
  eventId?: string;
  requestId?: string;
  commandId?: string;
}

test('malformed events, access requests and command results are each dropped with what is wrong, never with the values sent', async () => {
  const account = await createAccount(ctx.service);
  const gateway = await createGateway(ctx.service, account.rootLocationId);
  const lock = await createLock(ctx.service, account.rootLocationId, { gateway_id: gateway.id });
  // A second service on the same store whose log the test reads.
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const watched = await buildApp({
    config: loadConfig({ ADMIN_TOKEN, SANDBOX: 'true', HOST: '127.0.0.1', MQTT_PORT: '0', LOG_LEVEL: 'warn' }),
    db: ctx.database.db,
    logger: {
      stream: {
        write: (line: string) => {
          raw.push(line);
          lines.push(JSON.parse(line) as LogLine);
        },
      },
    },
  });
  try {
    const client = await connect({ ...gateway, mqtt: { ...gateway.mqtt, url: watched.mqttUrl as string } });
    const event = { id: 'ev-1', lock_id: lock, type: 'door.closed', occurred_at: '2026-11-29T10:00:00Z', key_id: null, reason: null };
    const longId = 'x'.repeat(5000);
    const secret = 'CARD-0123456789';
    const sent: Array<[string, unknown, Partial<LogLine>]> = [
      ['events', { ...event, lock_id: String(lock) }, { problem: 'lock_id: must be a positive integer', eventId: 'ev-1' }],
      ['events', { ...event, type: 'door.exploded' }, { eventId: 'ev-1' }],
      ['events', { ...event, occurred_at: '29/11/2026' }, { eventId: 'ev-1' }],
      ['events', { ...event, key_id: 2 ** 60 }, { problem: 'key_id: must be a positive integer or null', eventId: 'ev-1' }],
      ['events', { ...event, id: longId }, { problem: 'id: must be text of 1 to 200 characters, without NUL' }],
      ['access/request', { id: 'rq-1', lock_id: -1, credential: secret }, { problem: 'lock_id: must be a positive integer', requestId: 'rq-1' }],
      ['access/request', { id: 'rq-2', lock_id: lock, credential: 42 }, { problem: 'credential: must be text', requestId: 'rq-2' }],
      ['commands/result', { id: '00000000-0000-4000-8000-000000000000', ok: 'yes' }, { problem: 'ok: must be true or false', commandId: '00000000-0000-4000-8000-000000000000' }],
    ];
    for (const [kind, payload] of sent) await client.publishAsync(gatewayTopic(gateway, kind), JSON.stringify(payload), { qos: 1 });
    const warnings = () => lines.filter((line) => line.level === 40 && line.gatewayId === gateway.id);
    await waitFor(() => warnings().length >= sent.length, 'the warnings');
    const got = warnings();
    sent.forEach(([kind, , expected], i) => {
      const line = got[i] as LogLine;
      assert.match(line.msg, /^malformed .*; dropped$/, kind);
      assert.ok(line.problem, `${kind} #${i}: a problem is named`);
      for (const [field, value] of Object.entries(expected)) assert.equal(line[field as keyof LogLine], value, `${kind} #${i}: ${field}`);
    });
    assert.match(got[1]?.problem ?? '', /^type: must be one of access\.granted/);
    assert.match(got[2]?.problem ?? '', /^occurred_at: /);
    const all = raw.join('\n');
    assert.ok(!all.includes(secret), 'the credential is never logged');
    assert.ok(!all.includes(longId.slice(0, 300)), 'nor a value the gateway sent that broke a rule');
    assert.deepEqual(lines.filter((line) => line.level >= 50), [], 'no error');
  } finally {
    await watched.close();
  }
});
