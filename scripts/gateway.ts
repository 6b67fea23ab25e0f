// npm run gateway -- --id <gateway id> --password <password> [options]
// A gateway simulator speaking docs/spec/gateway-mqtt.md: it stays online with heartbeats, answers unlock
// commands (at once, with an error, or not at all), and emits door activity on demand (typed commands)
// or at random, so the whole system can be seen working end to end in the sandbox.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import mqtt from 'mqtt';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'mqtt://localhost:1884' },
    id: { type: 'string' },
    password: { type: 'string' },
    prefix: { type: 'string', default: 'latchkey/v1' },
    answer: { type: 'string', default: 'ok' }, // ok | error | none
    error: { type: 'string', default: 'device_error' }, // device_missing | device_error
    locks: { type: 'string', default: '' }, // lock ids for random activity, comma-separated
    key: { type: 'string' }, // key id used by random activity
    random: { type: 'string', default: '0' }, // random door events a minute
    help: { type: 'boolean', default: false },
  },
});

const usage = `npm run gateway -- --id <gateway id> --password <password> [--url mqtt://localhost:1884]
  [--answer ok|error|none] [--error device_missing|device_error] [--locks 1,2 --key 7 --random 6]
Type on stdin:  grant <lock> [key] | deny <lock> [key] [reason] | close <lock> | left-open <lock> | offline | quit`;

if (values.help || !values.id || !values.password) {
  console.log(usage);
  process.exit(values.help ? 0 : 1);
}

const gatewayId = values.id;
const base = `${values.prefix}/gateways/${gatewayId}`;
const username = `gateway-${gatewayId}`;
const presence = `${base}/presence`;
const client = mqtt.connect(values.url, {
  clientId: username,
  username,
  password: values.password,
  will: { topic: presence, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
});
// As the contract says, on every connect, reconnections included: the presence is retained, so the broker
// holds it for whoever subscribes later (the service after a restart, through an external broker).
client.on('connect', () => {
  (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true); // answer commands without Nagle's delay
  void client.publishAsync(presence, '{"online":true}', { qos: 1, retain: true }).then(
    () => console.log(`gateway ${gatewayId} online at ${values.url}`),
    (error: Error) => console.log(`presence not sent: ${error.message}`),
  );
});
client.on('offline', () => console.log('connection lost; reconnecting'));
client.on('error', (error) => console.log(`mqtt: ${error.message}`));
await new Promise<void>((resolve, reject) => {
  client.once('connect', () => resolve());
  client.once('error', reject); // the first connection refused (bad credentials): stop, as before
});

const heartbeat = setInterval(() => void client.publishAsync(`${base}/heartbeat`, '{}', { qos: 0 }), 30_000);

async function door(type: string, lockId: number, keyId: number | null = null, reason: string | null = null): Promise<void> {
  const event = { id: randomUUID(), lock_id: lockId, type, occurred_at: new Date().toISOString(), key_id: keyId, reason };
  await client.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
  console.log(`sent ${type} on lock ${lockId}${keyId ? ` with key ${keyId}` : ''}`);
}

client.on('message', (_topic, payload) => {
  const command = JSON.parse(payload.toString()) as { id: string; lock_id: number; action: string };
  console.log(`command ${command.action} lock ${command.lock_id} (${command.id})`);
  if (values.answer === 'none') return;
  const result = values.answer === 'ok' ? { id: command.id, ok: true } : { id: command.id, ok: false, error: values.error };
  void client.publishAsync(`${base}/commands/result`, JSON.stringify(result), { qos: 1 }).then(() => console.log(`answered ${JSON.stringify(result)}`));
});
await client.subscribeAsync(`${base}/commands`, { qos: 1 });

const locks = values.locks.split(',').filter(Boolean).map(Number);
const perMinute = Number(values.random);
const random =
  perMinute > 0 && locks.length > 0
    ? setInterval(() => {
        const lock = locks[Math.floor(Math.random() * locks.length)] as number;
        if (Math.random() < 0.8) {
          void door('access.granted', lock, values.key ? Number(values.key) : null).then(() => setTimeout(() => void door('door.closed', lock), 3000));
        } else {
          void door('access.denied', lock, values.key ? Number(values.key) : null, 'no_access');
        }
      }, 60_000 / perMinute)
    : null;

async function stop(): Promise<void> {
  clearInterval(heartbeat);
  if (random) clearInterval(random);
  await client.publishAsync(presence, '{"online":false}', { qos: 1, retain: true });
  await client.endAsync();
  process.exit(0);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const [verb, lock, ...rest] = line.trim().split(/\s+/);
  const lockId = Number(lock);
  if (verb === 'quit' || verb === 'offline') return void stop();
  if (!Number.isInteger(lockId)) return console.log(usage);
  if (verb === 'grant') return void door('access.granted', lockId, rest[0] ? Number(rest[0]) : null);
  if (verb === 'deny') return void door('access.denied', lockId, rest[0] ? Number(rest[0]) : null, rest[1] ?? null);
  if (verb === 'close') return void door('door.closed', lockId);
  if (verb === 'left-open') return void door('door.left_open', lockId);
  console.log(usage);
});
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
