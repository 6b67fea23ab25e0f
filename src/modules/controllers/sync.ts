// Bringing UHPPOTE boards in line with what Latchkey holds: a key's card on every board of its account (put-card
// when its record differs from what was last written, delete-card when it should be there no more), the time
// profiles its doors need written first. Work on one board runs one at a time in this instance; a new profile's
// id is reserved in the database before the board is written, so two instances never give one id two schedules.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import { readKeyGrants, type KeyProposal } from '../access/index.ts';
import { planCard, type CardPlan, type DoorPlan } from './cards.ts';
import { chainDefinitions, FIRST_PROFILE_ID, LAST_PROFILE_ID } from './profiles.ts';
import {
  controllersOfAccount,
  forgetCard,
  profileIds,
  recordMissedWrites,
  saveCard,
  releaseProfile,
  reserveProfileId,
  storedCards,
  type ControllerRow,
  type StoredCard,
} from './store.ts';
import { ControllerUnreachable, type UhppoteClient } from './uhppote/client.ts';
import type { ControllerAddress } from './uhppote/client.ts';
import type { TimeProfile } from './uhppote/codec.ts';

/** The dates a profile is valid on: always (a key's own dates are on its card). */
export const PROFILE_FROM = '2000-01-01';
export const PROFILE_TO = '2099-12-31';

export interface CardSecrets {
  seal(value: string): string;
  open(sealed: string): string;
  /** The keyed digest a card number is found by on a board's records (never the number itself). */
  cardDigest(card: number): string;
}

export interface SyncDeps {
  db: Database;
  clock: Clock;
  client: UhppoteClient;
  secrets: CardSecrets;
  log: FastifyBaseLogger;
}

/** What a sync of some keys did on each board of the account. */
export interface SyncOutcome {
  /** Boards that did not answer, or still hold a card they were told to delete: their writes wait (the key stays `sent`). */
  unreachable: number[];
  /** A board answered "no" to a write (its card list is full, say): the change is refused. */
  refused: string[];
  /** Keys that cannot be written as they are (a credential or a schedule a board cannot hold). */
  problems: string[];
  /** What changed on the boards: cards put and deleted. */
  put: number;
  deleted: number;
}

export const addressOf = (c: ControllerRow): ControllerAddress => ({ serial: c.serial_number, host: c.host, port: c.port, transport: c.transport });

/** The record as stored to compare with the next plan: everything but the card number. */
const recordText = (plan: CardPlan, permissions: number[]): string => JSON.stringify({ from: plan.from, to: plan.to, doors: permissions });

export class ControllerSync {
  /** Per board, the tail of its work in this instance: one sync at a time. */
  private readonly queues = new Map<number, Promise<unknown>>();

  constructor(private readonly deps: SyncDeps) {}

  /** Runs `work` after the board's earlier work in this instance. */
  serial<T>(gatewayId: number, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(gatewayId) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => undefined);
    this.queues.set(gatewayId, tail);
    void tail.then(() => {
      if (this.queues.get(gatewayId) === tail) this.queues.delete(gatewayId);
    });
    return next;
  }

  /**
   * These keys' cards (null: every key) on every board of the account, judged with `proposals` in place of
   * what the store holds of them. Boards are written at once, in parallel.
   */
  async syncKeys(accountId: number, keyIds: number[] | null, proposals?: Map<number, KeyProposal>): Promise<SyncOutcome> {
    const outcome: SyncOutcome = { unreachable: [], refused: [], problems: [], put: 0, deleted: 0 };
    const controllers = await controllersOfAccount(this.deps.db, accountId);
    await Promise.all(
      controllers.map((controller) =>
        this.serial(controller.gateway_id, () => this.syncBoard(controller, keyIds, proposals, outcome)).catch((error: unknown) => {
          if (error instanceof ControllerUnreachable) outcome.unreachable.push(controller.gateway_id);
          else throw error;
        }),
      ),
    );
    // Noted on the board, so that its next answered poll writes again at once (monitor.ts), not at the queue's rung.
    if (outcome.unreachable.length > 0) await recordMissedWrites(this.deps.db, outcome.unreachable, this.deps.clock.now());
    return outcome;
  }

  /** The plans of keys on one board (every key when null), with the problems that keep some off. */
  async plansFor(controller: ControllerRow, keyIds: number[] | null, proposals?: Map<number, KeyProposal>): Promise<{ plans: CardPlan[]; problems: string[] }> {
    const now = this.deps.clock.now();
    const grants = await readKeyGrants(this.deps.db, (sealed) => this.deps.secrets.open(sealed), {
      accountId: controller.account_id,
      keyIds,
      lockIds: controller.door_locks.map((d) => d.lock_id),
      now,
      ...(proposals ? { proposals } : {}),
    });
    const plans: CardPlan[] = [];
    const problems: string[] = [];
    for (const grant of grants) {
      const result = planCard(grant, controller.door_locks, controller.time_zone, now);
      if ('plan' in result) plans.push(result.plan);
      else if ('problem' in result) problems.push(result.problem);
    }
    return { plans, problems };
  }

  /**
   * The door permissions of a plan on this board, its time profiles written first where they are new.
   * `expected` collects every profile the plan uses as the board should hold it (reconciliation checks them).
   */
  async permissions(controller: ControllerRow, plan: CardPlan, known: Map<string, number>, expected?: Map<number, TimeProfile>): Promise<number[] | string> {
    const result: number[] = [];
    for (const door of plan.doors as DoorPlan[]) {
      if (door === 0 || door === 1) {
        result.push(door);
        continue;
      }
      const definitions = chainDefinitions(door);
      // Written from the tail, so each profile's link names a profile the board already holds.
      let next = 0;
      for (let i = door.length - 1; i >= 0; i--) {
        const definition = definitions[i] as string;
        let id = known.get(definition);
        const shape = door[i]!;
        const weekdays = { mon: false, tue: false, wed: false, thu: false, fri: false, sat: false, sun: false };
        for (const day of shape.weekdays) weekdays[day] = true;
        const profile = (profileId: number): TimeProfile => ({ id: profileId, from: PROFILE_FROM, to: PROFILE_TO, weekdays, segments: shape.segments, linkedTo: next });
        if (id === undefined) {
          const reserved = await this.reserveProfile(controller, definition, known);
          if (typeof reserved === 'string') return reserved;
          // Written to the board even when another instance reserved it first: the same profile again is
          // harmless, and the card written next must not name a profile the board does not hold yet.
          // Refused or unreachable: an id of ours is given back, so the next try writes the board again.
          const giveBack = async () => {
            known.delete(definition);
            if (reserved.ours) await releaseProfile(this.deps.db, controller.gateway_id, reserved.id, definition);
          };
          const ok = await this.deps.client.setTimeProfile(addressOf(controller), profile(reserved.id)).catch(async (error: unknown) => {
            await giveBack();
            throw error;
          });
          if (!ok) {
            await giveBack();
            return `Controller ${controller.serial_number} refused time profile ${reserved.id}.`;
          }
          id = reserved.id;
        }
        expected?.set(id, profile(id));
        next = id;
      }
      result.push(next);
    }
    return result;
  }

  /**
   * A profile id for a new definition on the board, reserved in the database before the board is written:
   * another instance writing the same board at once cannot take the same id for another schedule (its cards
   * would follow this one's). One it reserved first for the same definition is shared (`ours: false`).
   */
  private async reserveProfile(controller: ControllerRow, definition: string, known: Map<string, number>): Promise<{ id: number; ours: boolean } | string> {
    for (;;) {
      const used = new Set(known.values());
      let free = FIRST_PROFILE_ID;
      while (used.has(free) && free <= LAST_PROFILE_ID) free++;
      if (free > LAST_PROFILE_ID) return `Controller ${controller.serial_number} has no free time profile (it holds ${LAST_PROFILE_ID - FIRST_PROFILE_ID + 1}).`;
      if (await reserveProfileId(this.deps.db, controller.gateway_id, free, definition)) {
        known.set(definition, free);
        return { id: free, ours: true };
      }
      // Taken meanwhile (the id, or this definition under another id): read what the board holds now, again.
      const current = await profileIds(this.deps.db, controller.gateway_id);
      known.clear();
      for (const [held, heldId] of current) known.set(held, heldId);
      const shared = known.get(definition);
      if (shared !== undefined) return { id: shared, ours: false };
    }
  }

  private async syncBoard(controller: ControllerRow, keyIds: number[] | null, proposals: Map<number, KeyProposal> | undefined, outcome: SyncOutcome): Promise<void> {
    const { db, client, secrets, clock } = this.deps;
    const { plans, problems } = await this.plansFor(controller, keyIds, proposals);
    outcome.problems.push(...problems);
    const digests = new Map(plans.map((p) => [p.keyId, secrets.cardDigest(p.card)]));
    const stored = await storedCards(db, controller.gateway_id, keyIds, [...digests.values()]);
    const address = addressOf(controller);
    const wanted = new Set(digests.values());
    /** Keys whose old card the board may still hold: kept recorded (the record is what the retry deletes). */
    const undeleted = new Set<number>();
    // Cards that should be here no more (the key was revoked, expired, lost its doors, or its number moved to
    // another key): deleted from the board unless another key's plan puts the same number back.
    for (const row of stored) {
      const still = digests.get(row.key_id) === row.card_digest;
      if (still) continue;
      if (!wanted.has(row.card_digest)) {
        const card = Number(secrets.open(row.card_box));
        // Still on the board after a "no": the board waits, as one away does.
        if (!(await client.deleteCardConfirmed(address, card))) {
          undeleted.add(row.key_id);
          continue;
        }
        outcome.deleted++;
      }
      await forgetCard(db, controller.gateway_id, row.key_id);
    }
    if (undeleted.size > 0) outcome.unreachable.push(controller.gateway_id);
    const byKey = new Map(stored.map((row) => [row.key_id, row]));
    const known = await profileIds(db, controller.gateway_id);
    for (const plan of plans) {
      if (undeleted.has(plan.keyId)) continue; // its new card's record would replace the old one's, still on the board
      const permissions = await this.permissions(controller, plan, known);
      if (typeof permissions === 'string') {
        outcome.problems.push(permissions);
        continue;
      }
      const record = recordText(plan, permissions);
      const digest = digests.get(plan.keyId) as string;
      const current = byKey.get(plan.keyId);
      if (current && current.card_digest === digest && current.record === record) continue;
      const ok = await client.putCard(address, { card: plan.card, from: plan.from, to: plan.to, doors: permissions as [number, number, number, number], pin: 0 });
      if (!ok) {
        outcome.refused.push(`Controller ${controller.serial_number} refused the card of key ${plan.keyId}.`);
        continue;
      }
      outcome.put++;
      const row: StoredCard = { key_id: plan.keyId, card_digest: digest, card_box: secrets.seal(String(plan.card)), record };
      await saveCard(db, controller.gateway_id, row, clock.now());
    }
  }
}
