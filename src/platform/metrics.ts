// Prometheus metrics (README: Operations). One registry per app, so that every buildApp (and every test)
// counts on its own; the modules see only the narrow interface of what they report, never prom-client.
// Labels are bounded sets (route patterns, status codes, fixed outcome names): never a URL, an id or a key.
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** How long a gauge read from the database at scrape time may take; past it the gauge keeps its last value. */
export const SCRAPE_QUERY_TIMEOUT_MS = 2000;

/** Rate-limit refusals, by bucket (`api-key`, `anonymous`, `auth-failed`, a route's bucket). */
export interface RateLimitMetrics {
  refused(bucket: string): void;
}

export type WebhookAttemptOutcome = 'delivered' | 'retry_scheduled' | 'exhausted';

export interface WebhookMetrics {
  /** One HTTP attempt of a delivery, what became of the delivery, and how long the attempt took. */
  attempted(outcome: WebhookAttemptOutcome, seconds: number): void;
}

/**
 * Why a door event was not stored: not a door event, a repeat or a lock not on the gateway, refused by the
 * database, sent retained (an external broker passes it on; the gateway protocol does not allow it).
 */
export type DoorEventDrop = 'malformed' | 'not_stored' | 'refused' | 'retained' | 'overload';

export interface DoorEventMetrics {
  received(): void;
  /** One write of a gateway's batch: its size and how many of its events were new and stored. */
  batchWritten(size: number, stored: number): void;
  dropped(reason: DoorEventDrop, count?: number): void;
  /** From the service receiving the event to its batch's commit. */
  ingested(lagSeconds: number): void;
}

export type UnlockOutcome = 'confirmed' | 'device_error' | 'device_missing' | 'timed_out' | 'publish_failed';

export interface UnlockMetrics {
  /** A command's end; `roundTripSeconds` (request to the gateway's answer) when the gateway answered. */
  ended(outcome: UnlockOutcome, roundTripSeconds?: number): void;
}

export interface DatabaseMetrics {
  queryFailed(unavailable: boolean): void;
}

/** Reporting to nobody: the default of modules built outside an app (tests of one module). */
export const NO_METRICS: RateLimitMetrics & WebhookMetrics & DoorEventMetrics & UnlockMetrics & DatabaseMetrics = {
  refused: () => undefined,
  attempted: () => undefined,
  received: () => undefined,
  batchWritten: () => undefined,
  dropped: () => undefined,
  ingested: () => undefined,
  ended: () => undefined,
  queryFailed: () => undefined,
};

/** A value read at scrape time (a cheap query): undefined leaves the gauge as it was. */
export type GaugeReader = () => Promise<number | undefined> | number | undefined;

const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The value, or undefined when it takes longer than SCRAPE_QUERY_TIMEOUT_MS or fails: a scrape never waits long. */
export async function withinScrapeTimeout<T>(read: () => Promise<T>, ms = SCRAPE_QUERY_TIMEOUT_MS): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([read(), new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** `read`, but callers at the same time (the gauges of one scrape) share one call. */
export function shared<T>(read: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | null = null;
  return () => (inFlight ??= read().finally(() => (inFlight = null)));
}

export class Metrics implements RateLimitMetrics, WebhookMetrics, DoorEventMetrics, UnlockMetrics, DatabaseMetrics {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: 'latchkey_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly httpDuration = new Histogram({
    name: 'latchkey_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route pattern.',
    labelNames: ['method', 'route'] as const,
    buckets: SECONDS_BUCKETS,
    registers: [this.registry],
  });
  private readonly rateLimitRefusals = new Counter({
    name: 'latchkey_rate_limit_refusals_total',
    help: 'Requests refused with 429 rate_limited, by bucket.',
    labelNames: ['bucket'] as const,
    registers: [this.registry],
  });
  private readonly webhookAttempts = new Counter({
    name: 'latchkey_webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts, by what became of the delivery: delivered, retry_scheduled or exhausted.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly webhookAttemptDuration = new Histogram({
    name: 'latchkey_webhook_attempt_duration_seconds',
    help: 'Duration of one webhook delivery attempt (the signed POST and reading its answer).',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly doorEventsReceived = new Counter({
    name: 'latchkey_door_events_received_total',
    help: 'Door events received from gateways (well-formed, repeats included).',
    registers: [this.registry],
  });
  private readonly doorEventsStored = new Counter({
    name: 'latchkey_door_events_stored_total',
    help: 'Door events stored in the access log.',
    registers: [this.registry],
  });
  private readonly doorEventsDropped = new Counter({
    name: 'latchkey_door_events_dropped_total',
    help: 'Door events not stored, by reason: malformed, not_stored (a repeat, or a lock not on the gateway), refused (by the database), retained (sent retained), overload (QoS 0 from a gateway far behind).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly doorEventBatchSize = new Histogram({
    name: 'latchkey_door_event_batch_size',
    help: "Door events written together: a gateway's events that arrived while its previous write ran.",
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
    registers: [this.registry],
  });
  private readonly doorEventLag = new Histogram({
    name: 'latchkey_door_event_ingestion_lag_seconds',
    help: 'From the service receiving a door event to its commit in the access log.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly unlockCommands = new Counter({
    name: 'latchkey_unlock_commands_total',
    help: 'Remote unlock commands ended, by outcome: confirmed, device_error, device_missing, timed_out, publish_failed.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly unlockRoundTrip = new Histogram({
    name: 'latchkey_unlock_round_trip_seconds',
    help: "From an unlock request to the gateway's answer (confirmed or failed by the device).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly databaseErrors = new Counter({
    name: 'latchkey_database_query_errors_total',
    help: 'Failed database statements, by kind: unavailable (away or too slow) or statement (refused by the database).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  /** Records one answered request; `route` is the route's pattern, never the URL. */
  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, seconds);
  }

  refused(bucket: string): void {
    this.rateLimitRefusals.inc({ bucket });
  }

  attempted(outcome: WebhookAttemptOutcome, seconds: number): void {
    this.webhookAttempts.inc({ outcome });
    this.webhookAttemptDuration.observe(seconds);
  }

  received(): void {
    this.doorEventsReceived.inc();
  }

  batchWritten(size: number, stored: number): void {
    this.doorEventBatchSize.observe(size);
    if (stored > 0) this.doorEventsStored.inc(stored);
    if (size > stored) this.doorEventsDropped.inc({ reason: 'not_stored' }, size - stored);
  }

  dropped(reason: DoorEventDrop, count = 1): void {
    this.doorEventsDropped.inc({ reason }, count);
  }

  ingested(lagSeconds: number): void {
    this.doorEventLag.observe(lagSeconds);
  }

  ended(outcome: UnlockOutcome, roundTripSeconds?: number): void {
    this.unlockCommands.inc({ outcome });
    if (roundTripSeconds !== undefined) this.unlockRoundTrip.observe(Math.max(0, roundTripSeconds));
  }

  queryFailed(unavailable: boolean): void {
    this.databaseErrors.inc({ kind: unavailable ? 'unavailable' : 'statement' });
  }

  /** A gauge read at scrape time (`read` is given SCRAPE_QUERY_TIMEOUT_MS; a failure keeps the last value). */
  gauge(name: string, help: string, read: GaugeReader): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        const value = await withinScrapeTimeout(async () => read());
        if (value !== undefined) this.set(value);
      },
    });
  }

  /** `latchkey_build_info{version,node} 1`: which build each instance runs (join on it, or count versions in a roll-out). */
  buildInfo(version: string, node: string = process.version): void {
    new Gauge({
      name: 'latchkey_build_info',
      help: 'The running build: always 1, labelled with the service version and the Node.js version.',
      labelNames: ['version', 'node'] as const,
      registers: [this.registry],
    }).set({ version, node }, 1);
  }

  /** The process's own metrics (CPU, memory, event-loop lag, handles, GC), under their standard names. */
  collectProcessMetrics(): void {
    collectDefaultMetrics({ register: this.registry });
  }

  /** The exposition text of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * The metrics listener (METRICS_PORT): GET /metrics and nothing else, apart from the API's port so that
 * metrics never reach whoever reaches the API. Resolves with its port once it listens.
 */
export async function listenForScrapes(metrics: Metrics, port: number, host: string): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metrics.scrape().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(new Error(`the metrics listener (METRICS_HOST ${host}, METRICS_PORT ${port}) could not listen: ${error.message}`, { cause: error }));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const address = server.address();
  return { server, port: typeof address === 'object' && address ? address.port : port };
}
