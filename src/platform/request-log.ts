// The public API's request log: method, path, status, duration and IP; never bodies, query strings or tokens.
// Rows are buffered and written in batches so that logging adds no query to a request's own path.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Clock } from './clock.ts';
import type { AppendColumn, Database } from './db/database.ts';
import { isDatabaseUnavailable } from './db/errors.ts';
import type { Job } from './jobs.ts';
import { safePath } from './http.ts';

export const REQUEST_LOG_RETENTION_DAYS = 90;
const FLUSH_EVERY_MS = 1000;
/** A batch this large is written at once rather than at the next tick. */
const MAX_BUFFER = 2000;
/**
 * While the database is away, rows wait in memory up to this many (about a minute of a busy instance);
 * past it the oldest go, counted in the log. Memory stays bounded whatever the outage lasts.
 */
export const MAX_WAITING = 100_000;

/** The request log's columns as appendRows sends them. */
export const REQUEST_LOG_COLUMNS: readonly AppendColumn[] = [
  { name: 'at', type: 'timestamptz' },
  { name: 'method', type: 'text' },
  { name: 'path', type: 'text' },
  { name: 'status', type: 'int4' },
  { name: 'duration_ms', type: 'float4' },
  { name: 'ip', type: 'text' },
  { name: 'api_key_id', type: 'int8' },
];

interface Entry {
  atMs: number;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  ip: string;
  apiKeyId: number | null;
}

export class RequestLog {
  private buffer: Entry[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  /** The last write found the database away: only the timer tries again, not every request. */
  private databaseAway = false;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  install(app: FastifyInstance): void {
    // A callback hook, not an async one: it runs on every request and must stay cheap.
    app.addHook('onResponse', (request, reply, done) => {
      // Only the public API is logged; the operator API and unknown paths outside /v1 are not.
      if (!request.url.startsWith('/v1/')) return done();
      this.buffer.push({
        atMs: this.clock.now().getTime(),
        method: request.method,
        path: safePath(request.url),
        status: reply.statusCode,
        durationMs: reply.elapsedTime,
        ip: request.ip,
        apiKeyId: request.caller?.apiKeyId ?? null,
      });
      if (this.buffer.length >= MAX_BUFFER && !this.databaseAway) void this.flush();
      done();
    });
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  /** Writes what is buffered. Serialised, so batches never overlap. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.buffer.length === 0) return;
      const batch = this.buffer;
      this.buffer = [];
      try {
        // A binary COPY on the embedded database, whose thread shares the service's core: an INSERT of a JSON array
        // there was the largest cost of a cached read on a busy site (append-rows.ts, bench/RESULTS.md, 2026-11-28).
        await this.db.appendRows('request_log', REQUEST_LOG_COLUMNS, batch.map((e) => [e.atMs, e.method, e.path, e.status, e.durationMs, e.ip, e.apiKeyId]));
        this.databaseAway = false;
      } catch (error) {
        if (!isDatabaseUnavailable(error)) {
          // A batch the database refuses for what it holds would be refused again: it goes, said once.
          this.log.error({ err: error, rows: batch.length }, 'request log write failed; batch dropped');
          return;
        }
        // The database is away: the rows wait for the next flush, the oldest first, within MAX_WAITING.
        this.databaseAway = true;
        const waiting = [...batch, ...this.buffer];
        const dropped = Math.max(0, waiting.length - MAX_WAITING);
        this.buffer = dropped > 0 ? waiting.slice(dropped) : waiting;
        this.log.warn({ err: error, waiting: this.buffer.length, dropped }, 'request log waits for the database');
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  purgeJob(): Job {
    return {
      name: 'request-log-purge',
      everySeconds: 3600,
      run: async () => {
        const cutoff = new Date(this.clock.now().getTime() - REQUEST_LOG_RETENTION_DAYS * 86_400_000);
        const rows = await this.db.query(
          `DELETE FROM request_log WHERE ctid IN (SELECT ctid FROM request_log WHERE at < $1 LIMIT 5000) RETURNING at`,
          [cutoff.toISOString()],
        );
        return rows.length;
      },
    };
  }
}
