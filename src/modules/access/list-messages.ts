// A gateway's list as MQTT messages (docs/spec/gateway-mqtt.md, "Offline"): as many parts as the broker's
// packet limit needs, each complete JSON. One key's entry can be larger than a packet on its own (its windows
// repeat for every lock it opens on the gateway): it is sent in pieces, in the parts of the same message,
// which the gateway joins by `key_id`. A message over the limit would not reach the gateway at all, and a
// broker such as Mosquitto drops the connection that sent it.
import type { AccessEntry } from './lists.ts';

/** Room left in a packet for the topic, the header of a list message and MQTT's own fields. */
export const PACKET_MARGIN_BYTES = 1024;

type EntryLock = AccessEntry['locks'][number];

/**
 * A list message in as many parts as the packet limit needs, each complete JSON:
 * `{type, [from,] version, valid_until, part, parts, entries, removed}`. Entries are JSON text already.
 */
export function listMessages(header: Record<string, unknown>, entries: string[], removed: number[], maxPacketBytes: number): string[] {
  const budget = Math.max(1024, maxPacketBytes - PACKET_MARGIN_BYTES);
  const parts: Array<{ entries: string[]; removed: number[] }> = [];
  let current = { entries: [] as string[], removed: [] as number[] };
  let size = 0;
  const room = (bytes: number) => {
    if (size + bytes > budget && (current.entries.length > 0 || current.removed.length > 0)) {
      parts.push(current);
      current = { entries: [], removed: [] };
      size = 0;
    }
    size += bytes;
  };
  for (const entry of entries) {
    for (const piece of Buffer.byteLength(entry) + 1 > budget ? entryPieces(entry, budget) : [entry]) {
      room(Buffer.byteLength(piece) + 1);
      current.entries.push(piece);
    }
  }
  for (const id of removed) {
    room(String(id).length + 1);
    current.removed.push(id);
  }
  parts.push(current);
  const head = JSON.stringify(header).slice(0, -1);
  return parts.map((part, index) => `${head},"part":${index + 1},"parts":${parts.length},"entries":[${part.entries.join(',')}],"removed":[${part.removed.join(',')}]}`);
}

/**
 * An entry too large for `budget` as pieces that fit: each the entry with some of its locks, and a lock whose
 * windows alone do not fit listed in several pieces with some of its windows each (the gateway opens it in
 * any of them).
 */
export function entryPieces(entryText: string, budget: number): string[] {
  const { locks, ...key } = JSON.parse(entryText) as AccessEntry;
  const keyBytes = Buffer.byteLength(JSON.stringify({ ...key, locks: [] }));
  const room = budget - keyBytes - 1;
  const lockTexts = locks.flatMap((lock) => lockPieces(lock, room));
  const pieces: string[][] = [];
  let current: string[] = [];
  let size = 0;
  for (const text of lockTexts) {
    const bytes = Buffer.byteLength(text) + 1;
    if (size + bytes > room && current.length > 0) {
      pieces.push(current);
      current = [];
      size = 0;
    }
    current.push(text);
    size += bytes;
  }
  pieces.push(current);
  const head = JSON.stringify(key).slice(0, -1);
  return pieces.map((piece) => `${head},"locks":[${piece.join(',')}]}`);
}

/** A lock of an entry as JSON text, or as several with its windows shared out when it does not fit `room`. */
function lockPieces(lock: EntryLock, room: number): string[] {
  const text = JSON.stringify(lock);
  if (lock.windows === null || Buffer.byteLength(text) + 1 <= room) return [text];
  const piece = (windows: unknown[]) => JSON.stringify({ ...lock, windows });
  const emptyBytes = Buffer.byteLength(piece([]));
  const pieces: string[] = [];
  let current: unknown[] = [];
  let size = emptyBytes + 1;
  for (const window of lock.windows) {
    const bytes = Buffer.byteLength(JSON.stringify(window)) + 1;
    if (current.length > 0 && size + bytes > room) {
      pieces.push(piece(current));
      current = [];
      size = emptyBytes + 1;
    }
    current.push(window);
    size += bytes;
  }
  pieces.push(piece(current));
  return pieces;
}
