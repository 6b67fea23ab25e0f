// latchkey webhooks listen: reads GET /v1/webhooks/listen (server-sent events) and forwards each delivery, its
// body and signature headers unchanged, as a POST to a local URL, printing one line per event. The stream is
// opened again with backoff when it drops; Ctrl-C ends it. Loaded by that command only (not with the CLI).
import { LatchkeyError } from '@latchkey/sdk';

export interface ListenOptions {
  /** The service's root URL (no /v1). */
  url: string;
  apiKey: string;
  forwardTo: string;
  events: readonly string[];
  /** Print the signing secret and end, forwarding nothing. */
  printSecret: boolean;
  json: boolean;
  out(line: string): void;
  err(line: string): void;
  /** Ends the run (Ctrl-C). */
  signal: AbortSignal;
}

interface Ready {
  secret: string;
  events: string[];
  location_id: number;
  heartbeat_seconds?: number;
}

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** How long the local receiver has to answer (as the service gives a real receiver). */
const FORWARD_DEADLINE_MS = 10_000;
/** Without a byte for this long (heartbeats come every 15 s) the stream is taken for dead and opened again. */
const SILENCE_MS = 45_000;
const BACKOFF_MS = [1000, 2000, 5000, 10_000, 20_000, 30_000];

/** A stream that ended or failed in a way that another try may mend. */
class Dropped extends Error {
  override readonly name = 'Dropped';
}

export async function listenAndForward(o: ListenOptions): Promise<void> {
  let secret: string | null = null;
  let failures = 0;
  let inFlight = new Set<Promise<void>>();
  while (!o.signal.aborted) {
    try {
      await stream(o, {
        ready: (ready) => {
          failures = 0;
          if (o.printSecret) {
            o.out(ready.secret);
            throw new Done();
          }
          if (secret === null) {
            if (o.json) o.out(JSON.stringify({ type: 'ready', secret: ready.secret, events: ready.events, forward_to: o.forwardTo }));
            else o.out(`Ready! Your webhook signing secret is ${ready.secret} (^C to quit)`);
            if (!o.json) o.err(`Forwarding ${ready.events.join(', ')} events of location ${ready.location_id} to ${o.forwardTo}`);
          } else if (ready.secret !== secret) {
            o.err(`The signing secret changed: it is now ${ready.secret}`);
          } else {
            o.err('Connected again.');
          }
          secret = ready.secret;
        },
        delivery: (delivery) => {
          const sent = forward(o, delivery).finally(() => inFlight.delete(sent));
          inFlight.add(sent);
        },
      });
      if (o.signal.aborted) break;
      throw new Dropped('the service ended the stream');
    } catch (error) {
      if (error instanceof Done || o.signal.aborted) break;
      // Refusals (401, 403, 400) and a first connection that fails end the run: nothing to wait for.
      const retriable = error instanceof Dropped || (secret !== null && !(error instanceof LatchkeyError && error.status !== 429 && error.status < 500));
      if (!retriable) throw error;
      const wait = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)] as number;
      failures++;
      o.err(`Connection lost (${reason(error)}); connecting again in ${wait / 1000} s…`);
      await sleep(wait, o.signal);
    }
  }
  await Promise.all(inFlight);
  inFlight = new Set();
}

class Done extends Error {}

interface Handlers {
  ready(ready: Ready): void;
  delivery(delivery: Delivery): void;
}

/** One connection: resolves when the service ends the stream, rejects on a refusal or a dropped connection. */
async function stream(o: ListenOptions, on: Handlers): Promise<void> {
  const query = o.events.length === 0 || o.events.includes('*') ? '' : `?events=${encodeURIComponent(o.events.join(','))}`;
  const abort = new AbortController();
  const stop = () => abort.abort();
  o.signal.addEventListener('abort', stop, { once: true });
  let silence: NodeJS.Timeout | null = null;
  const quiet = () => {
    if (silence) clearTimeout(silence);
    silence = setTimeout(() => abort.abort(new Dropped('no heartbeat')), SILENCE_MS);
  };
  try {
    let response: Response;
    try {
      response = await fetch(`${o.url}/v1/webhooks/listen${query}`, {
        headers: { authorization: `Bearer ${o.apiKey}`, accept: 'text/event-stream' },
        signal: abort.signal,
      });
    } catch (error) {
      if (o.signal.aborted) return;
      throw error;
    }
    if (!response.ok || !response.body) throw await refusal(response);
    quiet();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        quiet();
        buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n?/g, '\n');
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          message(block, on);
        }
      }
    } catch (error) {
      if (error instanceof Done || error instanceof LatchkeyError || o.signal.aborted) throw error;
      throw new Dropped(abort.signal.reason instanceof Dropped ? abort.signal.reason.message : reason(error));
    }
  } finally {
    if (silence) clearTimeout(silence);
    o.signal.removeEventListener('abort', stop);
    abort.abort();
  }
}

/** One server-sent event: `ready`, `delivery` or `end`; comment lines (heartbeats) are skipped. */
function message(block: string, on: Handlers): void {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return;
  const payload = JSON.parse(data.join('\n')) as unknown;
  if (event === 'ready') on.ready(payload as Ready);
  else if (event === 'delivery') on.delivery(payload as Delivery);
  else if (event === 'end') {
    const why = (payload as { reason?: string }).reason;
    if (why === 'key_revoked') {
      throw new LatchkeyError({ status: 401, code: 'unauthenticated', message: 'the service ended the stream: the API key was revoked, has expired or lost webhooks:manage' });
    }
    throw new Dropped(`the service ended the stream: ${why ?? 'no reason given'}`);
  }
}

/** A non-2xx answer as the SDK's error (the envelope's code and message), so the exit code is the CLI's usual. */
async function refusal(response: Response): Promise<LatchkeyError> {
  let code = 'unknown_error';
  let text = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: { code?: string; message?: string } };
    code = body.error?.code ?? code;
    text = body.error?.message ?? text;
  } catch {
    // not the envelope (a proxy's page)
  }
  const retryAfter = Number(response.headers.get('retry-after'));
  return new LatchkeyError({
    status: response.status,
    code: code as LatchkeyError['code'],
    message: text,
    requestId: response.headers.get('x-request-id'),
    retryAfter: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : null,
  });
}

/** POSTs one delivery to the local URL and prints its line: time, type, delivery id, the local answer. */
async function forward(o: ListenOptions, delivery: Delivery): Promise<void> {
  const type = delivery.headers['x-service-event'] ?? '?';
  const id = delivery.headers['x-service-delivery'] ?? '?';
  const time = new Date().toISOString().slice(11, 19);
  let status: number | null = null;
  let error: string | null = null;
  try {
    const response = await fetch(o.forwardTo, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_DEADLINE_MS),
    });
    status = response.status;
    await response.body?.cancel().catch(() => undefined);
  } catch (failure) {
    error = reason(failure);
  }
  if (o.json) o.out(JSON.stringify({ type: 'delivery', at: new Date().toISOString(), event_type: type, id, status, error }));
  else o.out(`${time}  ${type.padEnd(16)} ${id}  ${status !== null ? `[${status}] POST ${o.forwardTo}` : `failed: ${error} (POST ${o.forwardTo})`}`);
}

/** A short reason: the socket's error code (ECONNREFUSED …) or the message. */
function reason(error: unknown): string {
  if (error instanceof DOMException && error.name === 'TimeoutError') return `no answer within ${FORWARD_DEADLINE_MS / 1000} s`;
  if (error instanceof Error) {
    const cause = error.cause as NodeJS.ErrnoException | undefined;
    if (cause?.code) return cause.code;
    if (cause instanceof Error) return cause.message;
    return error.message;
  }
  return String(error);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
