// The keys area put together (README: Architecture): keys, invitations, setup links and the dashboard's
// hand-over share one set of dependencies; start.ts builds it, and routes reach each part through it.
import type { Queryable, Transaction } from '../../platform/db/index.ts';
import { ActivationService } from './activation.ts';
import type { KeysDeps } from './common.ts';
import { HandOverService } from './hand-over.ts';
import { InvitationsService } from './invitations.ts';
import type { EmbeddedKey } from './schemas.ts';
import { KeysService } from './service.ts';

export class KeysArea {
  readonly keys: KeysService;
  readonly invitations: InvitationsService;
  readonly activation: ActivationService;
  readonly handOver: HandOverService;

  constructor(deps: KeysDeps) {
    this.keys = new KeysService(deps);
    this.invitations = new InvitationsService(deps);
    this.activation = new ActivationService(deps);
    this.handOver = new HandOverService(deps);
  }

  async start(): Promise<void> {
    await this.keys.start();
  }

  /** An external locking system (a UHPPOTE board) confirmed these keys' held changes. */
  confirmLockingSystemWrites(keyIds: number[]): Promise<number> {
    return this.keys.confirmLockingSystemWrites(keyIds);
  }

  /** The access lists' confirmation: keys whose change every gateway applied become `handed_over`. */
  confirmApplied(tx: Queryable, keyIds: number[]): Promise<void> {
    return this.keys.confirmApplied(tx, keyIds);
  }

  /** The person's live keys inside a scope, for GET /people/{id}. */
  keysOfPerson(scopeLocationId: number, personId: string): Promise<EmbeddedKey[]> {
    return this.keys.keysOfPerson(scopeLocationId, personId);
  }

  /** A person moved to another location: what their keys open is worked out again (gateway lists included). */
  personMoved(tx: Transaction, personId: string, accountId: number): Promise<void> {
    return this.keys.personMoved(tx, personId, accountId);
  }

  /**
   * A deleted person keeps no access: inside the deletion's transaction, every live key of theirs is
   * revoked (as DELETE /keys/{id} would) and every pending invitation cancelled.
   */
  async revokeEverythingOf(tx: Transaction, personId: string, now: Date): Promise<void> {
    await this.keys.revokeKeysOf(tx, personId, now);
    await this.invitations.cancelInvitationsOf(tx, personId, now);
  }
}
