// Keys handed over and taken back at the dashboard (operator API: POST /admin/v1/keys and
// /admin/v1/keys/{id}/return): cards, fobs and phone keys given without a setup link.
import type { Database } from '../../platform/db/index.ts';
import { errors, type ErrorDetail } from '../../platform/errors.ts';
import { findPerson } from '../people/index.ts';
import { checkGroups, emitKeyEvent, timestamp, type KeysDeps } from './common.ts';
import type { Key, OperatorKeyCreate } from './schemas.ts';
import { findKey, insertKey, markKeyReturned, toKey, type KeyRow } from './store.ts';

export class HandOverService {
  constructor(private readonly deps: KeysDeps) {}

  private get db(): Database {
    return this.deps.db;
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** A key `handed_over` from the start, with key.activated. */
  async createByOperator(body: OperatorKeyCreate): Promise<Key> {
    const person = await findPerson(this.db, null, body.person_id);
    if (!person) throw errors.invalidField('person_id', `No person ${body.person_id}.`);
    const details: ErrorDetail[] = [];
    const groups = body.security_groups ?? [];
    await checkGroups(this.db, person.location_id, groups, details);
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
      await emitKeyEvent(tx, 'key.activated', row, now);
      return toKey(row);
    });
  }

  /** The key stays listed, `returned`, with key.revoked; returning it again changes nothing. */
  async returnByOperator(id: number): Promise<Key> {
    const row = await findKey(this.db, null, id);
    if (!row) throw errors.notFound('key');
    if (row.state === 'returned') return toKey(row);
    const now = this.now();
    return this.db.transaction(async (tx) => {
      await markKeyReturned(tx, id, now);
      const returned = (await findKey(tx, null, id)) as KeyRow;
      await emitKeyEvent(tx, 'key.revoked', returned, now);
      return toKey(returned);
    });
  }
}
