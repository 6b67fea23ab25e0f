// The rules of invitations (spec: Invitation, states; Endpoints/Keys and Invitations): POST /keys issues
// one, its setup link goes out by SMS, e-mail or both; it can be listed, sent again or cancelled.
import type { Caller } from '../../platform/auth.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { clampLimit, decodeCursor, toPage, type PageOf } from '../../platform/pagination.ts';
import { hashToken, newToken } from '../../platform/secrets.ts';
import { invitationTemplate, type InvitationMessageSent } from '../notifications/index.ts';
import { livePerson, type PersonRow } from '../people/index.ts';
import { emitDomainEvent } from '../webhooks/index.ts';
import { accountOf, checkGroups, timestamp, type KeysDeps } from './common.ts';
import {
  cancelInvitation,
  cancelInvitationsOfPerson,
  findInvitation,
  insertInvitation,
  listInvitations,
  markMessageSent,
  replaceLink,
  toInvitation,
  useAllowance,
  whatItOpens,
  type InvitationRow,
} from './invitation-store.ts';
import { INVITATION_STATES, type Channel, type Invitation, type InvitationCreated, type InvitationListQuery, type KeyCreate } from './schemas.ts';
import { holdLivePerson, type AccountRow } from './store.ts';

/** A setup link without a key expiry stays usable this long. */
export const LINK_LIFETIME_MS = 30 * 86_400_000;

/** The message queue's port: the invitation keeps the time its channel was last accepted by the provider. */
export const invitationMessageSent: InvitationMessageSent = (tx, { invitationId, channel, sentAt }) => markMessageSent(tx, invitationId, channel, sentAt);

export class InvitationsService {
  constructor(private readonly deps: KeysDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** POST /keys: an invitation whose setup link goes out by SMS, e-mail or both. */
  async issue(caller: Caller, body: KeyCreate): Promise<InvitationCreated> {
    const person = await livePerson(this.db, caller.locationId, body.person_id);
    if (!person) throw errors.notFound('person');
    const account = await accountOf(this.db, person.account_id);
    const channel = body.channel ?? 'sms';
    const details: ErrorDetail[] = [];
    await checkGroups(this.db, person.location_id, body.security_groups, details);
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
      // Deleted since the check above: no link for someone gone (a deletion under way finishes first, or waits).
      if (!(await holdLivePerson(tx, person.id))) throw errors.notFound('person');
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

  async listInvitations(caller: Caller, query: InvitationListQuery): Promise<PageOf<Invitation>> {
    if (query.state !== undefined && !(INVITATION_STATES as readonly string[]).includes(query.state)) {
      // The spec's one query parameter answered with 422: the message says it was the query that failed.
      throw errors.queryValidation([{ field: 'state', code: 'invalid', message: `state must be one of ${INVITATION_STATES.join(', ')}.` }]);
    }
    const limit = clampLimit(query.limit);
    const rows = await listInvitations(
      this.db,
      this.now(),
      caller.locationId,
      { personId: query.person_id ?? null, state: query.state ?? null },
      decodeCursor(query.cursor, 'number', 'invitations'),
      limit + 1,
    );
    return toPage(rows.map(toInvitation), limit, (i) => i.id, 'invitations');
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

  /**
   * Inside a person's deletion: every pending invitation of theirs is cancelled, and the messages to them are
   * withdrawn if still waiting and keep no address or words.
   */
  async cancelInvitationsOf(tx: Queryable, personId: string, now: Date): Promise<void> {
    await cancelInvitationsOfPerson(tx, personId, now);
    await this.deps.messages.forgetRecipient(tx, personId);
  }

  /** Sends the link again (a new link: the previous one stops working); uses one unit of the allowance. */
  async resend(caller: Caller, id: number, requested: Channel | undefined): Promise<Invitation> {
    const invitation = await this.invitationInScope(caller, id);
    if (invitation.state !== 'pending') throw errors.invitationNotPending();
    const person = await livePerson(this.db, null, invitation.person_id);
    if (!person) throw errors.invitationNotPending(); // deleted meanwhile: the deletion cancelled the invitation
    const account = await accountOf(this.db, invitation.account_id);
    const channel = requested ?? 'sms';
    const details: ErrorDetail[] = [];
    this.checkChannel(account, person, channel, details);
    if (details.length > 0) throw errors.validation(details);

    const token = newToken('');
    const now = this.now();
    const updated = await this.db.transaction(async (tx) => {
      if (!(await holdLivePerson(tx, person.id))) throw errors.invitationNotPending(); // as above, since the check
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

  private async invitationInScope(caller: Caller, id: number): Promise<InvitationRow> {
    const invitation = await findInvitation(this.db, this.now(), caller.locationId, id);
    if (!invitation) throw errors.notFound('invitation');
    return invitation;
  }

  private checkChannel(account: AccountRow, person: PersonRow, channel: Channel, details: ErrorDetail[]): void {
    const wantsSms = channel !== 'email';
    const wantsEmail = channel !== 'sms';
    if (wantsSms && !account.sms_enabled) {
      details.push({ field: 'channel', code: 'sms_disabled', message: 'SMS is not enabled for this account.' });
    } else if ((wantsSms && !person.phone) || (wantsEmail && !person.email)) {
      details.push({ field: 'channel', code: 'invalid', message: `The person has no ${wantsSms && !person.phone ? 'phone number' : 'e-mail address'}.` });
    }
  }

  /** Queues the link's messages and emits key.issued, inside the invitation's transaction. */
  private async sendLink(tx: Queryable, invitation: InvitationRow, channel: Channel, token: string, now: Date): Promise<void> {
    const link = `${this.deps.publicUrl}/activate/${token}`;
    const template = invitationTemplate(invitation.person_language);
    const text = {
      brand: this.deps.brandName,
      personName: invitation.person_name,
      opens: await whatItOpens(tx, invitation.account_id, invitation.person_location_id, invitation.security_groups),
      link,
      expiresAt: invitation.expires_at,
    };
    const sends = [
      { channel: 'sms' as const, to: channel !== 'email' ? invitation.person_phone : null, body: template.sms(text) },
      { channel: 'email' as const, to: channel !== 'sms' ? invitation.person_email : null, body: template.email(text) },
    ];
    for (const send of sends) {
      if (!send.to) continue;
      await this.deps.messages.enqueue(tx, invitation.account_id, invitation.id, { ...send, to: send.to, subject: template.subject(text), link });
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
}
