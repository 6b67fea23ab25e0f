// A gateway simulator speaking docs/spec/gateway-mqtt.md, and the reference gateway for access decisions: it
// keeps a copy of its access list (on disk), decides from it at the door with the service's own decision
// function, asks the service about a credential it does not know, keeps deciding when the link is down and
// reports those decisions when it is back. It also answers unlock commands (at once, with an error, or not at
// all) and emits door activity on demand (typed commands) or at random. Run by `latchkey gateway simulate` and
// by `npm run gateway` (scripts/gateway.ts).
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import mqtt, { type MqttClient } from 'mqtt';
import { AccessCopy, type ListMessage, type PendingEvent } from './gateway-access-copy.ts';
import { STDIN_HELP } from './gateway-help.ts';

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
  /** Where the access list is kept between runs; null or absent: in memory only. */
  dataFile?: string | null;
  /** Start with the link cut (`connect` typed later joins). */
  offline?: boolean;
  /** How often to ask for what changed, renewing the copy's validity (seconds). */
  syncEverySeconds?: number;
  /** The door's clock (tests move it with the service's sandbox clock). */
  now?: () => Date;
}

export { STDIN_HELP };

/** How long the door waits for the service's answer about a credential its copy does not know. */
const ANSWER_WAIT_MS = 2000;

/**
 * Runs until `quit`/`offline` is typed or SIGINT/SIGTERM arrives, then announces itself offline and resolves.
 * A first connection that is refused (bad credentials) rejects, as the script always did.
 */
export async function simulateGateway(options: SimulatorOptions): Promise<void> {
  const { log } = options;
  const now = options.now ?? (() => new Date());
  const gatewayId = options.id;
  const base = `${options.prefix}/gateways/${gatewayId}`;
  const username = `gateway-${gatewayId}`;
  const presenceTopic = `${base}/presence`;
  const copy = new AccessCopy(options.password, options.dataFile ?? null);
  await copy.load();
  const answers = new Map<string, (answer: { granted: boolean; reason: string | null; key_id: number | null }) => void>();
  let client: MqttClient | null = null;
  let listExpired = copy.expired(now());

  /** A copy that expires (or is valid again) is announced in the presence and the log. */
  function checkExpiry(): void {
    const expired = copy.expired(now());
    if (expired === listExpired) return;
    listExpired = expired;
    log(expired ? 'access list expired: granting nothing from the copy' : 'access list valid again', { type: 'list_expired', expired });
    void client?.publishAsync(presenceTopic, presence(true), { qos: 1, retain: true }).catch(() => undefined);
  }

  const presence = (online: boolean) => JSON.stringify(online ? { online, access_list: { version: copy.version, expired: copy.expired(now()) } } : { online });

  /** Connects; resolves once connected, rejects when the first attempt is refused. */
  async function connect(): Promise<void> {
    const link = mqtt.connect(options.url, {
      clientId: username,
      username,
      password: options.password,
      will: { topic: presenceTopic, payload: Buffer.from('{"online":false}'), qos: 1, retain: true },
    });
    client = link;
    // As the contract says, on every connect, reconnections included: the presence is retained, so the broker
    // holds it for whoever subscribes later (the service after a restart, through an external broker).
    link.on('connect', () => {
      (link.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true); // answer commands without Nagle's delay
      void link.subscribeAsync([`${base}/commands`, `${base}/access/list`, `${base}/access/answer`], { qos: 1 }).then(async () => {
        await link.publishAsync(presenceTopic, presence(true), { qos: 1, retain: true });
        log(`gateway ${gatewayId} online at ${options.url}`, { type: 'online', gateway_id: gatewayId, url: options.url });
        await link.publishAsync(`${base}/access/sync`, JSON.stringify({ version: copy.version }), { qos: 1 });
        for (const event of [...copy.pendingEvents]) void report(event);
      }).catch((error: Error) => log(`presence not sent: ${error.message}`, { type: 'presence_failed', message: error.message }));
    });
    link.on('offline', () => log('connection lost; reconnecting', { type: 'connection_lost' }));
    // Before the first connection, an error is the refusal below: the caller says it once.
    let joined = false;
    link.once('connect', () => (joined = true));
    link.on('error', (error) => {
      if (joined) log(`mqtt: ${error.message}`, { type: 'mqtt_error', message: error.message });
    });
    link.on('message', (topic, payload) => void onMessage(link, topic, payload));
    await new Promise<void>((resolve, reject) => {
      link.once('connect', () => resolve());
      link.once('error', reject); // the first connection refused (bad credentials): stop
    }).catch(async (error: unknown) => {
      await link.endAsync(true);
      client = null;
      throw error;
    });
  }

  /** Cuts the link as a network failure would: no goodbye, so the broker sends the will. */
  async function disconnect(): Promise<void> {
    const link = client;
    client = null;
    if (!link) return;
    (link.stream as { destroy?: () => void }).destroy?.();
    await link.endAsync(true);
    log('link cut: deciding from the copy', { type: 'disconnected' });
  }

  const connected = () => client?.connected === true;

  async function onMessage(link: MqttClient, topic: string, payload: Buffer): Promise<void> {
    if (topic === `${base}/access/answer`) {
      const answer = JSON.parse(payload.toString()) as { id: string; granted: boolean; reason: string | null; key_id: number | null };
      answers.get(answer.id)?.(answer);
      return;
    }
    if (topic === `${base}/access/list`) {
      const message = JSON.parse(payload.toString()) as ListMessage;
      const applied = copy.apply(message);
      if (applied.outcome === 'gap') return void link.publishAsync(`${base}/access/sync`, JSON.stringify({ version: applied.version }), { qos: 1 });
      if (applied.outcome === 'applied') {
        await copy.save();
        log(`access list version ${applied.version}: ${copy.size} credentials`, { type: 'list_applied', version: applied.version, size: copy.size });
        checkExpiry();
        await link.publishAsync(`${base}/access/applied`, JSON.stringify({ version: applied.version }), { qos: 1 });
      }
      return;
    }
    const command = JSON.parse(payload.toString()) as { id: string; lock_id: number; action: string };
    log(`command ${command.action} lock ${command.lock_id} (${command.id})`, { type: 'command', command });
    if (options.answer === 'none') return;
    const result = options.answer === 'ok' ? { id: command.id, ok: true } : { id: command.id, ok: false, error: options.error };
    void link
      .publishAsync(`${base}/commands/result`, JSON.stringify(result), { qos: 1 })
      .then(() => log(`answered ${JSON.stringify(result)}`, { type: 'answered', result }));
  }

  /** Sends an event decided at the door; it stays queued (and on disk) until the broker acknowledged it. */
  async function report(event: PendingEvent): Promise<void> {
    const link = client;
    if (!link?.connected) return;
    try {
      await link.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
      copy.delivered(event.id);
      await copy.save();
    } catch {
      // Sent again on the next connection.
    }
  }

  async function door(type: string, lockId: number, keyId: number | null = null, reason: string | null = null): Promise<void> {
    const event = { id: randomUUID(), lock_id: lockId, type, occurred_at: now().toISOString(), key_id: keyId, reason };
    await client?.publishAsync(`${base}/events`, JSON.stringify(event), { qos: 1 });
    log(`sent ${type} on lock ${lockId}${keyId ? ` with key ${keyId}` : ''}`, { type: 'sent', event });
  }

  /** A credential presented at a lock's reader: decided from the copy, by the service, or refused. */
  async function swipe(lockId: number, credential: string): Promise<void> {
    const at = now();
    checkExpiry();
    const local = copy.decide(lockId, credential, at);
    if (local.decision) {
      const event = copy.queueEvent(lockId, local.decision, at);
      await copy.save();
      say(lockId, local.decision.granted, local.decision.granted ? null : local.decision.reason, local.decision.keyId, 'copy');
      void report(event);
      return;
    }
    if (connected()) {
      const id = randomUUID();
      const answer = await new Promise<{ granted: boolean; reason: string | null; key_id: number | null } | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), ANSWER_WAIT_MS);
        answers.set(id, (a) => {
          clearTimeout(timer);
          resolve(a);
        });
        void client?.publishAsync(`${base}/access/request`, JSON.stringify({ id, lock_id: lockId, credential }), { qos: 1 });
      });
      answers.delete(id);
      if (answer) return say(lockId, answer.granted, answer.reason, answer.key_id, 'online');
    }
    // Offline (or no answer in time) with nothing usable in the copy: fail secure.
    const reason = local.why === 'expired' ? 'no_access' : 'unknown_key';
    const decision = { granted: false as const, keyId: null, reason: reason as 'no_access' | 'unknown_key' };
    const event = copy.queueEvent(lockId, decision, at);
    await copy.save();
    say(lockId, false, reason, null, local.why === 'expired' ? 'expired copy' : 'offline');
    void report(event);
  }

  function say(lockId: number, granted: boolean, reason: string | null, keyId: number | null, source: string): void {
    const what = granted ? `granted (key ${keyId})` : `denied: ${reason}${keyId ? ` (key ${keyId})` : ''}`;
    log(`lock ${lockId}: ${what} [${source}]`, { type: 'decision', lock_id: lockId, granted, reason, key_id: keyId, source });
  }

  if (!options.offline) await connect();
  else log(`gateway ${gatewayId} starts with the link cut: deciding from the copy (version ${copy.version})`, { type: 'disconnected' });

  // Heartbeats, and a sync now and then: it renews the copy's validity and catches anything missed. A copy
  // that expires (or comes back) is announced in the presence.
  const heartbeat = setInterval(() => void client?.publishAsync(`${base}/heartbeat`, '{}', { qos: 0 }).catch(() => undefined), 30_000);
  const syncTimer = setInterval(() => {
    void client?.publishAsync(`${base}/access/sync`, JSON.stringify({ version: copy.version }), { qos: 1 }).catch(() => undefined);
  }, (options.syncEverySeconds ?? 600) * 1000);
  const expiryTimer = setInterval(checkExpiry, 1000);

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
      if (verb === 'disconnect') return void disconnect();
      if (verb === 'connect') return void (connected() ? undefined : connect().catch((error: Error) => log(`mqtt: ${error.message}`, { type: 'mqtt_error', message: error.message })));
      if (verb === 'status') {
        const state = { connected: connected(), version: copy.version, credentials: copy.size, valid_until: copy.validUntil?.toISOString() ?? null, pending_events: copy.pendingEvents.length };
        return log(`status ${JSON.stringify(state)}`, { type: 'status', ...state });
      }
      if (!Number.isInteger(lockId)) return log(STDIN_HELP, { type: 'help' });
      if (verb === 'swipe' && rest.length > 0) return void swipe(lockId, rest.join(' '));
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
  clearInterval(syncTimer);
  clearInterval(expiryTimer);
  if (random) clearInterval(random);
  await copy.save();
  const link = client as MqttClient | null;
  if (link?.connected) await link.publishAsync(presenceTopic, '{"online":false}', { qos: 1, retain: true });
  await link?.endAsync();
}
