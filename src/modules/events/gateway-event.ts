// A door event as a gateway sends it on `{p}/gateways/{g}/events` (docs/spec/gateway-mqtt.md), checked
// before it reaches the access log: what the database could not store is refused here, alone, not in a batch.
import { parseClientTimestamp } from '../../platform/time.ts';
import { DOOR_EVENT_TYPES, type DoorEventType } from './schemas.ts';

export interface GatewayEvent {
  id: string;
  lock_id: number;
  type: DoorEventType;
  occurred_at: string;
  key_id: number | null;
  reason: string | null;
}

/** The gateway event ids of the access log's entries for online requests, which a gateway's events may not use. */
export const REQUEST_ID_PREFIX = 'request:';

/** A row id as the database holds it (int8) and JavaScript can carry exactly. */
const isRowId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;
/** Text PostgreSQL can store: NUL is the one character it refuses, and would fail the whole batch. */
const isStorableText = (value: unknown, max: number): value is string =>
  typeof value === 'string' && value !== '' && value.length <= max && !value.includes('\u0000');

/**
 * A gateway event as the contract describes it, or what is wrong with it: the field and the rule, never the value,
 * and the event's id once that is valid (for the gateway's log to be matched).
 */
export function parseGatewayEvent(payload: unknown): { event: GatewayEvent } | { problem: string; eventId?: string } {
  const p = payload as Record<string, unknown>;
  if (!p || typeof p !== 'object') return { problem: 'not a JSON object' };
  // `request:` ids are the service's own entries for the gateway's online requests (access/gateway-sync.ts): an
  // event taking one would stand in the log for a decision, and be answered to the request as that decision.
  if (!isStorableText(p.id, 200)) return { problem: 'id: must be text of 1 to 200 characters, without NUL' };
  if (p.id.startsWith(REQUEST_ID_PREFIX)) return { problem: `id: must not start with "${REQUEST_ID_PREFIX}"` };
  const eventId = p.id;
  if (!isRowId(p.lock_id)) return { problem: 'lock_id: must be a positive integer', eventId };
  if (!(DOOR_EVENT_TYPES as readonly unknown[]).includes(p.type)) return { problem: `type: must be one of ${DOOR_EVENT_TYPES.join(', ')}`, eventId };
  if (!isStorableText(p.occurred_at, 64) || !parseClientTimestamp(p.occurred_at)) {
    return { problem: 'occurred_at: must be an ISO 8601 date-time (UTC unless an offset is given), a real date of years 1 to 9999', eventId };
  }
  if (p.key_id !== null && p.key_id !== undefined && !isRowId(p.key_id)) return { problem: 'key_id: must be a positive integer or null', eventId };
  if (p.reason !== null && p.reason !== undefined && !isStorableText(p.reason, 200)) {
    return { problem: 'reason: must be text of 1 to 200 characters without NUL, or null', eventId };
  }
  return {
    event: {
      id: p.id,
      lock_id: p.lock_id,
      type: p.type as DoorEventType,
      occurred_at: p.occurred_at,
      key_id: (p.key_id as number | null | undefined) ?? null,
      reason: (p.reason as string | null | undefined) ?? null,
    },
  };
}
