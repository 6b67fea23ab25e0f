// Gateway presence (spec: Lock.online "reflects the device's last contact"). Contact is any message from
// the gateway, its `{"online": true}` (live, or replayed retained by an external broker to a new
// subscription) and, with the embedded broker, a login. It is lost on `{"online": false}` (the will), on
// the end of the gateway's last connection to the embedded broker, after 45 minutes without contact on
// the service clock, and at start with the embedded broker (nobody is connected to a broker just started).
// One lock.online / lock.offline per lock of the gateway per change; repeated identical states fire
// nothing, even with several instances. Each gateway's changes run in its order of messages (inOrder).
// What the gateway does (its `{"online": …}`, its logins and ends of connections) changes its state at most
// once a second (announce).
import type { FastifyBaseLogger } from 'fastify';
import { CATALOG_CHANNEL } from '../../platform/channels.ts';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { Job } from '../../platform/jobs.ts';
import { emitDomainEvent } from '../webhooks/index.ts';
import { locksOfGateway, onlineGatewayIds, quietGatewayIds, setGatewayOnline, touchGateway } from './store.ts';

export const QUIET_OFFLINE_MS = 45 * 60_000;
/**
 * Contact is written (last_seen_at) at most this often per gateway, so heartbeats and door events cost
 * little. An instance that did not see a gateway go offline (another instance handled the will) may so
 * take up to this long to notice its next contact.
 */
const CONTACT_WRITE_MS = 30_000;

/**
 * A gateway's announced state changes here at most this often; what it announces in between waits, and only its
 * last word counts. A gateway flooding `{"online": true}` and `{"online": false}` cost a transaction, a webhook per
 * lock and a drop of every account's cached facts per message (212,000 messages in 10 s: minutes of CPU).
 */
export const STATE_CHANGE_MS = 1000;

/** Runs work after the gateway's earlier messages are handled. */
export type InOrder = (gatewayId: number, work: () => Promise<unknown>) => void;

/** A gateway's state as its messages last said it to this instance (see announce and heard), not as last written. */
interface Acted {
  online: boolean;
  /** When (ms, real time: the limit protects the service, whatever the service clock says). */
  at: number;
  /** A different state announced within STATE_CHANGE_MS of `at`: acted on once that has passed. */
  waiting: { online: boolean; timer: NodeJS.Timeout } | null;
}

export class PresenceService {
  /** When this instance next writes contact of a gateway; absent: at its next message. */
  private readonly nextContactWrite = new Map<number, number>();
  /** Bounded by the gateways (a deleted one's entry stays: a few bytes). */
  private readonly acted = new Map<number, Acted>();
  private closing = false;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    private readonly inOrder: InOrder,
  ) {}

  /** A message from the gateway: contact. Brings an offline gateway online. */
  heard(gatewayId: number): void {
    // Heard after it said offline: the gateway is there. What this instance remembers follows the gateway's
    // messages as they arrive (not the writes, which come later), so that its next word is compared with its last.
    const last = this.acted.get(gatewayId);
    if (last?.waiting) last.waiting.online = true;
    else if (last && !last.online) Object.assign(last, { online: true, at: performance.now() });
    const now = this.clock.now().getTime();
    const due = this.nextContactWrite.get(gatewayId);
    if (due !== undefined && now < due) return;
    this.nextContactWrite.set(gatewayId, now + CONTACT_WRITE_MS);
    this.inOrder(gatewayId, () => this.recordContact(gatewayId));
  }

  /**
   * The gateway's `{"online": …}`, or with the embedded broker its login (true) or the end of its last connection
   * (false): a change is acted on at once, unless the last one was less than STATE_CHANGE_MS ago (then it waits, and
   * a later word replaces it); a repeat of the state acted on is contact at most. True when acted on now.
   */
  announce(gatewayId: number, online: boolean): boolean {
    const last = this.acted.get(gatewayId);
    if (last?.waiting) {
      last.waiting.online = online;
      return false;
    }
    if (last?.online === online) {
      if (online) this.heard(gatewayId);
      return false;
    }
    const since = last ? performance.now() - last.at : Infinity;
    if (last && since < STATE_CHANGE_MS && !this.closing) {
      const timer = setTimeout(() => this.actOnWaiting(gatewayId), STATE_CHANGE_MS - since);
      timer.unref();
      last.waiting = { online, timer };
      return false;
    }
    if (online) this.connected(gatewayId);
    else this.lost(gatewayId);
    return true;
  }

  /** `{"online": true}` or a login acted on (or a controller's answer): contact, written at once. */
  connected(gatewayId: number): void {
    this.remember(gatewayId, true);
    this.nextContactWrite.delete(gatewayId);
    this.heard(gatewayId);
  }

  /** `{"online": false}` or the end of its last connection acted on (or a rotation): offline; its next message is contact again. */
  lost(gatewayId: number): void {
    this.remember(gatewayId, false);
    this.nextContactWrite.delete(gatewayId);
    this.inOrder(gatewayId, () => this.setOnline(gatewayId, false));
  }

  /** The state acted on now; whatever waited is older than it. */
  private remember(gatewayId: number, online: boolean, at = performance.now()): void {
    const last = this.acted.get(gatewayId);
    if (last?.waiting) clearTimeout(last.waiting.timer);
    this.acted.set(gatewayId, { online, at, waiting: null });
  }

  /**
   * The service is closing: what waits is acted on now, and what follows at once (the ends of connections the
   * broker's close makes, which come after it), so that nothing waits on a timer past the close.
   */
  close(): void {
    this.closing = true;
    for (const [gatewayId, last] of this.acted) {
      if (!last.waiting) continue;
      clearTimeout(last.waiting.timer);
      this.actOnWaiting(gatewayId);
    }
  }

  private actOnWaiting(gatewayId: number): void {
    const last = this.acted.get(gatewayId);
    const waiting = last?.waiting;
    if (!last || !waiting) return;
    last.waiting = null;
    // Flapped back to the state acted on: nothing changed (a repeat of online is contact).
    if (waiting.online === last.online) {
      if (waiting.online) this.heard(gatewayId);
      return;
    }
    if (waiting.online) this.connected(gatewayId);
    else this.lost(gatewayId);
  }

  /**
   * Gateways online in the store from before a start of the embedded broker are no longer connected
   * (after a crash nothing marked them offline): offline, each ahead of anything its reconnection brings.
   * Not with an external broker, which keeps its connections while the service restarts.
   */
  async startWithNobodyConnected(): Promise<number> {
    const held = await onlineGatewayIds(this.db);
    for (const id of held) {
      // The start's doing, not the gateway's: its login right after is acted on at once.
      this.remember(id, false, -Infinity);
      this.inOrder(id, () => this.setOnline(id, false));
    }
    return held.length;
  }

  private async recordContact(gatewayId: number): Promise<void> {
    const row = await touchGateway(this.db, gatewayId, this.clock.now());
    if (row && !row.online) await this.setOnline(gatewayId, true);
  }

  /** Records the gateway's state; on a change, every lock on it fires lock.online or lock.offline. */
  private async setOnline(gatewayId: number, online: boolean): Promise<boolean> {
    const now = this.clock.now();
    if (!online) this.nextContactWrite.delete(gatewayId);
    const changed = await this.db.transaction(async (tx) => {
      if (!(await setGatewayOnline(tx, gatewayId, online, now))) return false;
      for (const lock of await locksOfGateway(tx, gatewayId)) {
        await emitDomainEvent(tx, {
          type: online ? 'lock.online' : 'lock.offline',
          accountId: lock.account_id,
          locationId: lock.location_id,
          data: {
            lock: { id: lock.id, name: lock.name, place: lock.place },
            location: { id: lock.location_id, name: lock.location_name },
            online,
            since: now.toISOString(),
          },
          occurredAt: now,
        });
      }
      await tx.notify(CATALOG_CHANNEL);
      return true;
    });
    if (changed) this.log.info({ gatewayId, online }, 'gateway presence changed');
    return changed;
  }

  /** Gateways without contact for 45 minutes on the service clock go offline. */
  quietJob(): Job {
    return {
      name: 'gateway-presence-timeout',
      everySeconds: 60,
      run: async () => {
        const cutoff = new Date(this.clock.now().getTime() - QUIET_OFFLINE_MS);
        let changed = 0;
        for (const id of await quietGatewayIds(this.db, cutoff)) if (await this.setOnline(id, false)) changed++;
        return changed;
      },
    };
  }
}
