// The key holder's page (issue 23): a tap on Open to the door confirmed, as the page sees it, without a browser.
// This process is the holders' phones and the gateway. Phones are software passkeys (test/helpers/passkey.ts:
// a P-256 key from node:crypto, the registration and assertion responses @simplewebauthn/server verifies), each
// bound to its own phone key through the real path: POST /v1/keys sends the setup link by e-mail (an SMTP
// receiver in this process; SANDBOX=false), the phone registers over it. The gateway answers every unlock at
// once over MQTT, as bench/devices.ts does. A tap is what holder.ts does for Open: POST /my-key/challenge, the
// assertion, POST /my-key/open, then GET /my-key/commands/{id} until it leaves `published`.
//
// Two passes of sequential taps, each from the challenge request to `confirmed`:
//   page:  polled as the page polls (src/modules/holder/web/follow-schedule.ts: at once, then every 50 ms for 2 s, then 250 ms),
//          so the figure is what the holder sees;
//   tight: polled every millisecond, so the figure is the service's and the gateway's own time.
// Limits: the service's per-key (20 taps a minute) and per-address (60 challenges a minute) limits stay as
// they are; the taps go round the keys and each comes from an address of its own (X-Forwarded-For, TRUST_PROXY).
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import mqtt from 'mqtt';
import { SMTPServer } from 'smtp-server';
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { commandsTopic, gatewayTopicPrefix } from '../src/modules/devices/topics.ts';
import { followDelayMs } from '../src/modules/holder/web/follow-schedule.ts';
import { SoftwarePasskey } from '../test/helpers/passkey.ts';
import { admin, percentile, pin, PINNED, startBenchService, stop, until } from './common.ts';

/** Taps measured per pass (BENCH_HOLDER_TAPS, default 200). */
const TAPS = Number(process.env.BENCH_HOLDER_TAPS ?? 200);
/** Keys (phones) per pass: each takes TAPS / KEYS taps, under the service's 20 a minute per key. */
const KEYS_PER_PASS = 20;
const WARM_UP = 20;
/** Where the PUBLIC_URL points: the passkeys' origin and RP id (nothing needs to listen there). */
const PUBLIC_URL = 'http://localhost:8080';

export interface HolderFigures {
  label: string;
  /** When and where, for RESULTS.md. */
  machine: string;
  taps: number;
  keys: number;
  page: { p50: number; p99: number; max: number; firstPoll: number };
  tight: { p50: number; p99: number; max: number };
  /** The parts of a tight tap, p50 / p99: the challenge round trip, the open round trip, open answered → confirmed seen. */
  parts: { challenge: [number, number]; open: [number, number]; confirm: [number, number] };
}

interface Phone {
  passkey: SoftwarePasskey;
  keyId: number;
}

/** A receiver of the service's e-mail: the setup link of each message, by recipient. */
async function mailbox(): Promise<{ url: string; links: Map<string, string>; close(): Promise<void> }> {
  const links = new Map<string, string>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      stream.on('end', () => {
        // Quoted-printable soft line breaks undone, so the link reads as one line.
        const link = /https?:\/\/[^\s"<>]+\/activate\/[A-Za-z0-9_-]+/.exec(raw.replace(/=\r\n/g, ''))?.[0];
        for (const rcpt of session.envelope.rcptTo) if (link) links.set(rcpt.address, link);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, links, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let addresses = 0;
/** An address of its own for each request sequence (198.18.0.0/15, the range for benchmarks). */
const nextAddress = () => {
  addresses++;
  return `198.18.${(addresses >> 8) & 255}.${addresses & 255}`;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function holderRuns(label: string, env: Record<string, string>): Promise<HolderFigures> {
  const mail = await mailbox();
  const server = await startBenchService({ ...env, SANDBOX: 'false', TRUST_PROXY: 'true', PUBLIC_URL, SMTP_URL: mail.url, SMTP_FROM: 'Latchkey <keys@bench.test>' });
  let gateway: mqtt.MqttClient | null = null;
  try {
    const json = async <T>(method: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<T> => {
      const res = await fetch(server.url + path, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    };

    // The site: one door on a gateway, a group that opens it at any time, and API keys that issue phone keys
    // (30 issued a minute per API key).
    const account = await admin<{ id: number; root_location: { id: number } }>(server.url, 'POST', '/admin/v1/accounts', { name: 'Holders' });
    const location = account.root_location.id;
    await admin(server.url, 'POST', '/admin/v1/security_groups', { location_id: location, code: 'staff', title: 'Staff' });
    const gw = await admin<{ id: number; mqtt: { url: string; client_id: string; username: string; password: string } }>(server.url, 'POST', '/admin/v1/gateways', { location_id: location, name: 'gw' });
    const lock = await admin<{ id: number }>(server.url, 'POST', '/admin/v1/locks', { location_id: location, name: 'Front door', security_groups: ['staff'], gateway_id: gw.id });
    const keyCount = KEYS_PER_PASS * 2;
    const issuers: string[] = [];
    for (let i = 0; i < Math.ceil(keyCount / 25); i++) {
      issuers.push((await admin<{ token: string }>(server.url, 'POST', '/admin/v1/api_keys', { location_id: location, name: `desk ${i}`, scopes: ['people:write', 'keys:write'] })).token);
    }

    // The gateway: answers each command at once.
    gateway = await mqtt.connectAsync(gw.mqtt.url.replace('localhost', '127.0.0.1'), { clientId: gw.mqtt.client_id, username: gw.mqtt.username, password: gw.mqtt.password });
    (gateway.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    const door = gateway;
    door.on('message', (_topic, payload) => {
      const { id } = JSON.parse(payload.toString()) as { id: string };
      void door.publishAsync(`${gatewayTopicPrefix(gw.id)}commands/result`, JSON.stringify({ id, ok: true }), { qos: 1 });
    });
    await door.subscribeAsync(commandsTopic(gw.id), { qos: 1 });
    await door.publishAsync(`${gatewayTopicPrefix(gw.id)}presence`, '{"online":true}', { qos: 1, retain: true });

    // The phones: a person and a phone key each, the setup link by e-mail, a passkey registered over it.
    const emails: string[] = [];
    for (let i = 0; i < keyCount; i++) {
      const token = issuers[Math.floor(i / 25)] as string;
      const headers = { authorization: `Bearer ${token}` };
      const email = `holder${i}@bench.test`;
      const person = await json<{ id: string }>('POST', '/v1/people', { name: `Holder ${i}`, email }, headers);
      await json('POST', '/v1/keys', { person_id: person.id, security_groups: ['staff'], channel: 'email' }, headers);
      emails.push(email);
    }
    await until(() => emails.every((email) => mail.links.has(email)), 30_000);
    const phones: Phone[] = [];
    for (const email of emails) {
      const link = mail.links.get(email);
      if (!link) throw new Error(`no setup link reached ${email}`);
      const path = new URL(link).pathname;
      const passkey = new SoftwarePasskey(new URL(link).origin);
      const ip = { 'x-forwarded-for': nextAddress() };
      const options = await json<PublicKeyCredentialCreationOptionsJSON>('POST', `${path}/passkey/options`, {}, ip);
      const made = await json<{ key_id: number }>('POST', `${path}/passkey`, { response: passkey.register(options) }, ip);
      phones.push({ passkey, keyId: made.key_id });
    }

    /** One tap on Open; the times from the challenge request (ms). */
    const tap = async (phone: Phone, poll: 'page' | 'tight') => {
      const ip = { 'x-forwarded-for': nextAddress() };
      const started = performance.now();
      const options = await json<PublicKeyCredentialRequestOptionsJSON>('POST', '/my-key/challenge', {}, ip);
      const challenged = performance.now();
      const answer = await json<{ refused: string | null; command: { id: string; status: string } | null }>(
        'POST',
        '/my-key/open',
        { response: phone.passkey.assert(options), lock_id: lock.id },
        ip,
      );
      const opened = performance.now();
      if (answer.refused || !answer.command) throw new Error(`the tap was refused: ${answer.refused}`);
      let status = answer.command.status;
      let polls = 0;
      while (status === 'published') {
        if (polls > 0) await sleep(poll === 'page' ? followDelayMs(polls) : 1);
        polls++;
        status = (await json<{ status: string }>('GET', `/my-key/commands/${encodeURIComponent(answer.command.id)}`, undefined, ip)).status;
      }
      if (status !== 'confirmed') throw new Error(`the command ended ${status}`);
      const confirmed = performance.now();
      return { total: confirmed - started, challenge: challenged - started, open: opened - challenged, confirm: confirmed - opened, polls };
    };

    // The service on core 0 and this process on core 1 from here on (pinned mode).
    if (PINNED) {
      pin(server.child.pid as number, 0);
      pin(process.pid, 1);
    }
    try {
      // A warm-up on the first pass's keys (one tap each), then the passes, each on keys of its own.
      for (let i = 0; i < WARM_UP; i++) await tap(phones[i % KEYS_PER_PASS] as Phone, 'tight');
      const page: Awaited<ReturnType<typeof tap>>[] = [];
      for (let i = 0; i < TAPS; i++) page.push(await tap(phones[i % KEYS_PER_PASS] as Phone, 'page'));
      const tight: Awaited<ReturnType<typeof tap>>[] = [];
      for (let i = 0; i < TAPS; i++) tight.push(await tap(phones[KEYS_PER_PASS + (i % KEYS_PER_PASS)] as Phone, 'tight'));

      const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
      const round = (ms: number) => Math.round(ms);
      const pair = (values: number[]): [number, number] => {
        const s = sorted(values);
        return [Math.round(percentile(s, 50) * 10) / 10, Math.round(percentile(s, 99) * 10) / 10];
      };
      const pageTimes = sorted(page.map((t) => t.total));
      const tightTimes = sorted(tight.map((t) => t.total));
      const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
      const when = new Date().toISOString().replace(/:\d\d\.\d+Z$/, ' UTC').replace('T', ' ');
      const load = os.loadavg()[0]?.toFixed(1) ?? '?';
      return {
        label,
        machine: `\`BENCH_ONLY=holder\`, ${when}, ${os.cpus().length} cores (${cpu}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, load average ${load} at the end, ${PINNED ? 'pinned mode (the service on core 0, this process on core 1; PostgreSQL not pinned)' : 'not pinned'}`,
        taps: TAPS,
        keys: KEYS_PER_PASS,
        page: { p50: round(percentile(pageTimes, 50)), p99: round(percentile(pageTimes, 99)), max: round(pageTimes.at(-1) ?? 0), firstPoll: page.filter((t) => t.polls <= 1).length },
        tight: { p50: round(percentile(tightTimes, 50)), p99: round(percentile(tightTimes, 99)), max: round(tightTimes.at(-1) ?? 0) },
        parts: { challenge: pair(tight.map((t) => t.challenge)), open: pair(tight.map((t) => t.open)), confirm: pair(tight.map((t) => t.confirm)) },
      };
    } finally {
      if (PINNED) pin(process.pid, '0-1');
    }
  } finally {
    await gateway?.endAsync(true).catch(() => undefined);
    await stop(server);
    await mail.close();
  }
}

export const HOLDER_NOTES = [
  'This process plays the phones and the gateway. Each phone is a software passkey (`test/helpers/passkey.ts`: a',
  'P-256 key from node:crypto, the registration and assertion responses `@simplewebauthn/server` verifies) bound',
  'to a phone key of its own through the real path: `POST /v1/keys` e-mails the setup link (an SMTP receiver in this',
  'process, SANDBOX=false), the phone registers over it. The gateway answers each unlock at once over MQTT. A tap is',
  "what the page's Open does: `POST /my-key/challenge`, the assertion (signed in well under a millisecond here; a",
  "phone's screen lock is not in the figure), `POST /my-key/open`, then `GET /my-key/commands/{id}` until the",
  'command leaves `published`. Sequential taps, round the keys (under the 20 taps a minute per key), each from an',
  'address of its own (X-Forwarded-For), after 20 of warm-up. "As the page sees it" polls as',
  '`src/modules/holder/web/holder.ts` does (at once, then every 50 ms for 2 s, then every 250 ms); "polling every 1 ms" shows the time the',
  'service and the gateway take.',
].join('\n');

export function formatHolder(runs: HolderFigures[]): string {
  const cells = (f: (run: HolderFigures) => string) => runs.map(f).join(' | ');
  return [
    `| measure | ${cells((r) => r.label)} | target |`,
    `|---|${runs.map(() => '---:|').join('')}---|`,
    `| taps measured (sequential, ${runs[0]?.keys ?? KEYS_PER_PASS} keys) | ${cells((r) => String(r.taps))} | – |`,
    `| tap → \`confirmed\` as the page sees it (polls at once, then every 50 ms), p50 | ${cells((r) => `${r.page.p50} ms`)} | – |`,
    `| tap → \`confirmed\` as the page sees it, p99 | ${cells((r) => `**${r.page.p99} ms**`)} | < 300 ms (${runs.every((r) => r.page.p99 < 300) ? 'met' : 'missed'}) |`,
    `| tap → \`confirmed\` as the page sees it, max | ${cells((r) => `${r.page.max} ms`)} | – |`,
    `| taps the page saw confirmed at its first poll | ${cells((r) => `${r.page.firstPoll} / ${r.taps}`)} | – |`,
    `| tap → \`confirmed\`, polling every 1 ms, p50 / p99 | ${cells((r) => `${r.tight.p50} / ${r.tight.p99} ms`)} | – |`,
    `| its parts, p50 / p99: \`POST /my-key/challenge\` | ${cells((r) => `${r.parts.challenge[0]} / ${r.parts.challenge[1]} ms`)} | – |`,
    `| \`POST /my-key/open\` (assertion verified, decision, command published) | ${cells((r) => `${r.parts.open[0]} / ${r.parts.open[1]} ms`)} | – |`,
    `| open answered → \`confirmed\` read (gateway round trip, polling) | ${cells((r) => `${r.parts.confirm[0]} / ${r.parts.confirm[1]} ms`)} | – |`,
  ].join('\n');
}
