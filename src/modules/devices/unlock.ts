// Remote unlock (spec: Lock command, unlock rules): one command in flight per lock, enforced by the
// database so that every instance agrees; published to the gateway at QoS 1; confirmed, failed or timed
// out as the gateway protocol says. Outcomes reach the access log and webhooks.
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { uuidv7 } from '../../platform/ids.ts';
import type { Job } from '../../platform/jobs.ts';
import type { AccessEvent, AccessLogLock, AccessLogWriter, WriteGuard } from '../events/index.ts';
import { commandsTopic } from './topics.ts';

export interface LockCommand {
  id: string;
  lock_id: number;
  status: 'published' | 'confirmed' | 'timed_out' | 'failed';
  requested_at: string;
  published_at: string | null;
  confirmed_at: string | null;
  timeout_seconds: number;
  error: { code: string; message: string } | null;
}

interface CommandRow {
  id: string;
  account_id: number;
  lock_id: number;
  gateway_id: number;
  api_key_id: number;
  status: LockCommand['status'];
  requested_at: Date;
  published_at: Date | null;
  confirmed_at: Date | null;
  timeout_seconds: number;
  expires_at: Date;
  error: LockCommand['error'];
}

interface UnlockLock extends AccessLogLock {
  gateway_id: number | null;
  online: boolean | null;
  path: number[];
}

/** A command id as the service writes it (uuidv7): 8-4-4-4-12 hexadecimal digits. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const iso = (d: Date | null) => d?.toISOString() ?? null;

function toCommand(row: CommandRow): LockCommand {
  return {
    id: row.id,
    lock_id: row.lock_id,
    status: row.status,
    requested_at: row.requested_at.toISOString(),
    published_at: iso(row.published_at),
    confirmed_at: iso(row.confirmed_at),
    timeout_seconds: row.timeout_seconds,
    error: row.error,
  };
}

export interface UnlockDeps {
  db: Database;
  clock: Clock;
  accessLog: AccessLogWriter;
  publish: (topic: string, payload: unknown) => Promise<void>;
  timeoutSeconds: number;
  /** With SANDBOX=true, PUT /admin/v1/sandbox/mqtt can make every publish fail. */
  sandbox: boolean;
  log: FastifyBaseLogger;
}

const SANDBOX_PUBLISH_KEY = 'sandbox_mqtt_publish';
/** Tries of one unlock while the lock's in-flight command finishes under it (see unlock). */
const MAX_UNLOCK_ATTEMPTS = 3;

const CREATE_COMMAND = {
  name: 'lockCommands.create',
  text: `WITH target AS (
    SELECT k.id, k.gateway_id, l.account_id, g.online
      FROM locks k JOIN locations l ON l.id = k.location_id LEFT JOIN gateways g ON g.id = k.gateway_id
     WHERE k.id = $3 AND l.path @> ARRAY[$7]::bigint[]
  ), created AS (
    INSERT INTO lock_commands (id, account_id, lock_id, gateway_id, api_key_id, status, requested_at, published_at, timeout_seconds, expires_at)
    SELECT $1, target.account_id, target.id, target.gateway_id, $2, 'published', $4, $4, $5, $6 FROM target
     WHERE target.gateway_id IS NOT NULL AND target.online
    ON CONFLICT (lock_id) WHERE status = 'published' DO NOTHING RETURNING *
  )
  SELECT target.gateway_id AS lock_gateway_id, target.online AS gateway_online, created.* FROM target LEFT JOIN created ON true`,
};

const GET_COMMAND = {
  name: 'lockCommands.get',
  text: `SELECT c.* FROM lock_commands c JOIN locks k ON k.id = c.lock_id JOIN locations l ON l.id = k.location_id
  WHERE c.id = $1 AND c.lock_id = $2 AND l.path @> ARRAY[$3]::bigint[]`,
};

/** What the outcome of a published command names: its lock and the API key that asked. */
const COMMAND_OUTCOME_CONTEXT = {
  name: 'lockCommands.outcomeContext',
  text: `SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id,
         CASE WHEN a.id IS NULL THEN NULL ELSE json_build_object('id', a.id, 'name', a.name, 'prefix', a.prefix) END AS api_key
    FROM lock_commands c JOIN locks k ON k.id = c.lock_id JOIN locations l ON l.id = k.location_id
    LEFT JOIN api_keys a ON a.id = c.api_key_id
   WHERE c.id = $1 AND c.gateway_id = $2 AND c.status = 'published'`,
};

/** Ends a published command: the guard of the outcome's access-log write (params: id, gateway, status, error, now). */
const END_COMMAND: WriteGuard['sql'] = (
  $,
) => `UPDATE lock_commands SET status = ${$(3)}, error = ${$(4)}::jsonb, confirmed_at = CASE WHEN ${$(3)} = 'confirmed' THEN ${$(5)}::timestamptz ELSE NULL END
                      WHERE id = ${$(1)} AND gateway_id = ${$(2)} AND status = 'published' RETURNING id`;

const FIND_LOCK = {
  name: 'lockCommands.lock',
  text: `SELECT k.id, k.name, k.place, k.location_id, l.name AS location_name, l.account_id, l.path, k.gateway_id,
        CASE WHEN k.gateway_id IS NULL THEN NULL ELSE g.online END AS online
   FROM locks k JOIN locations l ON l.id = k.location_id LEFT JOIN gateways g ON g.id = k.gateway_id
  WHERE k.id = $1`,
};

export class UnlockService {
  constructor(private readonly deps: UnlockDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  async unlock(caller: Caller, lockId: number, tries = 0): Promise<LockCommand> {
    const now = this.deps.clock.now();
    const id = uuidv7(now);
    const expiresAt = new Date(now.getTime() + this.deps.timeoutSeconds * 1000);
    // One statement finds the lock in the caller's scope and, when its gateway is online, creates the
    // command unless one is in flight. No row: out of scope or off the allowlist, told apart by allowedLock.
    type Attempt = Partial<CommandRow> & { lock_gateway_id: number | null; gateway_online: boolean | null };
    const [attempt] = caller.lockAllowlist.has(lockId)
      ? await this.db.query<Attempt>(CREATE_COMMAND, [id, caller.apiKeyId, lockId, now, this.deps.timeoutSeconds, expiresAt, caller.locationId])
      : [];
    if (!attempt) {
      await this.allowedLock(caller, lockId, true); // throws the 404 or the 403
      throw errors.notFound('lock'); // the lock was deleted in between
    }
    const gatewayId = attempt.lock_gateway_id;
    if (gatewayId === null) throw errors.lockNotRemote();
    if (!attempt.gateway_online) throw errors.lockOffline();
    if (!attempt.id) {
      // A command for this lock is in flight: answer with it; the door is pulsed once.
      const [inFlight] = await this.db.query<CommandRow>(`SELECT * FROM lock_commands WHERE lock_id = $1 AND status = 'published'`, [lockId]);
      if (inFlight) return toCommand(inFlight);
      // It finished in between: try again, a bounded number of times. A lock whose commands keep
      // finishing under us is in heavy use: the caller is told to retry in a second.
      if (tries >= MAX_UNLOCK_ATTEMPTS - 1) throw errors.rateLimited(1);
      return this.unlock(caller, lockId, tries + 1);
    }
    const created = attempt as CommandRow;
    try {
      if (this.deps.sandbox && (await this.sandboxRefusesPublish())) throw new Error('the broker refused the publish (sandbox)');
      await this.deps.publish(commandsTopic(gatewayId), {
        id,
        lock_id: lockId,
        action: 'unlock',
        expires_at: expiresAt.toISOString(),
      });
    } catch (error) {
      this.deps.log.warn({ err: error, commandId: id }, 'unlock command not published');
      await this.finish(id, gatewayId, 'failed', { code: 'publish_failed', message: 'The command could not be handed to the device.' }, 'publish_failed');
      throw errors.publishFailed();
    }
    return toCommand(created);
  }

  async getCommand(caller: Caller, lockId: number, commandId: string): Promise<LockCommand> {
    // Clients poll this: one statement when the command is there and the lock in the caller's scope; the
    // precise 404 or 403 otherwise comes from allowedLock.
    if (caller.lockAllowlist.has(lockId)) {
      const [row] = await this.db.query<CommandRow>(GET_COMMAND, [commandId, lockId, caller.locationId]);
      if (row) return toCommand(row);
    }
    await this.allowedLock(caller, lockId, false);
    throw errors.notFound('command');
  }

  /**
   * A gateway's answer: ok confirms (access.granted); an error fails (unlock.failed). Unknown or finished:
   * ignored. Malformed (an id that is not a UUID could not even be looked up): dropped with a warning.
   */
  async result(gatewayId: number, payload: unknown): Promise<void> {
    const p = payload as { id?: unknown; ok?: unknown; error?: unknown };
    if (typeof p?.id !== 'string' || typeof p.ok !== 'boolean' || !UUID.test(p.id)) {
      return void this.deps.log.warn({ gatewayId }, 'malformed command result; dropped');
    }
    if (p.ok) return this.finish(p.id, gatewayId, 'confirmed', null, null);
    const code = p.error === 'device_missing' ? 'device_missing' : 'device_error';
    return this.finish(p.id, gatewayId, 'failed', { code, message: `The device answered ${code}.` }, code);
  }

  /** Commands without an answer within timeout_seconds become timed_out (unlock.failed). */
  timeoutJob(): Job {
    return {
      name: 'unlock-timeouts',
      everySeconds: 1,
      run: async () => {
        const due = await this.db.query<CommandRow>(`SELECT * FROM lock_commands WHERE status = 'published' AND expires_at <= $1 LIMIT 100`, [this.deps.clock.now()]);
        for (const row of due) await this.finish(row.id, row.gateway_id, 'timed_out', { code: 'timed_out', message: 'The device did not answer in time.' }, 'timed_out');
        return due.length;
      },
    };
  }

  /**
   * Ends a published command of the gateway once (whichever instance gets there first; an unknown or
   * finished one is left alone) and records its outcome.
   */
  private async finish(
    commandId: string,
    gatewayId: number,
    status: LockCommand['status'],
    error: LockCommand['error'],
    failReason: string | null,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const [context] = await this.db.query<AccessLogLock & { api_key: AccessEvent['api_key'] }>(COMMAND_OUTCOME_CONTEXT, [commandId, gatewayId]);
    if (!context) return;
    const { api_key: apiKey, ...lock } = context;
    // One statement ends the command and records its outcome, or does neither when another instance (or
    // the time-out) ended it meanwhile.
    await this.deps.accessLog.recordBatch(
      this.db,
      [
        {
          lock,
          entry: {
            gatewayId: null,
            gatewayEventId: null,
            type: status === 'confirmed' ? 'access.granted' : 'unlock.failed',
            occurredAt: now,
            result: status === 'confirmed' ? 'success' : 'denied',
            reason: failReason,
            source: 'api',
            apiKey,
            person: null,
            key: null,
          },
        },
      ],
      { name: 'endCommand', sql: END_COMMAND, params: [commandId, gatewayId, status, error === null ? null : JSON.stringify(error), now] },
    );
  }

  /** The lock, in scope (else 404) and on the key's allowlist (else 403; on unlock also a refused access). */
  private async allowedLock(caller: Caller, lockId: number, recordRefusal: boolean): Promise<UnlockLock> {
    const [lock] = await this.db.query<UnlockLock>(FIND_LOCK, [lockId]);
    if (!lock || !lock.path.map(Number).includes(caller.locationId)) throw errors.notFound('lock');
    if (!caller.lockAllowlist.has(lock.id)) {
      if (recordRefusal) {
        const now = this.deps.clock.now();
        await this.db.transaction((tx) =>
          this.deps.accessLog.record(tx, lock, {
            gatewayId: null,
            gatewayEventId: null,
            type: 'access.denied',
            occurredAt: now,
            result: 'denied',
            reason: 'no_access',
            source: 'api',
            apiKey: { id: caller.apiKeyId, name: caller.apiKeyName, prefix: caller.prefix },
            person: null,
            key: null,
          }),
        );
      }
      throw errors.lockNotAllowed();
    }
    return lock;
  }

  private async sandboxRefusesPublish(): Promise<boolean> {
    const [row] = await this.db.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [SANDBOX_PUBLISH_KEY]);
    return row?.value === 'fail';
  }

  /** PUT /admin/v1/sandbox/mqtt. */
  async setSandboxPublish(mode: 'accept' | 'fail'): Promise<void> {
    await this.db.query(
      `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
      [SANDBOX_PUBLISH_KEY, mode],
    );
  }
}
