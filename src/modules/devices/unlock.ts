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
import { NO_METRICS, type UnlockMetrics, type UnlockOutcome } from '../../platform/metrics.ts';
import type { AccessEntry, AccessLogWriter } from '../events/index.ts';
import type { LockCommand } from './schemas.ts';
import {
  commandOutcomeContext,
  endCommandGuard,
  expiredCommands,
  findCommand,
  findInFlightCommand,
  findUnlockLock,
  sandboxPublishMode,
  setSandboxPublishMode,
  toCommand,
  tryCreateCommand,
  tryCreateKeyCommand,
  findKeyCommand,
  type CommandRow,
  type UnlockLock,
} from './store.ts';
import { commandsTopic } from './topics.ts';

/** A command id as the service writes it (uuidv7): 8-4-4-4-12 hexadecimal digits. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface UnlockDeps {
  db: Database;
  clock: Clock;
  accessLog: AccessLogWriter;
  publish: (topic: string, payload: unknown) => Promise<void>;
  timeoutSeconds: number;
  /** With SANDBOX=true, PUT /admin/v1/sandbox/mqtt can make every publish fail. */
  sandbox: boolean;
  log: FastifyBaseLogger;
  metrics?: UnlockMetrics;
}

/** Who opens, when a key holder does: their key, person and account. */
export interface KeyHolder {
  accountId: number;
  key: { id: number; name: string };
  person: { id: string; name: string; email: string | null };
  /** The key's and its person's rows as the decision read them (holder store's row_version). */
  version: string;
}

/** unlockForKey's answer when the key or its person changed after the decision: decide again. */
export const KEY_CHANGED = 'key_changed';

/**
 * A gateway of another kind (a UHPPOTE controller) that opens its doors itself: takes the command, and reports
 * its end through UnlockService.result as a gateway would.
 */
export type UnlockHandOff = (gatewayId: number, command: { id: string; lockId: number }) => void;

/** Tries of one unlock while the lock's in-flight command finishes under it (see unlock). */
const MAX_UNLOCK_ATTEMPTS = 3;
/** Expired commands the time-out job ends per run. */
const TIMEOUTS_PER_RUN = 100;

export class UnlockService {
  private readonly metrics: UnlockMetrics;
  private handOff: UnlockHandOff | null = null;

  /** Where commands for gateways of kind 'uhppote' go instead of the broker (the controllers module). */
  handOffTo(handOff: UnlockHandOff): void {
    this.handOff = handOff;
  }

  constructor(private readonly deps: UnlockDeps) {
    this.metrics = deps.metrics ?? NO_METRICS;
  }

  private get db(): Database {
    return this.deps.db;
  }

  /** `log`: the request's logger, so that a line about this unlock carries its request id. */
  async unlock(caller: Caller, lockId: number, log: FastifyBaseLogger, tries = 0): Promise<LockCommand> {
    const now = this.deps.clock.now();
    const id = uuidv7(now);
    const expiresAt = new Date(now.getTime() + this.deps.timeoutSeconds * 1000);
    // One statement finds the lock in the caller's scope and, when its gateway is online, creates the
    // command unless one is in flight. No row: out of scope or off the allowlist, told apart by allowedLock.
    const attempt = caller.lockAllowlist.has(lockId)
      ? await tryCreateCommand(this.db, { id, apiKeyId: caller.apiKeyId, lockId, now, timeoutSeconds: this.deps.timeoutSeconds, expiresAt, locationId: caller.locationId })
      : undefined;
    if (!attempt) {
      await this.allowedLock(caller, lockId, true); // throws the 404 or the 403
      throw errors.notFound('lock'); // the lock was deleted in between
    }
    const gatewayId = attempt.lock_gateway_id;
    if (gatewayId === null) throw errors.lockNotRemote();
    if (!attempt.gateway_online) throw errors.lockOffline();
    if (!attempt.id) {
      // A command for this lock is in flight: answer with it; the door is pulsed once.
      const inFlight = await findInFlightCommand(this.db, lockId);
      if (inFlight) return toCommand(inFlight);
      // It finished in between: try again, a bounded number of times. A lock whose commands keep
      // finishing under us is in heavy use: the caller is told to retry in a second.
      if (tries >= MAX_UNLOCK_ATTEMPTS - 1) throw errors.rateLimited(1);
      return this.unlock(caller, lockId, log, tries + 1);
    }
    const created = attempt as CommandRow;
    if (attempt.gateway_kind === 'uhppote' && this.handOff) {
      this.handOff(gatewayId, { id, lockId });
      return toCommand(created);
    }
    try {
      if (this.deps.sandbox && (await sandboxPublishMode(this.db)) === 'fail') throw new Error('the broker refused the publish (sandbox)');
      await this.deps.publish(commandsTopic(gatewayId), {
        id,
        lock_id: lockId,
        action: 'unlock',
        expires_at: expiresAt.toISOString(),
      });
    } catch (error) {
      log.warn({ err: error, commandId: id }, 'unlock command not published');
      await this.finish(id, gatewayId, 'failed', { code: 'publish_failed', message: 'The command could not be handed to the device.' }, 'publish_failed');
      throw errors.publishFailed();
    }
    return toCommand(created);
  }

  async getCommand(caller: Caller, lockId: number, commandId: string): Promise<LockCommand> {
    // Clients poll this: one statement when the command is there and the lock in the caller's scope; the
    // precise 404 or 403 otherwise comes from allowedLock.
    if (caller.lockAllowlist.has(lockId)) {
      const row = await findCommand(this.db, commandId, lockId, caller.locationId);
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
    if (typeof p?.id !== 'string' || !UUID.test(p.id)) {
      return void this.deps.log.warn({ gatewayId, problem: "id: must be the command's UUID" }, 'malformed command result; dropped');
    }
    if (typeof p.ok !== 'boolean') {
      return void this.deps.log.warn({ gatewayId, commandId: p.id, problem: 'ok: must be true or false' }, 'malformed command result; dropped');
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
        const due = await expiredCommands(this.db, this.deps.clock.now(), TIMEOUTS_PER_RUN);
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
    failReason: Exclude<UnlockOutcome, 'confirmed'> | null,
  ): Promise<void> {
    const now = this.deps.clock.now();
    const context = await commandOutcomeContext(this.db, commandId, gatewayId);
    if (!context) return;
    const { api_key: apiKey, requested_at: requestedAt, holder_key: holderKey, holder_person: holderPerson, ...lock } = context;
    // One statement ends the command and records its outcome, or does neither when another instance (or
    // the time-out) ended it meanwhile.
    const [recorded] = await this.deps.accessLog.recordBatch(
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
            source: holderKey ? 'key_holder' : 'api',
            apiKey,
            person: holderPerson,
            key: holderKey,
          },
        },
      ],
      endCommandGuard(commandId, gatewayId, status, error, now),
    );
    if (!recorded) return; // ended elsewhere, and counted there
    const outcome: UnlockOutcome = status === 'confirmed' ? 'confirmed' : (failReason ?? 'device_error');
    const answered = outcome === 'confirmed' || outcome === 'device_error' || outcome === 'device_missing';
    this.metrics.ended(outcome, answered ? (now.getTime() - new Date(requestedAt).getTime()) / 1000 : undefined);
  }

  /** The lock, in scope (else 404) and on the key's allowlist (else 403; on unlock also a refused access). */
  private async allowedLock(caller: Caller, lockId: number, recordRefusal: boolean): Promise<UnlockLock> {
    const lock = await findUnlockLock(this.db, lockId);
    if (!lock || !lock.path.map(Number).includes(caller.locationId)) throw errors.notFound('lock');
    if (!caller.lockAllowlist.has(lock.id)) {
      if (recordRefusal) {
        await this.recordRefusal(lock, 'no_access', { source: 'api', apiKey: { id: caller.apiKeyId, name: caller.apiKeyName, prefix: caller.prefix }, person: null, key: null });
      }
      throw errors.lockNotAllowed();
    }
    return lock;
  }

  /** An access.denied in the access log for a refusal made here, with who asked (an API key or a key holder). */
  private async recordRefusal(lock: UnlockLock, reason: string, actor: Pick<AccessEntry, 'source' | 'apiKey' | 'person' | 'key'>): Promise<void> {
    const entry: AccessEntry = { gatewayId: null, gatewayEventId: null, type: 'access.denied', occurredAt: this.deps.clock.now(), result: 'denied', reason, ...actor };
    await this.deps.accessLog.recordBatch(this.db, [{ lock, entry }]);
  }

  /**
   * A key holder's Open (README "The key holder's page"): the decision was made by `decide`; a denial is
   * recorded as access.denied with the person and key, a grant becomes one command for the lock (a command
   * in flight is answered, as for API unlocks) whose outcome names them; KEY_CHANGED, with nothing created, when
   * the key or its person changed since the decision read them. `log`: the request's logger.
   */
  async unlockForKey(holder: KeyHolder, lockId: number, denial: string | null, log: FastifyBaseLogger, tries = 0): Promise<LockCommand | null | typeof KEY_CHANGED> {
    const now = this.deps.clock.now();
    if (denial !== null) {
      const lock = await findUnlockLock(this.db, lockId);
      if (lock && Number(lock.account_id) === holder.accountId) {
        await this.recordRefusal(lock, denial, { source: 'key_holder', apiKey: null, person: holder.person, key: holder.key });
      }
      return null;
    }
    const id = uuidv7(now);
    const expiresAt = new Date(now.getTime() + this.deps.timeoutSeconds * 1000);
    const attempt = await tryCreateKeyCommand(this.db, { id, keyId: holder.key.id, keyVersion: holder.version, lockId, now, timeoutSeconds: this.deps.timeoutSeconds, expiresAt });
    if (!attempt) throw errors.notFound('lock');
    if (!attempt.key_unchanged) return KEY_CHANGED;
    const gatewayId = attempt.lock_gateway_id;
    if (gatewayId === null) throw errors.lockNotRemote();
    if (!attempt.gateway_online) throw errors.lockOffline();
    if (!attempt.id) {
      const inFlight = await findInFlightCommand(this.db, lockId);
      if (inFlight) return toCommand(inFlight);
      if (tries >= MAX_UNLOCK_ATTEMPTS - 1) throw errors.rateLimited(1);
      return this.unlockForKey(holder, lockId, null, log, tries + 1);
    }
    if (attempt.gateway_kind === 'uhppote' && this.handOff) {
      this.handOff(gatewayId, { id, lockId });
      return toCommand(attempt as CommandRow);
    }
    try {
      if (this.deps.sandbox && (await sandboxPublishMode(this.db)) === 'fail') throw new Error('the broker refused the publish (sandbox)');
      await this.deps.publish(commandsTopic(gatewayId), { id, lock_id: lockId, action: 'unlock', expires_at: expiresAt.toISOString() });
    } catch (error) {
      log.warn({ err: error, commandId: id }, 'unlock command not published');
      await this.finish(id, gatewayId, 'failed', { code: 'publish_failed', message: 'The command could not be handed to the device.' }, 'publish_failed');
      throw errors.publishFailed();
    }
    return toCommand(attempt as CommandRow);
  }

  /** A key holder's command, polled by the page by its id; null for an API key's or none. */
  async anyKeyCommand(commandId: string): Promise<LockCommand | null> {
    if (!UUID.test(commandId)) return null;
    const row = await findKeyCommand(this.db, commandId);
    return row ? toCommand(row) : null;
  }

  /** PUT /admin/v1/sandbox/mqtt. */
  async setSandboxPublish(mode: 'accept' | 'fail'): Promise<void> {
    await setSandboxPublishMode(this.db, mode);
  }
}
