// Setup links (spec: Invitation; README: API notes, Setup links): what a link's page shows, and the
// activation that turns a pending invitation into a key.
import { newPhoneCredential } from '../access/index.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import { hashToken } from '../../platform/secrets.ts';
import { queueLockingSystemTask } from '../locking-system/index.ts';
import { accountOf, emitKeyEvent, lockingSystemOf, type KeysDeps } from './common.ts';
import { claimLink, findInvitation, findInvitationByToken, markActivated, releaseClaim, spendLink, whatItOpens, type InvitationRow } from './invitation-store.ts';
import { findKey, holdLivePerson, insertKey, type KeyRow } from './store.ts';

/** An activation claimed longer ago than this (its instance died) may be claimed again. */
const ACTIVATION_CLAIM_MS = 120_000;

export class ActivationService {
  constructor(private readonly deps: KeysDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** What a setup-link page shows, or null when the link cannot be used. */
  async describeLink(token: string): Promise<{ invitation: InvitationRow; opens: string[] } | null> {
    const invitation = await findInvitationByToken(this.db, this.now(), hashToken(token));
    if (!invitation || invitation.state !== 'pending') return null;
    return { invitation, opens: await whatItOpens(this.db, invitation.account_id, invitation.person_location_id, invitation.security_groups) };
  }

  /**
   * Activates a setup link: one key, `handed_over`, `key.activated`. The link is claimed atomically
   * first, so of two concurrent activations one creates the key and the other finds the link used.
   * `bind` runs in the key's transaction (the holder's passkey): if it fails, no key is made and the link
   * is released at once for another try, rather than held until its claim goes stale.
   */
  async activate(token: string, bind?: (tx: Queryable, keyId: number) => Promise<void>): Promise<{ key_id: number; invitation_id: number }> {
    const now = this.now();
    const claimed = await claimLink(this.db, hashToken(token), now, new Date(now.getTime() - ACTIVATION_CLAIM_MS));
    if (!claimed) throw errors.linkUnusable();
    const account = await accountOf(this.db, claimed.account_id);
    try {
      await lockingSystemOf(this.deps.lockingSystems, account).write('key.create', `invitation:${claimed.id}`);
    } catch (error) {
      // The single use is spent without a key: the invitation now reads `expired`.
      await spendLink(this.db, claimed.id, this.now());
      throw error;
    }
    const phoneCredential = newPhoneCredential();
    const activated = await this.db.transaction(async (tx) => {
      // A cancel that arrived while the locking system answered does not stop this scan: the key is made
      // and the invitation reads `cancelled` (spec: Invitation state).
      const invitation = (await findInvitation(tx, now, null, claimed.id)) as InvitationRow;
      // The person deleted meanwhile (their keys revoked, their invitations cancelled): no key for someone gone,
      // and the locking system, already told of it, is told to remove it (a task, retried until it takes).
      if (!(await holdLivePerson(tx, invitation.person_id))) {
        if (account.locking_system) {
          await queueLockingSystemTask(tx, { accountId: account.id, operation: 'key.delete', entityId: `invitation:${claimed.id}` }, now);
        }
        return null;
      }
      const keyId = await insertKey(
        tx,
        {
          accountId: account.id,
          personId: invitation.person_id,
          invitationId: invitation.id,
          type: 'digital',
          name: invitation.name,
          groups: invitation.security_groups,
          startsAt: invitation.starts_at,
          expiresAt: invitation.key_expires_at,
          managed: false,
          // The holder's device presents a credential of its own (the phone-key page builds on it).
          credential: { hash: this.deps.access.lookupHash(phoneCredential), box: this.deps.access.seal(phoneCredential) },
        },
        now,
      );
      await bind?.(tx, keyId);
      await this.deps.access.refresh(tx, account.id, [keyId]);
      await markActivated(tx, invitation.id, keyId, now);
      await this.deps.messages.withdraw(tx, [invitation.id]); // messages still waiting carry the link just used
      await emitKeyEvent(tx, 'key.activated', (await findKey(tx, null, keyId)) as KeyRow, now);
      return { key_id: keyId, invitation_id: invitation.id };
    }).catch(async (error: unknown) => {
      await releaseClaim(this.db, claimed.id);
      throw error;
    });
    if (!activated) throw errors.linkUnusable();
    return activated;
  }
}
