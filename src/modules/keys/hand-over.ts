// Keys handed over and taken back at the dashboard (operator API: POST /admin/v1/keys, GET and PATCH
// /admin/v1/keys/{id}, POST /admin/v1/keys/{id}/return): cards, fobs and phone keys given without a setup
// link, and the credential each presents at a reader.
import { newPhoneCredential } from '../access/index.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { livePerson } from '../people/index.ts';
import { accountOf, checkGroups, credentialOf, credentialToStore, emitKeyEvent, lockingSystemOf, timestamp, type KeysDeps } from './common.ts';
import type { OperatorKey, OperatorKeyCreate, OperatorKeyUpdate } from './schemas.ts';
import { findKey, holdLivePerson, insertKey, lockLiveKey, markKeyReturned, setKeyCredential, toKey, type KeyRow, type StoredCredential } from './store.ts';

/** The unique index on credentials refused a write: another key took the credential meanwhile. */
function credentialTaken(error: unknown): boolean {
  return (error as { code?: unknown; constraint?: unknown }).code === '23505' && String((error as { constraint?: unknown }).constraint ?? '').includes('keys_credential');
}

function credentialTakenError() {
  return errors.validation([{ field: 'credential', code: 'invalid', message: 'Another key of this account presents this credential now; return that key first.' }]);
}

export class HandOverService {
  constructor(private readonly deps: KeysDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** A credential the account's locking system cannot hold (a UHPPOTE board: Wiegand-26 only) is refused at the field. */
  private async lockingSystemTakes(accountId: number, credential: StoredCredential, details: ErrorDetail[]): Promise<void> {
    const system = lockingSystemOf(this.deps.lockingSystems, await accountOf(this.db, accountId));
    const problem = system.checkCredential?.(this.deps.access.open(credential.box)) ?? null;
    if (problem) details.push({ field: 'credential', code: 'invalid', message: problem });
  }

  /** A key `handed_over` from the start, with key.activated; a phone key gets a credential of its own. */
  async createByOperator(body: OperatorKeyCreate): Promise<OperatorKey> {
    const person = await livePerson(this.db, null, body.person_id);
    if (!person) throw errors.invalidField('person_id', `No person ${body.person_id}.`);
    const details: ErrorDetail[] = [];
    const groups = body.security_groups ?? [];
    await checkGroups(this.db, person.location_id, groups, details);
    const startsAt = body.starts_at === undefined ? this.now() : timestamp(body.starts_at, 'starts_at', details);
    const expiresAt = body.expires_at == null ? null : timestamp(body.expires_at, 'expires_at', details);
    // The public POST /v1/keys's rule: a key handed over already expired, or ending before it starts, opens nothing.
    if (expiresAt && expiresAt.getTime() <= Math.max(this.now().getTime(), startsAt?.getTime() ?? 0)) {
      details.push({ field: 'expires_at', code: 'invalid', message: 'expires_at must be in the future and after starts_at.' });
    }
    let credential: StoredCredential | null = null;
    if (body.credential != null) {
      credential = await credentialToStore(this.deps, person.account_id, body.credential, null, details);
      if (credential) await this.lockingSystemTakes(person.account_id, credential, details);
    } else if (body.type === 'digital') credential = await credentialToStore(this.deps, person.account_id, newPhoneCredential(), null, details);
    if (details.length > 0) throw errors.validation(details);
    const now = this.now();
    try {
      return await this.db.transaction(async (tx) => {
        // The person deleted since the check above: their deletion revoked the keys it saw, not this one. Holding
        // their row makes a deletion under way finish first (then this refuses) or wait for this key (then it revokes it).
        if (!(await holdLivePerson(tx, person.id))) throw errors.invalidField('person_id', `No person ${body.person_id}.`);
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
            credential,
          },
          now,
        );
        await this.deps.access.refresh(tx, person.account_id, [id]);
        const row = (await findKey(tx, null, id)) as KeyRow;
        await emitKeyEvent(tx, 'key.activated', row, now);
        return this.toOperatorKey(tx, row);
      });
    } catch (error) {
      if (credentialTaken(error)) throw credentialTakenError();
      throw error;
    }
  }

  async getForOperator(id: number): Promise<OperatorKey> {
    const row = await findKey(this.db, null, id);
    if (!row) throw errors.notFound('key');
    return this.toOperatorKey(this.db, row);
  }

  /**
   * A new credential, or none. Like any change of what a key opens, it is `sent` until every gateway holding
   * the key has applied it (at once when none does), then `handed_over` with key.activated; an account synced
   * with an external locking system keeps the state its locking system gives.
   */
  async setCredential(id: number, body: OperatorKeyUpdate): Promise<OperatorKey> {
    const row = await findKey(this.db, null, id);
    if (!row) throw errors.notFound('key');
    const details: ErrorDetail[] = [];
    const credential = body.credential === null ? null : await credentialToStore(this.deps, row.account_id, body.credential, id, details);
    if (credential) await this.lockingSystemTakes(row.account_id, credential, details);
    if (details.length > 0) throw errors.validation(details);
    const unchanged = credential === null ? row.credential_box === null : row.credential_box !== null && credentialOf(this.deps, row) === this.deps.access.open(credential.box);
    if (unchanged) return this.toOperatorKey(this.db, row);
    const account = await accountOf(this.db, row.account_id);
    const now = this.now();
    let changed: OperatorKey | null;
    try {
      changed = await this.db.transaction(async (tx) => {
        // The key as it is now (revoked or returned since it was read): its state is kept, not the one read.
        const current = await lockLiveKey(tx, id);
        if (!current) return null;
        const waits = current.state === 'handed_over' && account.locking_system === null;
        await setKeyCredential(tx, id, credential, waits ? 'sent' : current.state, now);
        await this.deps.access.refresh(tx, row.account_id, [id], waits ? [id] : []);
        return this.toOperatorKey(tx, (await findKey(tx, null, id)) as KeyRow);
      });
    } catch (error) {
      if (credentialTaken(error)) throw credentialTakenError();
      throw error;
    }
    if (!changed) throw errors.notFound('key');
    return changed;
  }

  /** The key stays listed, `returned`, with key.revoked; returning it again changes nothing. */
  async returnByOperator(id: number): Promise<OperatorKey> {
    const row = await findKey(this.db, null, id);
    if (!row) throw errors.notFound('key');
    if (row.state === 'returned') return this.toOperatorKey(this.db, row);
    const now = this.now();
    const returned = await this.db.transaction(async (tx) => {
      // Revoked meanwhile: gone (404); returned meanwhile: as it is, one key.revoked only.
      const current = await lockLiveKey(tx, id);
      if (!current || current.state === 'returned') return current;
      await markKeyReturned(tx, id, now);
      await this.deps.access.refresh(tx, row.account_id, [id]);
      const changed = (await findKey(tx, null, id)) as KeyRow;
      await emitKeyEvent(tx, 'key.revoked', changed, now);
      return changed;
    });
    if (!returned) throw errors.notFound('key');
    return this.toOperatorKey(this.db, returned);
  }

  /** Read through `db`, so that a transaction's answer sees the waits its own change made. */
  private async toOperatorKey(db: Queryable, row: KeyRow): Promise<OperatorKey> {
    return { ...toKey(row), credential: credentialOf(this.deps, row), waiting_for_gateways: await this.deps.access.waitingGateways(db, row.id) };
  }
}
