// The rules of keys and invitations (spec: Key, Invitation, states; Endpoints/Keys and Invitations).
import type { FastifyBaseLogger } from 'fastify';
import type { Caller } from '../../platform/auth.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { emitDomainEvent } from '../../platform/domain-events.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import { hashToken, newToken } from '../../platform/secrets.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { unknownSecurityGroups } from '../catalog/index.ts';
import { queueLockingSystemTask, type LockingSystems } from '../locking-system/index.ts';
import type { MessageQueue } from '../notifications/message-queue.ts';
import { invitationTemplate } from '../notifications/templates.ts';
import { findPerson, type PersonRow } from '../people/index.ts';
import { INVITATION_STATES, type Invitation, type InvitationCreated, type Key, type KeyCreate, type KeyUpdate, type OperatorKeyCreate } from './schemas.ts';
import {
  cancelInvitation,
  cancelInvitationsOfPerson,
  claimLink,
  findInvitation,
  findInvitationByToken,
  insertInvitation,
  listInvitations,
  markActivated,
  replaceLink,
  spendLink,
  toInvitation,
  useAllowance,
  whatItOpens,
  type InvitationRow,
} from './invitation-store.ts';
import {
  confirmHeldKeys,
  findAccount,
  findKey,
  insertKey,
  listKeys,
  liveKeysOfPerson,
  markKeyReturned,
  markKeyRevoked,
  toKey,
  updateKey,
  type AccountRow,
  type KeyRow,
} from './store.ts';

/** A setup link without a key expiry stays usable this long. */
export const LINK_LIFETIME_MS = 30 * 86_400_000;
/** An activation claimed longer ago than this (its instance died) may be claimed again. */
const ACTIVATION_CLAIM_MS = 120_000;

type ChannelChoice = 'sms' | 'email' | 'both';

export interface KeysDeps {
  db: Database;
  clock: Clock;
  lockingSystems: LockingSystems;
  messages: MessageQueue;
  publicUrl: string;
  brandName: string;
  revocationEnabled: boolean;
  log: FastifyBaseLogger;
}

export class KeysService {
  constructor(private readonly deps: KeysDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  // ---- keys -----------------------------------------------------------------------------------

  async listKeys(
    caller: Caller,
    query: { limit?: number; cursor?: string; person_id?: string; state?: string; security_group?: string },
  ): Promise<PageOf<Key>> {
    const limit = clampLimit(query.limit);
    const rows = await listKeys(
      this.db,
      caller.locationId,
      { personId: query.person_id ?? null, state: query.state ?? null, securityGroup: query.security_group ?? null },
      decodeCursor(query.cursor, 'number'),
      limit + 1,
    );
    return toPage(rows.map(toKey), limit, (k) => k.id);
  }

  async getKey(caller: Caller, id: number): Promise<Key> {
    const row = await findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    return toKey(row);
  }

  async updateKey(caller: Caller, id: number, body: KeyUpdate): Promise<Key> {
    const row = await findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    const details: ErrorDetail[] = [];
    if (row.managed_in_locking_system) {
      for (const field of ['security_groups', 'starts_at', 'expires_at'] as const) {
        if (body[field] !== undefined) details.push({ field, code: 'not_editable', message: `${field} of a fob managed in the locking system cannot be changed.` });
      }
      if (details.length > 0) throw errors.validation(details);
    }
    const startsAt = body.starts_at === undefined ? row.starts_at : timestamp(body.starts_at, 'starts_at', details);
    const expiresAt = body.expires_at === undefined ? row.expires_at : body.expires_at === null ? null : timestamp(body.expires_at, 'expires_at', details);
    if (body.security_groups) await this.checkGroups(row.person_location_id, body.security_groups, details);
    if (startsAt && expiresAt && expiresAt.getTime() <= startsAt.getTime()) {
      details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be after starts_at.' });
    }
    if (details.length > 0) throw errors.validation(details);

    const groups = body.security_groups ?? row.security_groups;
    const renamed = body.name !== undefined && body.name !== row.name;
    const accessChanged =
      !sameSet(groups, row.security_groups) || !sameInstant(startsAt, row.starts_at) || !sameInstant(expiresAt, row.expires_at);
    if (!renamed && !accessChanged) return toKey(row);

    const account = await this.account(row.account_id);
    // Written to the locking system first; a refusal changes nothing.
    const outcome = await this.deps.lockingSystems.forAccount({ id: account.id, lockingSystem: account.locking_system }).write('key.update', String(id));
    const now = this.now();
    return this.db.transaction(async (tx) => {
      // A pure rename keeps the state; any other change is `sent` until the locking system confirms it.
      const state = !accessChanged ? row.state : outcome === 'applied' ? 'handed_over' : 'sent';
      await updateKey(tx, id, { name: body.name ?? row.name, groups, startsAt: startsAt ?? row.starts_at, expiresAt, state }, now);
      const updated = (await findKey(tx, null, id)) as KeyRow;
      if (accessChanged && state === 'handed_over') await this.emitKeyEvent(tx, 'key.activated', updated, now);
      return toKey(updated);
    });
  }

  async revokeKey(caller: Caller, id: number): Promise<void> {
    if (!this.deps.revocationEnabled) throw errors.revocationDisabled();
    const row = await findKey(this.db, caller.locationId, id);
    if (!row) throw errors.notFound('key');
    const account = await this.account(row.account_id);
    await this.db.transaction((tx) => this.revokeInTransaction(tx, row, account, this.now()));
  }

  /**
   * A deleted person keeps no access: inside the deletion's transaction, every live key of theirs is
   * revoked (as DELETE /keys/{id} would) and every pending invitation cancelled.
   */
  async revokeEverythingOf(tx: Queryable, personId: string, now: Date): Promise<void> {
    for (const row of await liveKeysOfPerson(tx, personId)) {
      await this.revokeInTransaction(tx, row, await this.account(row.account_id, tx), now);
    }
    const cancelled = await cancelInvitationsOfPerson(tx, personId, now);
    await this.deps.messages.withdraw(tx, cancelled); // a cancelled link is not worth sending
  }

  /** The key expires at once and leaves every read; its removal from the locking system is queued. */
  private async revokeInTransaction(tx: Queryable, row: KeyRow, account: AccountRow, now: Date): Promise<void> {
    if (!(await markKeyRevoked(tx, row.id, now))) return; // revoked meanwhile: one event only
    if (account.locking_system) {
      await queueLockingSystemTask(tx, { accountId: account.id, operation: 'key.delete', entityId: String(row.id) }, now);
    }
    await this.emitKeyEvent(tx, 'key.revoked', { ...row, state: 'returned' }, now);
  }

  /** Sandbox: confirms every held key change of an account (`sent` to `handed_over`, key.activated). */
  async confirmHeldChanges(accountId: number): Promise<number> {
    const now = this.now();
    return this.db.transaction(async (tx) => {
      const ids = await confirmHeldKeys(tx, accountId, now);
      for (const id of ids) await this.emitKeyEvent(tx, 'key.activated', (await findKey(tx, null, id)) as KeyRow, now);
      return ids.length;
    });
  }

  // ---- operator: dashboard hand-over and return -----------------------------------------------

  async createByOperator(body: OperatorKeyCreate): Promise<Key> {
    const person = await findPerson(this.db, null, body.person_id);
    if (!person) throw errors.invalidField('person_id', `No person ${body.person_id}.`);
    const details: ErrorDetail[] = [];
    const groups = body.security_groups ?? [];
    await this.checkGroups(person.location_id, groups, details);
    const startsAt = body.starts_at === undefined ? this.now() : timestamp(body.starts_at, 'starts_at', details);
    const expiresAt = body.expires_at == null ? null : timestamp(body.expires_at, 'expires_at', details);
    if (details.length > 0) throw errors.validation(details);
    const now = this.now();
    return this.db.transaction(async (tx) => {
      const id = await insertKey(
        tx,
        {
          accountId: person.account_id,
          personId: person.id,
          invitationId: null,
          type: body.type,
          name: body.name,
          groups,
          startsAt: startsAt as Date,
          expiresAt,
          managed: body.managed_in_locking_system ?? false,
        },
        now,
      );
      const row = (await findKey(tx, null, id)) as KeyRow;
      await this.emitKeyEvent(tx, 'key.activated', row, now);
      return toKey(row);
    });
  }

  async returnByOperator(id: number): Promise<Key> {
    const row = await findKey(this.db, null, id);
    if (!row) throw errors.notFound('key');
    if (row.state === 'returned') return toKey(row);
    const now = this.now();
    return this.db.transaction(async (tx) => {
      await markKeyReturned(tx, id, now);
      const returned = (await findKey(tx, null, id)) as KeyRow;
      await this.emitKeyEvent(tx, 'key.revoked', returned, now);
      return toKey(returned);
    });
  }

  // ---- invitations ----------------------------------------------------------------------------

  /** POST /keys: an invitation whose setup link goes out by SMS, e-mail or both. */
  async issue(caller: Caller, body: KeyCreate): Promise<InvitationCreated> {
    const person = await findPerson(this.db, caller.locationId, body.person_id);
    if (!person) throw errors.notFound('person');
    const account = await this.account(person.account_id);
    const channel = body.channel ?? 'sms';
    const details: ErrorDetail[] = [];
    await this.checkGroups(caller.locationId, body.security_groups, details);
    this.checkChannel(account, person, channel, details);
    const now = this.now();
    const startsAt = body.starts_at === undefined ? now : timestamp(body.starts_at, 'starts_at', details);
    const keyExpiresAt = body.expires_at === undefined ? null : timestamp(body.expires_at, 'expires_at', details);
    if (keyExpiresAt && keyExpiresAt.getTime() <= Math.max(now.getTime(), startsAt?.getTime() ?? 0)) {
      details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be in the future and after starts_at.' });
    }
    if (details.length > 0) throw errors.validation(details);

    const token = newToken('');
    const invitation = await this.db.transaction(async (tx) => {
      if (!(await useAllowance(tx, account.id))) throw errors.entitlementExceeded();
      const id = await insertInvitation(
        tx,
        {
          accountId: account.id,
          personId: person.id,
          name: body.name ?? 'Phone key',
          groups: body.security_groups,
          startsAt: startsAt as Date,
          keyExpiresAt,
          expiresAt: keyExpiresAt ?? new Date(now.getTime() + LINK_LIFETIME_MS),
          channel,
          tokenHash: hashToken(token),
        },
        now,
      );
      const invitation = (await findInvitation(tx, now, null, id)) as InvitationRow;
      await this.sendLink(tx, invitation, channel, token, now);
      return invitation;
    });
    this.deps.messages.kick();
    return {
      invitation_id: invitation.id,
      person_id: person.id,
      security_groups: invitation.security_groups,
      state: 'sent',
      sent: { email: channel !== 'sms', sms: channel !== 'email' },
    };
  }

  async listInvitations(caller: Caller, query: { limit?: number; cursor?: string; person_id?: string; state?: string }): Promise<PageOf<Invitation>> {
    if (query.state !== undefined && !(INVITATION_STATES as readonly string[]).includes(query.state)) {
      throw errors.invalidField('state', `state must be one of ${INVITATION_STATES.join(', ')}.`);
    }
    const limit = clampLimit(query.limit);
    const rows = await listInvitations(
      this.db,
      this.now(),
      caller.locationId,
      { personId: query.person_id ?? null, state: query.state ?? null },
      decodeCursor(query.cursor, 'number'),
      limit + 1,
    );
    return toPage(rows.map(toInvitation), limit, (i) => i.id);
  }

  async getInvitation(caller: Caller, id: number): Promise<Invitation> {
    return toInvitation(await this.invitationInScope(caller, id));
  }

  async cancelInvitation(caller: Caller, id: number): Promise<void> {
    const invitation = await this.invitationInScope(caller, id);
    if (invitation.state !== 'pending') throw errors.invitationNotPending();
    await this.db.transaction(async (tx) => {
      if (!(await cancelInvitation(tx, id, this.now()))) throw errors.invitationNotPending();
      await this.deps.messages.withdraw(tx, [id]); // a cancelled link is not worth sending
    });
  }

  /** Sends the link again (a new link: the previous one stops working); uses one unit of the allowance. */
  async resend(caller: Caller, id: number, requested: ChannelChoice | undefined): Promise<Invitation> {
    const invitation = await this.invitationInScope(caller, id);
    if (invitation.state !== 'pending') throw errors.invitationNotPending();
    const person = (await findPerson(this.db, null, invitation.person_id)) as PersonRow;
    const account = await this.account(invitation.account_id);
    const channel = requested ?? 'sms';
    const details: ErrorDetail[] = [];
    this.checkChannel(account, person, channel, details);
    if (details.length > 0) throw errors.validation(details);

    const token = newToken('');
    const now = this.now();
    const updated = await this.db.transaction(async (tx) => {
      if (!(await replaceLink(tx, id, hashToken(token), channel, now))) throw errors.invitationNotPending();
      if (!(await useAllowance(tx, account.id))) throw errors.entitlementExceeded();
      await this.deps.messages.withdraw(tx, [id]); // messages still waiting carry the link that just stopped working
      const fresh = (await findInvitation(tx, now, null, id)) as InvitationRow;
      await this.sendLink(tx, fresh, channel, token, now);
      return fresh;
    });
    this.deps.messages.kick();
    // The answer shows the sending this call ordered, at once, as POST /keys reports `sent`: each channel
    // ordered carries the time of the order; the stored times are the provider's acceptances (README).
    const answer = toInvitation(updated);
    const orderedAt = now.toISOString();
    return {
      ...answer,
      sent: {
        email_at: channel !== 'sms' ? orderedAt : answer.sent.email_at,
        sms_at: channel !== 'email' ? orderedAt : answer.sent.sms_at,
      },
    };
  }

  // ---- setup links ----------------------------------------------------------------------------

  /** What a setup-link page shows, or null when the link cannot be used. */
  async describeLink(token: string): Promise<{ invitation: InvitationRow; opens: string[] } | null> {
    const invitation = await findInvitationByToken(this.db, this.now(), hashToken(token));
    if (!invitation || invitation.state !== 'pending') return null;
    return { invitation, opens: await whatItOpens(this.db, invitation.account_id, invitation.security_groups) };
  }

  /**
   * Activates a setup link: one key, `handed_over`, `key.activated`. The link is claimed atomically
   * first, so of two concurrent activations one creates the key and the other finds the link used.
   */
  async activate(token: string): Promise<{ key_id: number; invitation_id: number }> {
    const now = this.now();
    const claimed = await claimLink(this.db, hashToken(token), now, new Date(now.getTime() - ACTIVATION_CLAIM_MS));
    if (!claimed) throw errors.linkUnusable();
    const account = await this.account(claimed.account_id);
    try {
      await this.deps.lockingSystems.forAccount({ id: account.id, lockingSystem: account.locking_system }).write('key.create', `invitation:${claimed.id}`);
    } catch (error) {
      // The single use is spent without a key: the invitation now reads `expired`.
      await spendLink(this.db, claimed.id, this.now());
      throw error;
    }
    return this.db.transaction(async (tx) => {
      // A cancel that arrived while the locking system answered does not stop this scan: the key is made
      // and the invitation reads `cancelled` (spec: Invitation state).
      const invitation = (await findInvitation(tx, now, null, claimed.id)) as InvitationRow;
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
        },
        now,
      );
      await markActivated(tx, invitation.id, keyId, now);
      await this.emitKeyEvent(tx, 'key.activated', (await findKey(tx, null, keyId)) as KeyRow, now);
      return { key_id: keyId, invitation_id: invitation.id };
    });
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** Inside a transaction pass `tx`: on PGlite a query outside it would wait for it to end. */
  private async account(id: number, db: Queryable = this.db): Promise<AccountRow> {
    const row = await findAccount(db, id);
    if (!row) throw new Error(`account ${id} not found`);
    return row;
  }

  private async invitationInScope(caller: Caller, id: number): Promise<InvitationRow> {
    const invitation = await findInvitation(this.db, this.now(), caller.locationId, id);
    if (!invitation) throw errors.notFound('invitation');
    return invitation;
  }

  /** Codes must exist at `locationId` or a location above it; each unknown one is named by its index. */
  private async checkGroups(locationId: number, codes: string[], details: ErrorDetail[]): Promise<void> {
    details.push(...(await unknownSecurityGroups(this.db, locationId, codes)));
  }

  private checkChannel(account: AccountRow, person: PersonRow, channel: ChannelChoice, details: ErrorDetail[]): void {
    const wantsSms = channel !== 'email';
    const wantsEmail = channel !== 'sms';
    if (wantsSms && !account.sms_enabled) {
      details.push({ field: 'channel', code: 'sms_disabled', message: 'SMS is not enabled for this account.' });
    } else if ((wantsSms && !person.phone) || (wantsEmail && !person.email)) {
      details.push({ field: 'channel', code: 'invalid', message: `The person has no ${wantsSms && !person.phone ? 'phone number' : 'e-mail address'}.` });
    }
  }

  /** Queues the link's messages and emits key.issued, inside the invitation's transaction. */
  private async sendLink(tx: Queryable, invitation: InvitationRow, channel: ChannelChoice, token: string, now: Date): Promise<void> {
    const link = `${this.deps.publicUrl}/activate/${token}`;
    const template = invitationTemplate(invitation.person_language);
    const text = {
      brand: this.deps.brandName,
      personName: invitation.person_name,
      opens: await whatItOpens(tx, invitation.account_id, invitation.security_groups),
      link,
      expiresAt: invitation.expires_at,
    };
    if (channel !== 'email' && invitation.person_phone) {
      await this.deps.messages.enqueue(tx, invitation.account_id, invitation.id, {
        channel: 'sms',
        to: invitation.person_phone,
        subject: template.subject(text),
        body: template.sms(text),
        link,
      });
    }
    if (channel !== 'sms' && invitation.person_email) {
      await this.deps.messages.enqueue(tx, invitation.account_id, invitation.id, {
        channel: 'email',
        to: invitation.person_email,
        subject: template.subject(text),
        body: template.email(text),
        link,
      });
    }
    await emitDomainEvent(tx, {
      type: 'key.issued',
      accountId: invitation.account_id,
      locationId: invitation.person_location_id,
      personId: invitation.person_id,
      data: {
        invitation_id: invitation.id,
        channel,
        person: { id: invitation.person_id, name: invitation.person_name, email: invitation.person_email },
        security_groups: invitation.security_groups,
        starts_at: invitation.starts_at.toISOString(),
        expires_at: invitation.expires_at.toISOString(),
      },
      occurredAt: now,
    });
  }

  private async emitKeyEvent(tx: Queryable, type: 'key.activated' | 'key.revoked', key: KeyRow, now: Date): Promise<void> {
    await emitDomainEvent(tx, {
      type,
      accountId: key.account_id,
      locationId: key.person_location_id,
      personId: key.person_id,
      data: {
        id: key.id,
        type,
        occurred_at: now.toISOString(),
        person: { id: key.person_id, name: key.person_name, email: key.person_email },
        key: { id: key.id, name: key.name, state: key.state },
      },
      occurredAt: now,
    });
  }
}


function timestamp(value: string, field: string, details: ErrorDetail[]): Date | null {
  const parsed = parseClientTimestamp(value);
  if (!parsed) details.push({ field, code: 'invalid', message: `${field} is not a valid date-time.` });
  return parsed;
}

function sameSet(a: string[], b: string[]): boolean {
  const left = new Set(a);
  return left.size === new Set(b).size && b.every((x) => left.has(x));
}

function sameInstant(a: Date | null, b: Date | null): boolean {
  return (a?.getTime() ?? null) === (b?.getTime() ?? null);
}
