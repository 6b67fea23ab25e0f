// One HTTP attempt of a webhook delivery: the signed POST with undici, to an address vetted at delivery time
// (README: Webhooks: URLs), reading at most 4 KB of the answer within 10 seconds. Never throws.
import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns';
import type { Agent, Dispatcher } from 'undici';
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
  /** undici and the agent, loaded at the first attempt: loading undici took about a tenth of a second of every start. */
  private agent: Promise<Agent> | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly secrets: SecretBox,
    private readonly allowHosts: readonly string[],
  ) {}

  private dispatcher(): Promise<Agent> {
    // Every connection goes to an address vetted here, at delivery time: the name is resolved, refused if
    // any of its addresses is not public, and the socket connects to the vetted address itself, so a name
    // that resolves to a private address is never reached.
    this.agent ??= import('undici').then(
      ({ Agent }) =>
        new Agent({
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
        }),
    );
    return this.agent;
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
    // A purged payload is never claimed (delivery-store.ts); should one get here, nothing is sent.
    if (delivery.payload === null || delivery.payload === undefined) return { ok: false, status: null, error: 'payload purged: not sent' };
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
  private async post(url: string, headers: Record<string, string>, body: string): Promise<number> {
    const { origin, path } = this.target(url);
    const agent = await this.dispatcher();
    return new Promise<number>((resolve, reject) => {
      const handler = new PostHandler(resolve, reject);
      try {
        agent.dispatch({ origin, path, method: 'POST', headers, body }, handler);
      } catch (error) {
        handler.settle(error instanceof Error ? error : new Error(String(error)));
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
  async close(): Promise<void> {
    if (this.agent) await (await this.agent).close();
  }
}

/**
 * One POST's answer: its status once it has ended, its first 4 KB are read, or the 10-second deadline passed
 * (or the body failed) after the final status arrived; without a final status by the deadline, a time-out.
 */
class PostHandler implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  private timedOut: Error | null = null;
  private status = 0;
  private read = 0;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolve: (status: number) => void,
    private readonly reject: (error: Error) => void,
  ) {
    this.timer = setTimeout(() => this.timeOut(), RESPONSE_DEADLINE_MS);
  }

  settle(error: Error | null): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    if (error) this.reject(error);
    else this.resolve(this.status);
  }

  /** The final status (not a 1xx) has arrived: the receiver has answered, whatever becomes of the body. */
  private get answered(): boolean {
    return this.status >= 200;
  }

  private timeOut(): void {
    // Before the request reaches a socket there is nothing to abort yet: it is aborted as it starts.
    this.timedOut = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    this.controller?.abort(this.timedOut);
    // A status line and headers that arrived within the 10 seconds are the answer (spec: "respond with any
    // 2xx within 10 seconds"): a body that then stalls is not read to its end, and the status stands.
    this.settle(this.answered ? null : this.timedOut);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.timedOut) controller.abort(this.timedOut);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    if (statusCode >= 200 || this.status === 0) this.status = statusCode; // a 1xx is replaced by the final status
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.read += chunk.length;
    if (this.read < MAX_RESPONSE_BYTES) return;
    this.settle(null);
    controller.abort(new Error('answer longer than 4 KB: the rest is not read'));
  }

  onResponseEnd(): void {
    this.settle(null);
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    // Likewise a body cut off (a reset, undici's body timeout) after the final status: the status stands.
    this.settle(this.answered ? null : error);
  }
}
