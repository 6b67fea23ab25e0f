// Logins as a gateway that the broker refused (a wrong password, or a client id that is not the gateway's user name):
// the operator sees when the last one was (GET /admin/v1/gateways: last_refused_at), which tells a gateway still
// dialling with its old password after a rotation from one that is switched off. Anyone may try a gateway's user
// name, so a flood of wrong passwords writes at most once a minute per gateway and instance.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { recordRefusedLogin } from './store.ts';

/** A gateway's refused logins are written at most this often (service clock). */
export const REFUSED_WRITE_MS = 60_000;

export class RefusedLogins {
  /** When each gateway's next refusal is written; before that, refusals are only counted as written. */
  private readonly nextWrite = new Map<number, number>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** A login as the gateway was refused now. Never throws and never waits: it runs inside the broker's callbacks. */
  refused(gatewayId: number): void {
    const now = this.clock.now();
    if (now.getTime() < (this.nextWrite.get(gatewayId) ?? 0)) return;
    this.nextWrite.set(gatewayId, now.getTime() + REFUSED_WRITE_MS);
    recordRefusedLogin(this.db, gatewayId, now).catch((error: unknown) => this.log.warn({ err: error, gatewayId }, 'a refused gateway login was not recorded'));
  }
}
