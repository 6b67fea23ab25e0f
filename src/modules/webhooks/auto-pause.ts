// Auto-pause is a rule of time, not of attempts (README: Webhooks: failure streak and auto-pause): every
// active subscription whose failure streak is 24 hours old on the service clock is paused, whether or not an
// attempt is due, and the dashboard user who made its API key is e-mailed, in one transaction, once however many
// instances run it; its pending deliveries then fail (the dispatcher's failPendingOfPausedSubscriptions, right
// after, which leaves an attempt under way to its answer). The URL goes into the e-mail percent-encoded where it
// holds whitespace or control characters (refused since, but a subscription made before may hold them).
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import type { MessageQueue } from '../notifications/index.ts';
import { anyStreakSince, pauseStreaksSince } from './delivery-store.ts';
import { printableUrl } from './url-guard.ts';

export const AUTO_PAUSE_AFTER_MS = 24 * 3600_000;

/** Streaks that began at or before this moment are 24 hours old at `now`. */
export function streakLimitAt(now: Date): Date {
  return new Date(now.getTime() - AUTO_PAUSE_AFTER_MS);
}

/** Pauses what has failed since `streakLimit`; returns how many subscriptions it paused. */
export async function pauseLongFailures(db: Database, messages: MessageQueue, log: FastifyBaseLogger, streakLimit: Date): Promise<number> {
  // A cheap look first: dispatch runs often, and a transaction each time would be waste.
  if (!(await anyStreakSince(db, streakLimit))) return 0;
  const paused = await db.transaction(async (tx) => {
    const rows = await pauseStreaksSince(tx, streakLimit);
    for (const row of rows) {
      if (!row.email) continue;
      await messages.enqueue(tx, row.account_id, null, {
        channel: 'email',
        to: row.email,
        subject: 'Webhook subscription paused',
        body: [
          `Deliveries to ${printableUrl(row.url)} have failed for 24 hours, so the subscription ${row.id} is now paused.`,
          'Fix the endpoint, resume the subscription (PATCH status "active"), and recover the gap with GET /events?since=…',
        ].join('\n\n'),
        link: null,
      });
    }
    return rows;
  });
  for (const { id } of paused) log.warn({ subscriptionId: id }, 'webhook subscription paused after 24 hours of failures');
  return paused.length;
}
