// Idempotency-Key (spec: "Idempotency header"), for routes whose config says `idempotent: true`.
// The record lives in the database, per API key, so every instance sees the same one:
//   first call      -> claimed `in_progress`; the response is stored when it is sent
//   same key & body -> the stored status and body, with Idempotent-Replayed: true
//   other body      -> 409 idempotency_conflict
//   still running   -> 409 idempotency_in_progress, Retry-After: 2 (abandoned after 60 s: the retry runs)
// Never stored (the claim is released so that a retry executes again): 5xx, 409 lockingsystem_rejected,
// bodies over 64 KB, non-JSON bodies.
// Stored responses are sealed under the server key (secret-box): some hold secrets the service keeps
// only encrypted or hashed elsewhere, such as the signing secret a POST /v1/webhooks answer shows once.
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyRequest, onSendAsyncHookHandler, preValidationAsyncHookHandler } from 'fastify';
import type { Clock } from './clock.ts';
import type { Database } from './db/index.ts';
import { errors } from './errors.ts';

/** Claims of one request that may race a release before it is answered as in progress. */
const MAX_CLAIM_ATTEMPTS = 3;
import type { Job } from './jobs.ts';
import type { SecretBox } from './secret-box.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
export const IDEMPOTENCY_ABANDON_MS = 60_000;
export const IDEMPOTENCY_MAX_STORED_BYTES = 64 * 1024;
const KEY_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

declare module 'fastify' {
  interface FastifyContextConfig {
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotencyKey?: string;
  }
}

function asArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** JSON with object keys sorted, so that the same body in another key order is the same body. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function fingerprint(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.routeOptions.url}\n${canonical(request.body ?? null)}`)
    .digest('hex');
}

interface StoredRow {
  fingerprint: string;
  state: 'in_progress' | 'done';
  status: number | null;
  content_type: string | null;
  /** Only records stored before migration 009: the response in clear. */
  body: string | null;
  sealed_body: string | null;
}

export class Idempotency {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  /** Attaches the two hooks to the routes whose config says `idempotent: true` (call before adding routes). */
  install(app: FastifyInstance): void {
    app.addHook('onRoute', (route) => {
      if (!route.config?.idempotent) return;
      route.preValidation = [...asArray(route.preValidation), this.replayOrClaim];
      route.onSend = [...asArray(route.onSend), this.store];
    });
  }

  // After authentication, scopes and rate limits (onRequest) and before validation, so that a 422 is
  // stored and replayed like any other answer.
  private readonly replayOrClaim: preValidationAsyncHookHandler = async (request, reply) => {
    if (!request.caller) return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
      throw errors.invalidRequest('The Idempotency-Key header must be 1 to 64 characters of A-Z a-z 0-9 _ -.');
    }
    const stored = await this.claim(request.caller.apiKeyId, header, fingerprint(request));
    if (!stored) {
      request.idempotencyKey = header;
      return;
    }
    reply.header('idempotent-replayed', 'true');
    if (stored.content_type) reply.header('content-type', stored.content_type);
    return reply.code(stored.status ?? 200).send(stored.sealed_body === null ? stored.body : this.box.open(stored.sealed_body));
  };

  private readonly store: onSendAsyncHookHandler<unknown> = async (request, reply, payload) => {
    const key = request.idempotencyKey;
    const caller = request.caller;
    if (!key || !caller) return payload;
    request.idempotencyKey = undefined;
    const contentType = String(reply.getHeader('content-type') ?? '');
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : null;
    const storable =
      reply.statusCode < 500 &&
      body !== null &&
      contentType.startsWith('application/json') &&
      Buffer.byteLength(body) <= IDEMPOTENCY_MAX_STORED_BYTES &&
      !(reply.statusCode === 409 && body.includes('"lockingsystem_rejected"'));
    if (storable) {
      await this.db.query(
        `UPDATE idempotency_keys SET state = 'done', status = $3, content_type = $4, sealed_body = $5
          WHERE api_key_id = $1 AND key = $2`,
        [caller.apiKeyId, key, reply.statusCode, contentType, this.box.seal(body)],
      );
    } else {
      await this.release(caller.apiKeyId, key);
    }
    return payload;
  };

  /** Claims the key for this request (null), or returns what the first call stored; throws 409s. */
  private async claim(apiKeyId: number, key: string, print: string, attempt = 0): Promise<StoredRow | null> {
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS);
    const abandonedBefore = new Date(now.getTime() - IDEMPOTENCY_ABANDON_MS);
    // Insert, or take over a record that expired or whose first call was abandoned; otherwise read it.
    const claimed = await this.db.query(
      `INSERT INTO idempotency_keys (api_key_id, key, fingerprint, state, started_at, expires_at)
       VALUES ($1, $2, $3, 'in_progress', $4, $5)
       ON CONFLICT (api_key_id, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, state = 'in_progress', status = NULL, content_type = NULL, body = NULL, sealed_body = NULL,
             started_at = EXCLUDED.started_at, expires_at = EXCLUDED.expires_at
         WHERE idempotency_keys.expires_at <= $4
            OR (idempotency_keys.state = 'in_progress' AND idempotency_keys.started_at <= $6
                AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)
       RETURNING key`,
      [apiKeyId, key, print, now, expiresAt, abandonedBefore],
    );
    if (claimed.length > 0) return null;
    const [row] = await this.db.query<StoredRow>(
      'SELECT fingerprint, state, status, content_type, body, sealed_body FROM idempotency_keys WHERE api_key_id = $1 AND key = $2',
      [apiKeyId, key],
    );
    if (!row) {
      // Released in between (the first call failed): claim again, a bounded number of times; a key
      // that keeps flickering is answered like one in progress, and the client retries after 2 s.
      if (attempt >= MAX_CLAIM_ATTEMPTS - 1) throw errors.idempotencyInProgress();
      return this.claim(apiKeyId, key, print, attempt + 1);
    }
    if (row.fingerprint !== print) throw errors.idempotencyConflict();
    if (row.state === 'in_progress') throw errors.idempotencyInProgress();
    return row;
  }

  private async release(apiKeyId: number, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE api_key_id = $1 AND key = $2 AND state = 'in_progress'`, [apiKeyId, key]);
  }

  purgeJob(): Job {
    return {
      name: 'idempotency-purge',
      everySeconds: 600,
      run: async () => {
        const rows = await this.db.query(
          `DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT 5000) RETURNING key`,
          [this.clock.now()],
        );
        return rows.length;
      },
    };
  }
}
