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
    this.transport = nodemailer.createTransport(smtpUrl);
  }

  async send(message: OutgoingMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.body });
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
      signal: AbortSignal.timeout(10_000),
      redirect: 'manual',
    });
    await response.body?.cancel();
    if (response.status < 200 || response.status >= 300) throw new Error(`SMS provider answered ${response.status}`);
  }
}

class Unconfigured implements Notifier {
  constructor(private readonly variable: string) {}

  async send(): Promise<void> {
    throw new Error(`${this.variable} is not configured`);
  }
}

/** One notifier per channel, chosen from the configuration. */
export function notifierFor(config: Config, db: Database, clock: Clock): Record<Channel, Notifier> {
  if (config.sandbox) {
    const sandbox = new SandboxNotifier(db, clock);
    return { sms: sandbox, email: sandbox };
  }
  return {
    email: config.smtpUrl ? new SmtpNotifier(config.smtpUrl, config.smtpFrom) : new Unconfigured('SMTP_URL'),
    sms: config.smsUrl ? new HttpSmsNotifier(config.smsUrl, config.smsToken, config.smsFrom) : new Unconfigured('SMS_URL'),
  };
}
