// The gateway simulator's copy of its access list (docs/spec/gateway-mqtt.md, "Access decisions"): applied
// from the service's list messages, kept on disk so that it survives a restart, and decided from with the
// service's own decision function while the link is down. It holds HMACs of credentials, never credentials,
// and the door events decided from it until the service has them.
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { credentialDigest, gatewayAccessSecret, parseCredential } from '../../../src/modules/access/credentials.ts';
import { decide } from '../../../src/modules/access/decision.ts';
import type { Decision, TimeWindow } from '../../../src/modules/access/types.ts';

export interface CopyEntry {
  key_id: number;
  h: string;
  starts_at: string;
  expires_at: string | null;
  locks: Array<{ lock_id: number; windows: TimeWindow[] | null; time_zone?: string }>;
}

export interface ListMessage {
  type: 'full' | 'changes';
  from?: number;
  version: number;
  valid_until: string;
  part: number;
  parts: number;
  entries: CopyEntry[];
  removed: number[];
}

/** A door event decided from the copy, kept until the service acknowledged it. */
export interface PendingEvent {
  id: string;
  lock_id: number;
  type: 'access.granted' | 'access.denied';
  occurred_at: string;
  key_id: number | null;
  reason: string | null;
}

/** What applying a list message did: applied (publish `access/applied`), waiting for more parts, ignored, or a gap. */
export type Applied = { outcome: 'applied'; version: number } | { outcome: 'partial' | 'ignored' } | { outcome: 'gap'; version: number };

interface Stored {
  version: number;
  valid_until: string | null;
  entries: CopyEntry[];
  pending_events: PendingEvent[];
}

/**
 * The entries of one message, its pieces joined: a key whose entry did not fit one packet comes as several
 * entries with its `key_id`, each with some of its locks, and a lock may come in several with some of its
 * windows each (docs/spec/gateway-mqtt.md). One entry per key, one item per lock, windows together.
 */
export function joinPieces(entries: CopyEntry[]): CopyEntry[] {
  const byKey = new Map<number, CopyEntry>();
  for (const entry of entries) {
    const joined = byKey.get(entry.key_id);
    byKey.set(entry.key_id, joined ? { ...joined, locks: [...joined.locks, ...entry.locks] } : entry);
  }
  return [...byKey.values()].map((entry) => {
    const locks = new Map<number, CopyEntry['locks'][number]>();
    for (const lock of entry.locks) {
      const seen = locks.get(lock.lock_id);
      // Open at all times in one piece: at all times.
      const windows = !seen ? lock.windows : seen.windows === null || lock.windows === null ? null : [...seen.windows, ...lock.windows];
      locks.set(lock.lock_id, { ...(seen ?? lock), windows });
    }
    return locks.size === entry.locks.length ? entry : { ...entry, locks: [...locks.values()] };
  });
}

export class AccessCopy {
  version = 0;
  validUntil: Date | null = null;
  private readonly byKey = new Map<number, CopyEntry>();
  private readonly byHash = new Map<string, number>();
  readonly pendingEvents: PendingEvent[] = [];
  /** Parts of a message still arriving, by `type:version`. */
  private parts = new Map<string, ListMessage[]>();
  private readonly secret: string;

  constructor(
    password: string,
    /** Where the copy is kept; null: in memory only. */
    private readonly file: string | null,
  ) {
    this.secret = gatewayAccessSecret(password);
  }

  get size(): number {
    return this.byKey.size;
  }

  async load(): Promise<void> {
    if (!this.file) return;
    let stored: Stored;
    try {
      stored = JSON.parse(await readFile(this.file, 'utf8')) as Stored;
    } catch {
      return; // nothing kept yet (or unreadable: start empty and ask for the whole list)
    }
    this.version = stored.version;
    this.validUntil = stored.valid_until ? new Date(stored.valid_until) : null;
    for (const entry of stored.entries) this.put(entry);
    this.pendingEvents.push(...stored.pending_events);
  }

  /**
   * Written whole to a temporary file and renamed: a crash leaves the old copy or the new one, never half.
   * One write at a time, each of the state when it starts.
   */
  save(): Promise<void> {
    const next = this.saving.then(() => this.write());
    this.saving = next.catch(() => undefined);
    return next;
  }

  private saving: Promise<void> = Promise.resolve();

  private async write(): Promise<void> {
    if (!this.file) return;
    const stored: Stored = { version: this.version, valid_until: this.validUntil?.toISOString() ?? null, entries: [...this.byKey.values()], pending_events: this.pendingEvents };
    await mkdir(path.dirname(this.file), { recursive: true });
    const temp = `${this.file}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(stored), { mode: 0o600 });
    await rename(temp, this.file);
  }

  /**
   * Applies a list message once all its parts are here (docs/spec/gateway-mqtt.md): a whole list always
   * replaces the copy (it is what the service holds now); changes apply from the version held, renew the
   * copy's validity when they bring nothing new, and report a gap when they start above it.
   */
  apply(message: ListMessage): Applied {
    if (message.type === 'changes') {
      if ((message.from ?? 0) > this.version) return { outcome: 'gap', version: this.version };
      if (message.version <= this.version) {
        if (message.version === this.version) this.validUntil = new Date(message.valid_until);
        return { outcome: 'ignored' };
      }
    }
    const id = `${message.type}:${message.from ?? ''}:${message.version}`;
    const parts = [...(this.parts.get(id) ?? []).filter((p) => p.part !== message.part), message];
    if (parts.length < message.parts) {
      this.parts.set(id, parts);
      return { outcome: 'partial' };
    }
    this.parts.delete(id);
    if (message.type === 'full') {
      this.byKey.clear();
      this.byHash.clear();
    }
    for (const part of parts) for (const keyId of part.removed) this.remove(keyId);
    for (const entry of joinPieces(parts.flatMap((part) => part.entries))) this.put(entry);
    this.version = message.version;
    this.validUntil = new Date(message.valid_until);
    return { outcome: 'applied', version: message.version };
  }

  /** Past `valid_until` the copy grants nothing (fail secure); a gateway that never had a copy has none to expire. */
  expired(now: Date): boolean {
    return this.validUntil !== null && now.getTime() >= this.validUntil.getTime();
  }

  /**
   * The decision from the copy, or null when the copy cannot decide: the credential is not on it (ask the
   * service), or the copy expired (grant nothing from it).
   */
  decide(lockId: number, presented: string, now: Date): { decision: Decision; entry: CopyEntry } | { decision: null; why: 'unknown' | 'expired' } {
    const parsed = parseCredential(presented);
    const keyId = 'credential' in parsed ? this.byHash.get(credentialDigest(this.secret, parsed.credential)) : undefined;
    const entry = keyId === undefined ? undefined : this.byKey.get(keyId);
    if (!entry) return { decision: null, why: 'unknown' };
    if (this.expired(now)) return { decision: null, why: 'expired' };
    const lock = entry.locks.find((l) => l.lock_id === lockId);
    const key = { id: entry.key_id, state: 'handed_over', startsAt: new Date(entry.starts_at), expiresAt: entry.expires_at ? new Date(entry.expires_at) : null };
    return { decision: decide(key, lock ? { windows: lock.windows } : null, lock?.time_zone ?? 'UTC', now), entry };
  }

  /** Records a decision made at the door, to report on `events`. */
  queueEvent(lockId: number, decision: Decision, now: Date): PendingEvent {
    const event: PendingEvent = {
      id: randomUUID(),
      lock_id: lockId,
      type: decision.granted ? 'access.granted' : 'access.denied',
      occurred_at: now.toISOString(),
      key_id: decision.keyId,
      reason: decision.granted ? null : decision.reason,
    };
    this.pendingEvents.push(event);
    return event;
  }

  /** The service has the event: it leaves the queue. */
  delivered(id: string): void {
    const index = this.pendingEvents.findIndex((event) => event.id === id);
    if (index >= 0) this.pendingEvents.splice(index, 1);
  }

  private put(entry: CopyEntry): void {
    this.remove(entry.key_id);
    this.byKey.set(entry.key_id, entry);
    this.byHash.set(entry.h, entry.key_id);
  }

  private remove(keyId: number): void {
    const old = this.byKey.get(keyId);
    if (!old) return;
    this.byKey.delete(keyId);
    if (this.byHash.get(old.h) === keyId) this.byHash.delete(old.h);
  }
}
