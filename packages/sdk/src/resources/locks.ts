// Locks, remote unlock and security groups (docs/spec/public-api-v1.md, "Locks and security groups").
import { init, unwrap, type Api, type CallOptions } from '../api.js';
import { PageList } from '../pagination.js';
import { sleep } from '../transport.js';
import type { Lock, LockCommand, LockCommandStatus, LockQuery, SecurityGroup, SecurityGroupQuery } from '../types.js';

const FINAL_STATUSES: readonly LockCommandStatus[] = ['confirmed', 'failed', 'timed_out'];

export interface UnlockOptions extends CallOptions {
  /** Poll the command until it is `confirmed`, `failed` or `timed_out`, and resolve with it. */
  wait?: boolean;
  /** Between two reads of the command; default 500 ms. */
  pollIntervalMs?: number;
  /**
   * The longest wait for a final status; default the command's `timeout_seconds` plus 30 s (the service
   * itself makes an unanswered command `timed_out` after `timeout_seconds`). Past it the call rejects with
   * a DOMException named `TimeoutError`.
   */
  timeoutMs?: number;
}

export class Locks {
  constructor(private readonly api: Api) {}

  /** `GET /locks`: iterate with `for await`, or read one page with `.page()`. */
  list(query: LockQuery = {}, options: CallOptions = {}): PageList<Lock> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/locks', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }

  get(id: number, options: CallOptions = {}): Promise<Lock> {
    return unwrap(this.api.GET('/v1/locks/{id}', { params: { path: { id } }, ...init(options) }));
  }

  /**
   * `POST /locks/{id}/unlock`: the command as published; with `wait: true`, the command once it is final.
   * A second unlock while one is in flight answers the same command (the door is pulsed once).
   */
  async unlock(id: number, options: UnlockOptions = {}): Promise<LockCommand> {
    const command = await unwrap(this.api.POST('/v1/locks/{id}/unlock', { params: { path: { id } }, ...init(options) }));
    return options.wait ? this.waitUntilFinal(command, options) : command;
  }

  /** `GET /locks/{id}/commands/{command_id}`. */
  command(lockId: number, commandId: string, options: CallOptions = {}): Promise<LockCommand> {
    return unwrap(
      this.api.GET('/v1/locks/{id}/commands/{command_id}', { params: { path: { id: lockId, command_id: commandId } }, ...init(options) }),
    );
  }

  private async waitUntilFinal(command: LockCommand, options: UnlockOptions): Promise<LockCommand> {
    const started = Date.now();
    const limitMs = options.timeoutMs ?? (command.timeout_seconds + 30) * 1000;
    let current = command;
    while (!FINAL_STATUSES.includes(current.status)) {
      const left = started + limitMs - Date.now();
      if (left <= 0) {
        throw new DOMException(`Lock command ${command.id} was still ${current.status} after ${limitMs} ms.`, 'TimeoutError');
      }
      await sleep(Math.min(options.pollIntervalMs ?? 500, left), options.signal);
      current = await this.command(command.lock_id, command.id, options);
    }
    return current;
  }
}

export class SecurityGroups {
  constructor(private readonly api: Api) {}

  /** `GET /security_groups` (filter `is_default`). */
  list(query: SecurityGroupQuery = {}, options: CallOptions = {}): PageList<SecurityGroup> {
    return new PageList(
      (cursor) => unwrap(this.api.GET('/v1/security_groups', { params: { query: { ...query, cursor } }, ...init(options) })),
      query.cursor,
    );
  }
}
