// Each gateway's access list (README "How a door decides"): what every key with a credential may open among
// the gateway's locks, kept as one entry per (gateway, key) and versioned per gateway. Whoever changes what a
// key opens (a key, a person, a security group, a lock, a time zone) calls refresh() inside its own
// transaction; the entries that changed get the gateway's next version, and once committed this instance
// pushes them to the gateways (gateway-sync.ts). A key change waits (`sent`) until every gateway it changed on
// has applied it.
import { randomUUID } from 'node:crypto';
import { ACCESS_KEYS_CHANNEL, ACCESS_LISTS_CHANNEL, ACCESS_REBUILDS_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Queryable, Transaction } from '../../platform/db/index.ts';
import type { SecretBox } from '../../platform/secret-box.ts';
import { credentialDigest } from './credentials.ts';
import { keyGroupIds, lockAccess, type AccountFacts, type LockFacts } from './resolve.ts';
import {
  bumpListVersion,
  claimRebuild,
  currentEntries,
  gatewaysPendingFor,
  keysForLists,
  keysNotPending,
  loadAccountFacts,
  lockAccountGateways,
  markPending,
  nextKeyIds,
  recordRebuildPart,
  replaceListSecret,
  requestRebuild,
  writeEntries,
  type ListKeyRow,
} from './store.ts';


/**
 * Told inside the change's transaction that what keys open changed (null: every key of the account), as the
 * gateways' lists are: an external locking system queues its writes here (src/modules/controllers).
 */
export type KeysChanged = (tx: Transaction, accountId: number, keyIds: number[] | null) => Promise<void>;

/** Confirms keys whose change every gateway has applied (`sent` → `handed_over`, key.activated). */
export type ConfirmKeys = (tx: Queryable, keyIds: number[]) => Promise<void>;

/** One entry as the gateway gets it. `h`: the credential's HMAC under the gateway's secret. */
export interface AccessEntry {
  key_id: number;
  h: string;
  starts_at: string;
  expires_at: string | null;
  locks: Array<{ lock_id: number; windows: null } | { lock_id: number; windows: unknown[]; time_zone: string }>;
}

export class AccessLists {
  /** Names this instance in its notifications: only the instance that committed a change pushes it. */
  readonly instance = randomUUID();
  private readonly lookupKey: string;

  constructor(
    private readonly secrets: SecretBox,
    private readonly clock: Clock,
    private confirmKeys: ConfirmKeys = async () => undefined,
  ) {
    this.lookupKey = secrets.derive('latchkey credential lookup v1');
  }

  private readonly keysChanged: KeysChanged[] = [];

  /** Another module that must follow every change to what keys open (in the change's transaction). */
  onKeysChanged(listener: KeysChanged): void {
    this.keysChanged.push(listener);
  }

  /** Wired by the composition root (the keys module confirms; it also calls refresh). */
  onConfirm(confirm: ConfirmKeys): void {
    this.confirmKeys = confirm;
  }

  /** Keys no gateway change waits for any more: `sent` → `handed_over` (the keys module's rule). */
  async confirm(tx: Queryable, keyIds: number[]): Promise<void> {
    if (keyIds.length > 0) await this.confirmKeys(tx, keyIds);
  }

  /** A gateway's new list secret (its password was rotated): its list is built anew under it and sent whole. */
  async replaceSecret(tx: Queryable, gatewayId: number, secret: string): Promise<void> {
    await replaceListSecret(tx, gatewayId, this.secrets.seal(secret));
  }

  /** The gateways a key's last change still waits for (it reads `sent` until none is left). */
  waitingGateways(db: Queryable, keyId: number): Promise<number[]> {
    return gatewaysPendingFor(db, keyId);
  }

  /** The server-side HMAC a credential is found by (never the credential itself). */
  lookupHash(credential: string): string {
    return credentialDigest(this.lookupKey, credential);
  }

  seal(value: string): string {
    return this.secrets.seal(value);
  }

  open(sealed: string): string {
    return this.secrets.open(sealed);
  }

  /**
   * Brings the account's gateway lists in line with its keys (`keyIds`), in this transaction. null: every key
   * (a security group, a lock, a time zone or a gateway's secret changed): the rebuild is asked for here and
   * made after the commit, part by part (rebuilds.ts), so a large account's change is not one long transaction.
   * `awaiting`: keys whose change waits for the gateways (confirmed here when no gateway holds a change of
   * theirs). Returns the gateways whose list changed.
   */
  async refresh(tx: Transaction, accountId: number, keyIds: number[] | null, awaiting: number[] = []): Promise<number[]> {
    for (const listener of this.keysChanged) await listener(tx, accountId, keyIds);
    if (keyIds !== null) return this.build(tx, accountId, keyIds, awaiting);
    await requestRebuild(tx, accountId, this.clock.now());
    await tx.notify(ACCESS_REBUILDS_CHANNEL, String(accountId));
    await tx.notify(ACCESS_KEYS_CHANNEL, String(accountId));
    await this.confirm(tx, await keysNotPending(tx, awaiting));
    return [];
  }

  /**
   * The next part of the account's rebuild, in this transaction: `built` (more to come), `done`, or `busy`
   * (nothing asked, or another instance is building a part right now).
   */
  async buildPart(tx: Transaction, accountId: number, size: number): Promise<'built' | 'done' | 'busy'> {
    const rebuild = await claimRebuild(tx, accountId);
    if (!rebuild) return 'busy';
    // The gateways' rows first, as every key change takes them: a key change still open finishes before the
    // part reads its keys and the rules, so no key is built from rules read before this rebuild was asked for.
    await lockAccountGateways(tx, accountId);
    const keyIds = await nextKeyIds(tx, accountId, rebuild.afterKeyId, rebuild.wrapped ? rebuild.untilKeyId : null, size);
    if (keyIds.length > 0) await this.build(tx, accountId, keyIds, []);
    return recordRebuildPart(tx, accountId, rebuild, keyIds, size);
  }

  private async build(tx: Transaction, accountId: number, keyIds: number[], awaiting: number[]): Promise<number[]> {
    const gateways = await lockAccountGateways(tx, accountId);
    const withSecret = gateways.filter((g) => g.access_secret_box !== null);
    const changedGateways: number[] = [];
    if (withSecret.length > 0) {
      const facts = await loadAccountFacts(tx, accountId);
      const keys = await keysForLists(tx, accountId, keyIds, this.clock.now());
      const existing = await currentEntries(tx, withSecret.map((g) => g.id), keyIds);
      const stored = new Map(existing.map((row) => [`${row.gateway_id}:${row.key_id}`, row.entry]));
      const credentials = new Map(keys.map((key) => [key.id, this.secrets.open(key.credential_box)]));
      const awaitingSet = new Set(awaiting);
      for (const gateway of withSecret) {
        const gatewaySecret = this.secrets.open(gateway.access_secret_box as string);
        const locks = [...facts.locks.values()].filter((lock) => lock.gatewayId === gateway.id);
        const changes: Array<{ keyId: number; entry: string | null }> = [];
        const seen = new Set<number>();
        for (const key of keys) {
          const entry = entryFor(facts, locks, key, gatewaySecret, credentials.get(key.id) as string);
          if (entry === null) continue;
          seen.add(key.id);
          if (stored.get(`${gateway.id}:${key.id}`) !== entry) changes.push({ keyId: key.id, entry });
        }
        // Entries of keys that no longer open anything here (or are gone: revoked, expired, no credential).
        for (const row of existing) {
          if (row.gateway_id === gateway.id && row.entry !== null && !seen.has(row.key_id)) changes.push({ keyId: row.key_id, entry: null });
        }
        if (changes.length === 0) continue;
        const version = await bumpListVersion(tx, gateway.id);
        await writeEntries(tx, gateway.id, version, changes);
        await markPending(tx, gateway.id, version, changes.map((c) => c.keyId).filter((id) => awaitingSet.has(id)));
        changedGateways.push(gateway.id);
      }
    }
    await this.confirm(tx, await keysNotPending(tx, awaiting));
    await tx.notify(ACCESS_KEYS_CHANNEL, String(accountId));
    if (changedGateways.length > 0) await tx.notify(ACCESS_LISTS_CHANNEL, `${this.instance}|${randomUUID()}|${changedGateways.join(',')}`);
    return changedGateways;
  }
}

/** The entry of a key on a gateway, as sent (stable text: compared as it is), or null when it opens none of its locks. */
export function entryFor(facts: AccountFacts, gatewayLocks: LockFacts[], key: ListKeyRow, gatewaySecret: string, credential: string): string | null {
  const groups = keyGroupIds(facts, key.security_groups, key.person_path.map(Number));
  if (groups.size === 0) return null;
  const locks: AccessEntry['locks'] = [];
  for (const lock of gatewayLocks) {
    const access = lockAccess(groups, lock);
    if (!access) continue;
    locks.push(access.windows === null ? { lock_id: lock.id, windows: null } : { lock_id: lock.id, windows: access.windows, time_zone: lock.timeZone });
  }
  if (locks.length === 0) return null;
  locks.sort((a, b) => a.lock_id - b.lock_id);
  const entry: AccessEntry = {
    key_id: Number(key.id),
    h: credentialDigest(gatewaySecret, credential),
    starts_at: key.starts_at.toISOString(),
    expires_at: key.expires_at?.toISOString() ?? null,
    locks,
  };
  return JSON.stringify(entry);
}
