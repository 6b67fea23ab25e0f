// What the services of the keys area share: their dependencies, the account read, the checks of
// security groups and date-times, the locking system of an account, and the key events.
import type { FastifyBaseLogger } from 'fastify';
import type { PageCaches } from '../../platform/page-cache.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database, Queryable } from '../../platform/db/index.ts';
import type { ErrorDetail } from '../../platform/errors.ts';
import { parseClientTimestamp } from '../../platform/time.ts';
import { parseCredential, type AccessLists } from '../access/index.ts';
import { unknownSecurityGroups } from '../catalog/index.ts';
import type { LockingSystem, LockingSystems } from '../locking-system/index.ts';
import type { MessageQueue } from '../notifications/index.ts';
import { emitDomainEvent } from '../webhooks/index.ts';
import { findAccount, keyWithCredential, type AccountRow, type KeyRow, type StoredCredential } from './store.ts';

export interface KeysDeps {
  db: Database;
  clock: Clock;
  lockingSystems: LockingSystems;
  messages: MessageQueue;
  publicUrl: string;
  brandName: string;
  revocationEnabled: boolean;
  log: FastifyBaseLogger;
  pages: PageCaches;
  /** Gateway access lists: refreshed in every transaction that changes what a key opens. */
  access: AccessLists;
}

/**
 * Inside a transaction pass `tx`: on PGlite a query outside it would wait for it to end. `find`: a service
 * tested on a fake store passes its own.
 */
export async function accountOf(db: Queryable, id: number, find: typeof findAccount = findAccount): Promise<AccountRow> {
  const row = await find(db, id);
  if (!row) throw new Error(`account ${id} not found`);
  return row;
}

/** The locking system the account syncs with. */
export function lockingSystemOf(lockingSystems: Pick<LockingSystems, 'forAccount'>, account: AccountRow): LockingSystem {
  return lockingSystems.forAccount({ id: account.id, lockingSystem: account.locking_system });
}

/** Codes must exist at `locationId` or a location above it; each unknown one is named by its index. */
export async function checkGroups(db: Queryable, locationId: number, codes: string[], details: ErrorDetail[]): Promise<void> {
  details.push(...(await unknownSecurityGroups(db, locationId, codes)));
}

/** A client's date-time, or null with a detail naming the field. */
export function timestamp(value: string, field: string, details: ErrorDetail[]): Date | null {
  const parsed = parseClientTimestamp(value);
  if (!parsed) details.push({ field, code: 'invalid', message: `${field} is not a valid date-time.` });
  return parsed;
}

/** key.activated or key.revoked, inside the caller's transaction (README: API notes, Key events). */
export async function emitKeyEvent(tx: Queryable, type: 'key.activated' | 'key.revoked', key: KeyRow, now: Date): Promise<void> {
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

/**
 * A credential as an operator typed it, normalised and ready to store; null with a detail on `credential`
 * when it is malformed or already presented by another key of the account that is in use.
 */
export async function credentialToStore(
  deps: Pick<KeysDeps, 'db' | 'access'>,
  accountId: number,
  input: string,
  exceptKeyId: number | null,
  details: ErrorDetail[],
): Promise<StoredCredential | null> {
  const parsed = parseCredential(input);
  if ('error' in parsed) {
    details.push({ field: 'credential', code: 'invalid', message: parsed.error });
    return null;
  }
  const hash = deps.access.lookupHash(parsed.credential);
  const holder = await keyWithCredential(deps.db, accountId, hash, exceptKeyId);
  if (holder !== null) {
    details.push({ field: 'credential', code: 'invalid', message: `Key ${holder} of this account already presents this credential; return that key first.` });
    return null;
  }
  return { hash, box: deps.access.seal(parsed.credential) };
}

/** The credential of a key in clear, for the operator's view; null when it has none. */
export function credentialOf(deps: Pick<KeysDeps, 'access'>, key: Pick<KeyRow, 'credential_box'>): string | null {
  return key.credential_box === null ? null : deps.access.open(key.credential_box);
}
