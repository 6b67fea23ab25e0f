// One HTTP attempt of a webhook delivery: the signed POST with undici, to an address vetted at delivery time
// (README: Webhooks: URLs), reading at most 4 KB of the answer within 10 seconds. Never throws.
import { createHmac } from 'node:crypto';
import { lookup } from 'node:dns';
import { Agent, request } from 'undici';
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
    // The 10-second deadline runs on real time. A timer cleared when the attempt ends, rather than
    // AbortSignal.timeout, whose timer and signal stay alive the full 10 seconds after every attempt.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), RESPONSE_DEADLINE_MS);
    try {
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Service-Webhooks/1.0',
          'x-service-event': delivery.event_type,
          'x-service-delivery': delivery.id,
          'x-service-timestamp': String(t),
          'x-service-signature': signatureHeader(this.secretOf(delivery, secrets), t, body),
        },
        body,
        signal: deadline.signal,
      });
      await readAtMost(response.body, MAX_RESPONSE_BYTES);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return { ok, status: response.statusCode, error: ok ? null : `HTTP ${response.statusCode}` };
    } catch (error) {
      const message = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
      return { ok: false, status: null, error: message.slice(0, 500) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connections; call once no attempt is in flight. */
  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Reads at most `limit` bytes of a response body, then drops the rest. */
async function readAtMost(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<void> {
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (read >= limit) break;
  }
  body.destroy();
}
