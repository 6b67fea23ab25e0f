// Reconciliation (README "Real controllers"): a board's card list read whole and compared with what Latchkey
// holds, the difference repaired, and a report kept of what was added, changed or removed and why. Catches
// what no write told the service: a card added or changed by hand on the board, a board replaced or reset, a
// write lost while the service was down.
import type { Clock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/index.ts';
import type { CardPlan } from './cards.ts';
import { forgetCard, recordReconciliation, saveCard, storedCards, profileIds, type ControllerRow } from './store.ts';
import { addressOf, type CardSecrets, type ControllerSync } from './sync.ts';
import type { CardRecord, TimeProfile } from './uhppote/codec.ts';
import type { ControllerAddress, UhppoteClient } from './uhppote/client.ts';

export interface ReconciliationReport {
  at: string;
  cards_on_controller: number;
  added: Array<{ key_id: number; reason: string }>;
  changed: Array<{ key_id: number; reason: string }>;
  /** Cards removed from the board: the card number masked (its last three digits), the key when known. */
  removed: Array<{ card: string; key_id: number | null; reason: string }>;
  /** Time profiles the board did not hold as written (cleared or changed by hand): written again. */
  profiles_rewritten: number[];
  problems: string[];
}

/** A card number as a report shows it: enough to find the card in a drawer, not enough to clone it. */
export const maskCard = (card: number): string => `…${String(card).slice(-3)}`;

const sameProfile = (a: TimeProfile, b: TimeProfile): boolean =>
  a.linkedTo === b.linkedTo && JSON.stringify(a.weekdays) === JSON.stringify(b.weekdays) && JSON.stringify(a.segments) === JSON.stringify(b.segments);

const sameRecord = (a: CardRecord, b: Omit<CardRecord, 'pin'>): boolean =>
  a.from === b.from && a.to === b.to && a.doors.every((door, i) => door === b.doors[i]);

/** The most card slots a board's list is read to (the largest boards hold 100,000 cards). */
export const MAX_CARD_SLOTS = 100_000;

/**
 * Every card on the board. get-cards counts the live cards, but a deleted card leaves its slot as a hole (a new card
 * takes the first hole), so after deletions the last cards sit past that count: slots are read, holes skipped, until
 * that many cards were found. Read only up to the count, a card put on the board by hand after a revocation was never
 * seen, so never removed. A slot that is neither a card nor a hole is the end of the list: a count gone stale while
 * the list is read (a card deleted meanwhile) must not send the read on to MAX_CARD_SLOTS, holding the board's writes.
 */
async function readCardList(client: UhppoteClient, address: ControllerAddress): Promise<Map<number, CardRecord>> {
  const count = await client.getCards(address);
  const onBoard = new Map<number, CardRecord>();
  for (let index = 1, live = 0; live < count && index <= MAX_CARD_SLOTS; index++) {
    const { record, deleted } = await client.getCardByIndex(address, index);
    if (!record) {
      if (deleted) continue;
      break;
    }
    live++;
    onBoard.set(record.card, record);
  }
  return onBoard;
}

export async function reconcileController(
  deps: { db: Database; clock: Clock; client: UhppoteClient; sync: ControllerSync; secrets: CardSecrets },
  controller: ControllerRow,
): Promise<ReconciliationReport> {
  const { db, client, sync, secrets, clock } = deps;
  const address = addressOf(controller);
  return sync.serial(controller.gateway_id, async () => {
    const onBoard = await readCardList(client, address);
    const { plans, problems } = await sync.plansFor(controller, null);
    const known = await profileIds(db, controller.gateway_id);
    const wanted = new Map<number, { plan: CardPlan; doors: [number, number, number, number] }>();
    const expected = new Map<number, TimeProfile>();
    for (const plan of plans) {
      const permissions = await sync.permissions(controller, plan, known, expected);
      if (typeof permissions === 'string') problems.push(permissions);
      else wanted.set(plan.card, { plan, doors: permissions as [number, number, number, number] });
    }
    const stored = await storedCards(db, controller.gateway_id, null);
    const storedByDigest = new Map(stored.map((row) => [row.card_digest, row]));
    const report: ReconciliationReport = { at: clock.now().toISOString(), cards_on_controller: onBoard.size, added: [], changed: [], removed: [], profiles_rewritten: [], problems };
    // A card naming a profile the board does not hold opens at any time (the firmware's rule): profiles first.
    for (const [id, profile] of expected) {
      const held = await client.getTimeProfile(address, id);
      if (held && sameProfile(held, profile)) continue;
      if (await client.setTimeProfile(address, profile)) report.profiles_rewritten.push(id);
      else report.problems.push(`The controller refused time profile ${id}.`);
    }

    /** Keys whose card the board refused to delete: kept recorded, so the next reconciliation (or the key's queued write) deletes it. */
    const undeleted = new Set<number>();
    for (const [card] of onBoard) {
      if (wanted.has(card)) continue;
      const row = storedByDigest.get(secrets.cardDigest(card));
      if (!(await client.deleteCardConfirmed(address, card))) {
        if (row) undeleted.add(row.key_id);
        report.problems.push(`The controller refused to delete card ${maskCard(card)}${row ? ` of key ${row.key_id}` : ''}; tried again at the next reconciliation.`);
        continue;
      }
      report.removed.push({
        card: maskCard(card),
        key_id: row?.key_id ?? null,
        reason: row ? 'its key no longer opens a door of this controller' : 'not issued by Latchkey (added on the controller)',
      });
    }
    for (const [card, { plan, doors }] of wanted) {
      if (undeleted.has(plan.keyId)) continue; // its new card's record would replace the old one's, still on the board
      const target = { card, from: plan.from, to: plan.to, doors };
      const present = onBoard.get(card);
      if (present && sameRecord(present, target)) continue;
      if (!(await client.putCard(address, { ...target, pin: 0 }))) {
        report.problems.push(`The controller refused the card of key ${plan.keyId}.`);
        continue;
      }
      if (present) report.changed.push({ key_id: plan.keyId, reason: 'its dates or doors on the controller differed' });
      else report.added.push({ key_id: plan.keyId, reason: 'missing on the controller' });
    }
    // The records follow what the board now holds.
    const now = clock.now();
    const wantedKeys = new Set([...wanted.values()].map((w) => w.plan.keyId));
    for (const row of stored) if (!wantedKeys.has(row.key_id) && !undeleted.has(row.key_id)) await forgetCard(db, controller.gateway_id, row.key_id);
    for (const { plan, doors } of wanted.values()) {
      if (undeleted.has(plan.keyId)) continue;
      const record = JSON.stringify({ from: plan.from, to: plan.to, doors });
      await saveCard(db, controller.gateway_id, { key_id: plan.keyId, card_digest: secrets.cardDigest(plan.card), card_box: secrets.seal(String(plan.card)), record }, now);
    }
    await recordReconciliation(db, controller.gateway_id, report, now);
    return report;
  });
}
