// Live updates for console browsers (docs/console.md): server-sent events fed by the database's NOTIFYs
// (migration 012's triggers), so a change made through any instance, job or gateway reaches every browser
// of every instance. Notifications are coalesced per topic and account for a short while: a burst of door
// events is one refetch, not hundreds.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { CONSOLE_LIVE_CHANNEL } from '../../platform/channels.ts';
import type { Database } from '../../platform/db/index.ts';
import { takeOverForStream } from '../../platform/http.ts';

const COALESCE_MS = 200;
const HEARTBEAT_MS = 25_000;
/** Streams per instance and per session: each holds a socket; a browser needs one. */
export const MAX_STREAMS = 200;
export const MAX_STREAMS_PER_SESSION = 8;
/** Sent when the LISTEN connection was lost and is back: what changed meanwhile is unknown, refetch all. */
const EVERYTHING = JSON.stringify({ topic: '*', account_id: null });

interface Stream {
  sessionHash: string;
  response: ServerResponse;
}

export class LiveUpdates {
  private readonly streams = new Set<Stream>();
  private pending = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  /**
   * `stillSignedIn` is asked for every stream at each heartbeat: a session that ended on another instance
   * (sign-out, expiry) loses its streams within one heartbeat.
   */
  constructor(private readonly stillSignedIn: (sessionHash: string) => Promise<boolean>) {}

  async start(db: Database): Promise<void> {
    await db.listen(CONSOLE_LIVE_CHANNEL, (payload) => this.queue(payload === '' ? EVERYTHING : payload));
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /** Whether another stream may open (per instance and per session). */
  canOpen(sessionHash: string): boolean {
    if (this.streams.size >= MAX_STREAMS) return false;
    let mine = 0;
    for (const stream of this.streams) if (stream.sessionHash === sessionHash) mine++;
    return mine < MAX_STREAMS_PER_SESSION;
  }

  /** Takes the reply over (with the headers every answer carries) until the browser goes or the session ends. */
  open(sessionHash: string, reply: FastifyReply): void {
    const response = takeOverForStream(reply, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, private',
      'x-accel-buffering': 'no', // a proxy in front must not hold the stream back
      connection: 'keep-alive',
    });
    response.write('retry: 3000\n: connected\n\n');
    if (response.destroyed) return; // the browser left while the session was read: its close came and went
    const stream = { sessionHash, response };
    this.streams.add(stream);
    response.on('close', () => this.streams.delete(stream));
  }

  /** Ends the streams of one session (signed out here) or of all (shutdown). */
  end(sessionHash?: string): void {
    for (const stream of this.streams) {
      if (sessionHash !== undefined && stream.sessionHash !== sessionHash) continue;
      this.streams.delete(stream);
      stream.response.end();
    }
  }

  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.end();
  }

  get size(): number {
    return this.streams.size;
  }

  private queue(payload: string): void {
    this.pending.add(payload);
    this.flushTimer ??= setTimeout(() => this.flush(), COALESCE_MS);
  }

  private flush(): void {
    this.flushTimer = null;
    const batch = [...this.pending].map((data) => `event: change\ndata: ${data}\n\n`).join('');
    this.pending = new Set();
    for (const stream of this.streams) stream.response.write(batch);
  }

  private async beat(): Promise<void> {
    const sessions = new Map<string, boolean>();
    for (const stream of [...this.streams]) {
      let live = sessions.get(stream.sessionHash);
      if (live === undefined) {
        live = await this.stillSignedIn(stream.sessionHash).catch(() => true); // a database blip ends nobody's stream
        sessions.set(stream.sessionHash, live);
      }
      if (live) stream.response.write(': ping\n\n');
      else this.end(stream.sessionHash);
    }
  }
}
