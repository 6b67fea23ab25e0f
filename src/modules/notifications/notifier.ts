// The notifier port and its adapters: the sandbox outbox (SANDBOX=true), e-mail over SMTP (nodemailer)
// and SMS through an HTTP provider (a JSON POST with a bearer credential).
import nodemailer, { type Transporter } from 'nodemailer';
import type { Config } from '../../config.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { insertOutboxEntry } from './store.ts';

export type Channel = 'sms' | 'email';

export interface OutgoingMessage {
  channel: Channel;
  /** E.164 phone for SMS, the address as stored for e-mail. */
  to: string;
  subject: string;
  body: string;
  link: string | null;
}

/**
 * The longest one send may take, per channel: the SMS provider's whole request, the e-mail's whole SMTP
 * conversation (connecting, greeting, every command), each aborted when it runs over. The message queue
 * starts a send only while its lease outlasts this (message-queue.ts), so that no message is still being sent
 * when its lease runs out and another instance may claim it again.
 */
export const SEND_TIMEOUT_MS: Readonly<Record<Channel, number>> = { sms: 10_000, email: 30_000 };

/**
 * nodemailer's own timeouts (defaults: 2 minutes to connect, 30 s for the greeting, 10 minutes of silence). The
 * silence allowed is longer than the wait for the greeting, so that a server that accepts and says nothing is told
 * as such (`Greeting never received`), not as a bare `Timeout`: with both at 10 s, whichever timer ran first named it.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 15_000, dnsTimeout: 10_000 };

export interface Notifier {
  /** Sends one message; throws when the provider refuses or cannot be reached (the caller retries). */
  send(message: OutgoingMessage): Promise<void>;
}

class SandboxNotifier implements Notifier {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  async send(message: OutgoingMessage): Promise<void> {
    await insertOutboxEntry(this.db, message, this.clock.now());
  }
}

class SmtpNotifier implements Notifier {
  private readonly transport: Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
  ) {
    // Settings in the URL's query (`?socketTimeout=…`) still win over these.
    this.transport = nodemailer.createTransport({ url: smtpUrl, ...SMTP_TIMEOUTS });
  }

  async send(message: OutgoingMessage): Promise<void> {
    // The signal bounds the whole conversation: nodemailer closes the connection when it fires.
    const signal = AbortSignal.timeout(SEND_TIMEOUT_MS.email);
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.body, signal });
  }
}

/**
 * SMS provider adapter: `POST {SMS_URL}` with `Authorization: Bearer {SMS_TOKEN}` and the JSON body
 * `{ "from": SMS_FROM, "to": "+E164", "text": "…" }`; any 2xx is success.
 */
class HttpSmsNotifier implements Notifier {
  constructor(
    private readonly url: string,
    private readonly token: string | null,
    private readonly from: string,
  ) {}

  async send(message: OutgoingMessage): Promise<void> {
    const response = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
      },
      body: JSON.stringify({ from: this.from, to: message.to, text: message.body }),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS.sms),
      redirect: 'manual',
    });
    await response.body?.cancel();
    if (response.status < 200 || response.status >= 300) throw new Error(`SMS provider answered ${response.status}`);
  }
}

/**
 * One notifier per channel, chosen from the configuration; a channel without one (no SMTP_URL, no SMS_URL, outside
 * the sandbox) is absent: its messages stay queued, never attempted, until a restart configures it.
 */
export function notifierFor(config: Config, db: Database, clock: Clock): Partial<Record<Channel, Notifier>> {
  if (config.sandbox) {
    const sandbox = new SandboxNotifier(db, clock);
    return { sms: sandbox, email: sandbox };
  }
  return {
    ...(config.smtpUrl ? { email: new SmtpNotifier(config.smtpUrl, config.smtpFrom) } : {}),
    ...(config.smsUrl ? { sms: new HttpSmsNotifier(config.smsUrl, config.smsToken, config.smsFrom) } : {}),
  };
}
