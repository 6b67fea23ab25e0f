// Gateway presence: `{"online": …}` on the presence topic (the will says false), a broker-side disconnect,
// or 45 minutes without any message on the service clock. One lock.online / lock.offline per lock of the
// gateway per change; repeated identical states fire nothing, even with several instances.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import { notify, type Database } from '../../platform/db/index.ts';
import { emitDomainEvent } from '../../platform/domain-events.ts';
import type { Job } from '../../platform/jobs.ts';
import { CATALOG_CHANNEL } from '../catalog/service.ts';

export const QUIET_OFFLINE_MS = 45 * 60_000;
/** last_seen_at is written at most this often per gateway, so heartbeats cost little. */
const LAST_SEEN_WRITE_MS = 30_000;

export class PresenceService {
  private readonly lastWritten = new Map<number, number>();

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Any message from a gateway counts as a heartbeat. */
  async heard(gatewayId: number): Promise<void> {
    const now = this.clock.now();
    const last = this.lastWritten.get(gatewayId);
    if (last !== undefined && now.getTime() - last < LAST_SEEN_WRITE_MS) return;
    this.lastWritten.set(gatewayId, now.getTime());
    await this.db.query('UPDATE gateways SET last_seen_at = $2 WHERE id = $1', [gatewayId, now]);
  }

  /** Records the gateway's state; on a change, every lock on it fires lock.online or lock.offline. */
  async setOnline(gatewayId: number, online: boolean): Promise<boolean> {
    const now = this.clock.now();
    if (online) this.lastWritten.set(gatewayId, now.getTime());
    const changed = await this.db.transaction(async (tx) => {
      const rows = await tx.query(
        `UPDATE gateways SET online = $2, last_seen_at = CASE WHEN $2 THEN $3 ELSE last_seen_at END
          WHERE id = $1 AND online IS DISTINCT FROM $2 RETURNING id`,
        [gatewayId, online, now],
      );
      if (rows.length === 0) return false;
      const locks = await tx.query<{ id: number; name: string; place: string; location_id: number; account_id: number; location_name: string }>(
        `SELECT k.id, k.name, k.place, k.location_id, l.account_id, l.name AS location_name
           FROM locks k JOIN locations l ON l.id = k.location_id WHERE k.gateway_id = $1 ORDER BY k.id`,
        [gatewayId],
      );
      for (const lock of locks) {
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
      await notify(this.db, tx, CATALOG_CHANNEL);
      return true;
    });
    if (changed) this.log.info({ gatewayId, online }, 'gateway presence changed');
    return changed;
  }

  /** Gateways quiet for 45 minutes on the service clock go offline. */
  quietJob(): Job {
    return {
      name: 'gateway-presence-timeout',
      everySeconds: 60,
      run: async () => {
        const cutoff = new Date(this.clock.now().getTime() - QUIET_OFFLINE_MS);
        const quiet = await this.db.query<{ id: number }>(
          'SELECT id FROM gateways WHERE online AND (last_seen_at IS NULL OR last_seen_at < $1)',
          [cutoff],
        );
        let changed = 0;
        for (const { id } of quiet) if (await this.setOnline(id, false)) changed++;
        return changed;
      },
    };
  }
}
