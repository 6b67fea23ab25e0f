// A gateway simulator speaking docs/spec/gateway-mqtt.md: it stays online with heartbeats, answers unlock
// commands (at once, with an error, or not at all), and emits door activity on demand (typed commands) or at
// random, so the whole system can be seen working end to end in the sandbox. Run by `latchkey gateway
// simulate` and by `npm run gateway` (scripts/gateway.ts).
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import mqtt from 'mqtt';

export interface SimulatorOptions {
  /** The broker, as `mqtt.url` of the operator API's gateway. */
  url: string;
  id: string;
  password: string;
  prefix: string;
  /** How unlock commands are answered: ok, error (with `error`) or none (never: the command times out). */
  answer: 'ok' | 'error' | 'none';
  error: string;
  /** Locks for random activity. */
  locks: number[];
  /** The key id random activity uses (null: an unknown key). */
  key: number | null;
  /** Random door events a minute (0: none). */
  randomPerMinute: number;
  /** Typed commands are read from here. */
  input: Readable;
  /** Every line of the log, with the same fact as a record (for --json). */
  log: (line: string, record: Record<string, unknown>) => void;
}

export const STDIN_HELP = 'Type on stdin:  grant <lock> [key] | deny <lock> [key] [reason] | close <lock> | left-open <lock> | offline | quit';

/**
 * Connects and runs until `quit`/`offline` is typed or SIGINT/SIGTERM arrives, then announces itself offline
 * and resolves. A first connection that is refused (bad credentials) rejects, as the script always did.
 */
export async function simulateGateway(options: SimulatorOptions): Promise<void> {
  const { log } = options;
  const gatewayId = options.id;
  const base = `${options.prefix}/gateways/${gatewayId}`;
  const username = `gateway-${gatewayId}`;
  const presence = `${base}/presence`;
  const client = mqtt.connect(options.url, {
    clientId: username,
    username,
    password: options.password,
    will: { topic: presence, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
  });
  // As the contract says, on every connect, reconnections included: the presence is retained, so the broker
  // holds it for whoever subscribes later (the service after a restart, through an external broker).
  client.on('connect', () => {
    (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true); // answer commands without Nagle's delay
    void client.publishAsync(presence, '{"online":true}', { qos: 1, retain: true }).then(
      () => log(`gateway ${gatewayId} online at ${options.url}`, { type: 'online', gateway_id: gatewayId, url: options.url }),
      (error: Error) => log(`presence not sent: ${error.message}`, { type: 'presence_failed', message: error.message }),
    );
  });
  client.on('offline', () => log('connection lost; reconnecting', { type: 'connection_lost' }));
  client.on('error', (error) => log(`mqtt: ${error.message}`, { type: 'mqtt_error', message: error.message }));
  await new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject); // the first connection refused (bad credentials): stop
  }).catch(async (error: unknown) => {
    await client.endAsync(true);
    throw error;
  });

  const heartbeat = setInterval(() => void client.publishAsync(`${base}/heartbeat`, '{}', { qos: 0 }), 30_000);

  async function door(type: string, lockId: number, keyId: number | null = null, reason: string | null = null): Promise<void> {
    const event = { id: randomUUID(), lock_id: lockId, type, occurred_at: new Date().toISOString(), key_id: keyId, reason };
    await client.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
    log(`sent ${type} on lock ${lockId}${keyId ? ` with key ${keyId}` : ''}`, { type: 'sent', event });
  }

  client.on('message', (_topic, payload) => {
    const command = JSON.parse(payload.toString()) as { id: string; lock_id: number; action: string };
    log(`command ${command.action} lock ${command.lock_id} (${command.id})`, { type: 'command', command });
    if (options.answer === 'none') return;
    const result = options.answer === 'ok' ? { id: command.id, ok: true } : { id: command.id, ok: false, error: options.error };
    void client
      .publishAsync(`${base}/commands/result`, JSON.stringify(result), { qos: 1 })
      .then(() => log(`answered ${JSON.stringify(result)}`, { type: 'answered', result }));
  });
  await client.subscribeAsync(`${base}/commands`, { qos: 1 });

  const { locks, randomPerMinute } = options;
  const random =
    randomPerMinute > 0 && locks.length > 0
      ? setInterval(() => {
          const lock = locks[Math.floor(Math.random() * locks.length)] as number;
          if (Math.random() < 0.8) {
            void door('access.granted', lock, options.key).then(() => setTimeout(() => void door('door.closed', lock), 3000));
          } else {
            void door('access.denied', lock, options.key, 'no_access');
          }
        }, 60_000 / randomPerMinute)
      : null;

  const typed = createInterface({ input: options.input });
  let stop = () => {};
  await new Promise<void>((resolve) => {
    stop = () => resolve();
    process.on('SIGINT', stop).on('SIGTERM', stop);
    typed.on('line', (line) => {
      const [verb, lock, ...rest] = line.trim().split(/\s+/);
      const lockId = Number(lock);
      if (verb === 'quit' || verb === 'offline') return stop();
      if (!Number.isInteger(lockId)) return log(STDIN_HELP, { type: 'help' });
      if (verb === 'grant') return void door('access.granted', lockId, rest[0] ? Number(rest[0]) : null);
      if (verb === 'deny') return void door('access.denied', lockId, rest[0] ? Number(rest[0]) : null, rest[1] ?? null);
      if (verb === 'close') return void door('door.closed', lockId);
      if (verb === 'left-open') return void door('door.left_open', lockId);
      log(STDIN_HELP, { type: 'help' });
    });
  });

  process.off('SIGINT', stop).off('SIGTERM', stop);
  typed.close();
  clearInterval(heartbeat);
  if (random) clearInterval(random);
  await client.publishAsync(presence, '{"online":false}', { qos: 1, retain: true });
  await client.endAsync();
}
