// One HTTP attempt of a webhook delivery: the signed POST with undici, to an address vetted at delivery time
// (README: Webhooks: URLs), reading at most 4 KB of the answer within 10 seconds. Never throws.
import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns';
import { Agent, type Dispatcher } from 'undici';
import type { Clock } from '../../platform/clock.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { isPublicAddress } from './url-guard.ts';

const RESPONSE_DEADLINE_MS = 10_000;
const MAX_RESPONSE_BYTES = 4096;

export interface DeliveryToSend {
  id: string;
  subscription_id: string;
  event_type: string;
  payload: unknown;
  attempt: number;
  created_at: Date;
  url: string;
  secret_ciphertext: string;
}

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

/** The signature header: `t=<unix>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`. */
export function signatureHeader(secret: string, unixSeconds: number, body: string): string {
  return `t=${unixSeconds},v1=${createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex')}`;
}

export class WebhookSender {
  private readonly agent: Agent;

  constructor(
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly allowHosts: readonly string[],
  ) {
    // Every connection goes to an address vetted here, at delivery time: the name is resolved, refused if
    // any of its addresses is not public, and the socket connects to the vetted address itself, so a name
    // that resolves to a private address is never reached.
    this.agent = new Agent({
      connect: {
        timeout: RESPONSE_DEADLINE_MS,
        lookup: (hostname, options, callback) => {
          lookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
            if (error) return callback(error, '', 0);
            const allowed = this.allowHosts.includes(hostname.toLowerCase().replace(/\.$/, ''));
            if (!allowed && addresses.some((a) => !isPublicAddress(a.address))) {
              return callback(Object.assign(new Error(`${hostname} resolves to an address that is not public`), { code: 'EFORBIDDEN' }), '', 0);
            }
            const first = addresses[0];
            if (!first) return callback(new Error(`${hostname} has no address`), '', 0);
            if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof addresses) => void)(null, [first]);
            callback(null, first.address, first.family);
          });
        },
      },
      headersTimeout: RESPONSE_DEADLINE_MS,
      bodyTimeout: RESPONSE_DEADLINE_MS,
    });
  }

  private secretOf(delivery: DeliveryToSend, cache: Map<string, string>): string {
    let secret = cache.get(delivery.subscription_id);
    if (secret === undefined) {
      secret = this.secrets.open(delivery.secret_ciphertext);
      cache.set(delivery.subscription_id, secret);
    }
    return secret;
  }

  /** One HTTP attempt; never throws. `secrets` caches decrypted signing secrets by subscription. */
  async attempt(delivery: DeliveryToSend, secrets = new Map<string, string>()): Promise<AttemptResult> {
    const body = JSON.stringify({
      id: delivery.id,
      type: delivery.event_type,
      created_at: delivery.created_at.toISOString(),
      data: delivery.payload,
    });
    const t = Math.floor(this.clock.now().getTime() / 1000);
    try {
      const status = await this.post(delivery.url, {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1.0',
        'x-service-event': delivery.event_type,
        'x-service-delivery': delivery.id,
        'x-service-timestamp': String(t),
        'x-service-signature': signatureHeader(this.secretOf(delivery, secrets), t, body),
      }, body);
      const ok = status >= 200 && status < 300;
      return { ok, status, error: ok ? null : `HTTP ${status}` };
    } catch (error) {
      const message = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
      return { ok: false, status: null, error: message.slice(0, 500) };
    }
  }

  /**
   * The POST through the agent's own dispatch: the status once the answer has ended or its first 4 KB are
   * read (the rest is dropped with the connection). The 10-second deadline runs on real time. (undici's
   * request() costs a body stream, an async iterator and an abort signal per attempt; this, a timer.)
   */
  private post(url: string, headers: Record<string, string>, body: string): Promise<number> {
    const { origin, path } = this.target(url);
    return new Promise<number>((resolve, reject) => {
      let controller: Dispatcher.DispatchController | null = null;
      let timedOut: Error | null = null;
      let status = 0;
      let read = 0;
      let settled = false;
      const settle = (error: Error | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(status);
      };
      const timer = setTimeout(() => {
        // Before the request reaches a socket there is nothing to abort yet: it is aborted as it starts.
        timedOut = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
        controller?.abort(timedOut);
        settle(timedOut);
      }, RESPONSE_DEADLINE_MS);
      try {
        this.agent.dispatch(
          { origin, path, method: 'POST', headers, body },
          {
            onRequestStart: (c) => {
              controller = c;
              if (timedOut) c.abort(timedOut);
            },
            onResponseStart: (_c, statusCode) => {
              if (statusCode >= 200 || status === 0) status = statusCode; // a 1xx is replaced by the final status
            },
            onResponseData: (c, chunk) => {
              read += chunk.length;
              if (read < MAX_RESPONSE_BYTES) return;
              settle(null);
              c.abort(new Error('answer longer than 4 KB: the rest is not read'));
            },
            onResponseEnd: () => settle(null),
            onResponseError: (_c, error) => settle(error),
          },
        );
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** Origin and path of a subscription URL, parsed once (a handful of URLs serve many deliveries). */
  private readonly targets = new Map<string, { origin: string; path: string }>();
  private target(url: string): { origin: string; path: string } {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      if (this.targets.size >= 1000) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }

  /** Closes the connections; call once no attempt is in flight. */
  close(): Promise<void> {
    return this.agent.close();
  }
}
