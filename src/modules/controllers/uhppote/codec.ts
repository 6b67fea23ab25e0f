// The UHPPOTE TCP/IP Wiegand access controller protocol (UT0311-L0x boards): 64-byte packets over UDP
// (or TCP on newer firmware) on port 60000. Byte 0 is the start of message 0x17, byte 1 the function code,
// bytes 4..7 the controller's serial number (little-endian uint32); dates and times are BCD.
//
// We wrote this codec ourselves rather than depend on the npm `uhppoted` library at run time: its released
// version (0.7.2) depends on the old `ip` package, which has published security advisories, and a protocol
// this small is not worth a runtime dependency. test/unit/uhppote-codec.test.ts holds it to the library
// (a devDependency only), byte for byte and field for field, for every function used here.
//
// Layouts: uhppoted-nodejs src/encoder.js and src/decoder.js; uhppote-core messages/*.go (the status
// sequence number at 40, the card PIN at 24).

export const UHPPOTE_PORT = 60000;
export const PACKET_SIZE = 64;
export const START_OF_MESSAGE = 0x17;
/** Firmware v6.62 pushes its events with 0x19 in byte 0 (uhppoted-nodejs src/codec.js). */
export const START_OF_MESSAGE_V662_EVENT = 0x19;
/** The value some destructive requests carry to show they are meant (delete-all-cards, set-event-index...). */
export const MAGIC_WORD = 0x55aaaa55;

/** Per door: 0 no access, 1 at any time, 2..254 a time profile id. */
export interface CardRecord {
  card: number;
  from: string /* YYYY-MM-DD */;
  to: string;
  doors: [number, number, number, number];
  pin: number /* 0 none */;
}

export interface TimeProfile {
  id: number;
  from: string;
  to: string;
  weekdays: { mon: boolean; tue: boolean; wed: boolean; thu: boolean; fri: boolean; sat: boolean; sun: boolean };
  segments: Array<{ start: string /* HH:MM */; end: string }> /* up to 3 */;
  linkedTo: number /* 0 none */;
}

export interface ControllerEvent {
  index: number;
  type: number /* 1 swipe, 2 door, 3 alarm, 0xff overwritten */;
  granted: boolean;
  door: number;
  direction: number /* 1 in, 2 out */;
  card: number;
  timestamp: string /* 'YYYY-MM-DD HH:mm:ss' controller local time; '' when the controller sent none */;
  reason: number;
}

export interface ControllerStatus {
  serial: number;
  systemTime: string /* 'YYYY-MM-DD HH:mm:ss' */;
  doorsOpen: [boolean, boolean, boolean, boolean];
  buttons: [boolean, boolean, boolean, boolean];
  relays: number;
  inputs: number;
  systemError: number;
  specialInfo: number;
  sequence: number;
  event: ControllerEvent | null /* null when the controller has no event (index 0) */;
}

export type Request =
  | { fn: 'get-status' }
  | { fn: 'get-time' }
  | { fn: 'set-time'; datetime: string }
  | { fn: 'get-listener' }
  | { fn: 'set-listener'; address: string; port: number }
  | { fn: 'open-door'; door: number }
  | { fn: 'get-cards' }
  | { fn: 'get-card-by-id'; card: number }
  | { fn: 'get-card-by-index'; index: number }
  | { fn: 'put-card'; record: CardRecord }
  | { fn: 'delete-card'; card: number }
  | { fn: 'delete-all-cards' }
  | { fn: 'get-time-profile'; profileId: number }
  | { fn: 'set-time-profile'; profile: TimeProfile }
  | { fn: 'clear-time-profiles' }
  | { fn: 'get-event'; index: number }
  | { fn: 'get-event-index' }
  | { fn: 'set-event-index'; index: number }
  | { fn: 'record-special-events'; enable: boolean }
  | { fn: 'get-device' };

export type RequestFunction = Request['fn'];

export interface DeviceInfo {
  address: string;
  netmask: string;
  gateway: string;
  mac: string /* aa:bb:cc:dd:ee:ff */;
  version: string /* the 4 BCD digits, e.g. '0892' for v8.92 */;
  date: string /* firmware date YYYY-MM-DD */;
}

export type Response =
  | { fn: 'get-status'; serial: number; status: ControllerStatus }
  | { fn: 'get-time'; serial: number; datetime: string }
  | { fn: 'set-time'; serial: number; datetime: string }
  | { fn: 'get-listener'; serial: number; address: string; port: number }
  | { fn: 'set-listener'; serial: number; ok: boolean }
  | { fn: 'open-door'; serial: number; ok: boolean }
  | { fn: 'get-cards'; serial: number; count: number }
  | { fn: 'get-card-by-id'; serial: number; record: CardRecord | null }
  /** `deleted`: the slot holds a deleted card (number 0xffffffff); `record` is null then, as past the end. */
  | { fn: 'get-card-by-index'; serial: number; record: CardRecord | null; deleted: boolean }
  | { fn: 'put-card'; serial: number; ok: boolean }
  | { fn: 'delete-card'; serial: number; ok: boolean }
  | { fn: 'delete-all-cards'; serial: number; ok: boolean }
  | { fn: 'get-time-profile'; serial: number; profile: TimeProfile | null }
  | { fn: 'set-time-profile'; serial: number; ok: boolean }
  | { fn: 'clear-time-profiles'; serial: number; ok: boolean }
  /** `event` is null when the controller has no event at that index (it answers index 0). */
  | { fn: 'get-event'; serial: number; event: ControllerEvent | null }
  | { fn: 'get-event-index'; serial: number; index: number }
  | { fn: 'set-event-index'; serial: number; ok: boolean }
  | { fn: 'record-special-events'; serial: number; ok: boolean }
  | { fn: 'get-device'; serial: number; device: DeviceInfo };

export type ResponseOf<F extends RequestFunction> = Extract<Response, { fn: F }>;

/** Function codes (uhppoted-nodejs src/opcodes.js). */
export const FUNCTION_CODES: Readonly<Record<RequestFunction, number>> = {
  'get-status': 0x20,
  'set-time': 0x30,
  'get-time': 0x32,
  'open-door': 0x40,
  'put-card': 0x50,
  'delete-card': 0x52,
  'delete-all-cards': 0x54,
  'get-cards': 0x58,
  'get-card-by-id': 0x5a,
  'get-card-by-index': 0x5c,
  'set-time-profile': 0x88,
  'clear-time-profiles': 0x8a,
  'record-special-events': 0x8e,
  'set-listener': 0x90,
  'get-listener': 0x92,
  'get-device': 0x94,
  'get-time-profile': 0x98,
  'get-event': 0xb0,
  'set-event-index': 0xb2,
  'get-event-index': 0xb4,
};

const FUNCTIONS_BY_CODE = new Map<number, RequestFunction>(
  (Object.entries(FUNCTION_CODES) as Array<[RequestFunction, number]>).map(([fn, code]) => [code, fn]),
);

export function functionOfCode(code: number): RequestFunction | undefined {
  return FUNCTIONS_BY_CODE.get(code);
}

// Event types and reasons, with the meanings of uhppoted-nodejs src/lookup.js and src/locales/en-US/en-US.js.
export const EVENT_TYPE = { NONE: 0x00, SWIPE: 0x01, DOOR: 0x02, ALARM: 0x03, OVERWRITTEN: 0xff } as const;
export const EVENT_TYPES: Readonly<Record<number, string>> = {
  0x00: 'none',
  0x01: 'card swipe',
  0x02: 'door',
  0x03: 'alarm',
  0xff: '<overwritten>',
};

export const DIRECTION = { IN: 1, OUT: 2 } as const;

export const REASON = {
  SWIPE: 1,
  SWIPE_DENIED_SYSTEM: 5,
  NO_ACCESS_RIGHTS: 6,
  INCORRECT_PASSWORD: 7,
  ANTI_PASSBACK: 8,
  MORE_CARDS: 9,
  FIRST_CARD_OPEN: 10,
  DOOR_NORMALLY_CLOSED: 11,
  INTERLOCK: 12,
  NOT_IN_ALLOWED_TIME_PERIOD: 13,
  INVALID_TIMEZONE: 15,
  ACCESS_DENIED: 18,
  PUSH_BUTTON_OK: 20,
  DOOR_OPENED: 23,
  DOOR_CLOSED: 24,
  DOOR_OPENED_SUPERVISOR_PASSWORD: 25,
  CONTROLLER_POWER_ON: 28,
  CONTROLLER_RESET: 29,
  PUSHBUTTON_INVALID_DOOR_LOCKED: 31,
  PUSHBUTTON_INVALID_OFFLINE: 32,
  PUSHBUTTON_INVALID_INTERLOCK: 33,
  PUSHBUTTON_INVALID_THREAT: 34,
  DOOR_OPEN_TOO_LONG: 37,
  FORCED_OPEN: 38,
  FIRE: 39,
  FORCED_CLOSED: 40,
  THEFT_PREVENTION: 41,
  ZONE_24X7: 42,
  EMERGENCY: 43,
  REMOTE_OPEN_DOOR: 44,
  REMOTE_OPEN_DOOR_USB_READER: 45,
} as const;

/** Reason code to its meaning; a code not listed here is '(reserved)'. */
export const EVENT_REASONS: Readonly<Record<number, string>> = {
  1: 'swipe',
  5: 'swipe:denied (system)',
  6: 'no access rights',
  7: 'incorrect password',
  8: 'anti-passback',
  9: 'more cards',
  10: 'first card open',
  11: 'door is normally closed',
  12: 'interlock',
  13: 'not in allowed time period',
  15: 'invalid timezone',
  18: 'access denied',
  20: 'push button ok',
  23: 'door opened',
  24: 'door closed',
  25: 'door opened (supervisor password)',
  28: 'controller power on',
  29: 'controller reset',
  31: 'pushbutton invalid (door locked)',
  32: 'pushbutton invalid (offline)',
  33: 'pushbutton invalid (interlock)',
  34: 'pushbutton invalid (threat)',
  37: 'door open too long',
  38: 'forced open',
  39: 'fire',
  40: 'forced closed',
  41: 'theft prevention',
  42: '24x7 zone',
  43: 'emergency',
  44: 'remote open door',
  45: 'remote open door (USB reader)',
};

export function reasonText(reason: number): string {
  return EVENT_REASONS[reason] ?? '(reserved)';
}

export class UhppoteCodecError extends Error {
  override name = 'UhppoteCodecError';
}

// ---------------------------------------------------------------------------------------------------------
// Field helpers

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;
const HHMM = /^(\d{2}):(\d{2})$/;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function bcdByte(twoDigits: string): number {
  return (Number(twoDigits[0]) << 4) | Number(twoDigits[1]);
}

/** Writes a string of an even number of decimal digits as BCD at offset. */
function writeBcd(buffer: Buffer, offset: number, digits: string): void {
  for (let i = 0; i < digits.length; i += 2) buffer.writeUInt8(bcdByte(digits.slice(i, i + 2)), offset + i / 2);
}

function readBcd(buffer: Buffer, offset: number, length: number): string {
  let digits = '';
  for (let i = 0; i < length; i++) {
    const byte = buffer.readUInt8(offset + i);
    digits += `${byte >>> 4}${byte & 0x0f}`;
  }
  return digits;
}

function dateDigits(date: string, what: string): string {
  const m = DATE.exec(date);
  if (!m) throw new UhppoteCodecError(`${what} is not a YYYY-MM-DD date`);
  return `${m[1]}${m[2]}${m[3]}`;
}

function datetimeDigits(datetime: string, what: string): string {
  const m = DATETIME.exec(datetime);
  if (!m) throw new UhppoteCodecError(`${what} is not a 'YYYY-MM-DD HH:mm:ss' time`);
  return `${m[1]}${m[2]}${m[3]}${m[4]}${m[5]}${m[6]}`;
}

function hhmmDigits(hhmm: string, what: string): string {
  const m = HHMM.exec(hhmm);
  if (!m) throw new UhppoteCodecError(`${what} is not an HH:MM time`);
  return `${m[1]}${m[2]}`;
}

/** A BCD date (4 bytes) as YYYY-MM-DD, '' for the zero date. */
function readDate(buffer: Buffer, offset: number): string {
  const d = readBcd(buffer, offset, 4);
  if (d === '00000000') return '';
  return `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)}`;
}

/** A BCD timestamp (7 bytes) as 'YYYY-MM-DD HH:mm:ss', '' for the zero timestamp. */
function readDatetime(buffer: Buffer, offset: number): string {
  const d = readBcd(buffer, offset, 7);
  if (d === '00000000000000') return '';
  return `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6, 8)} ${d.slice(8, 10)}:${d.slice(10, 12)}:${d.slice(12, 14)}`;
}

function readHHmm(buffer: Buffer, offset: number): string {
  const d = readBcd(buffer, offset, 2);
  return `${d.slice(0, 2)}:${d.slice(2, 4)}`;
}

function writeIPv4(buffer: Buffer, offset: number, address: string): void {
  const m = IPV4.exec(address);
  const octets = m ? m.slice(1, 5).map(Number) : [];
  if (octets.length !== 4 || octets.some((o) => o > 255)) throw new UhppoteCodecError('address is not an IPv4 address');
  octets.forEach((o, i) => buffer.writeUInt8(o, offset + i));
}

function readIPv4(buffer: Buffer, offset: number): string {
  return [0, 1, 2, 3].map((i) => buffer.readUInt8(offset + i)).join('.');
}

function bool(buffer: Buffer, offset: number): boolean {
  return buffer.readUInt8(offset) === 0x01;
}

function checkInteger(value: number, min: number, max: number, what: string): number {
  if (!Number.isInteger(value) || value < min || value > max) throw new UhppoteCodecError(`${what} must be an integer from ${min} to ${max}`);
  return value;
}

const checkUint32 = (value: number, what: string): number => checkInteger(value, 0, 0xffffffff, what);
const checkDoor = (door: number): number => checkInteger(door, 1, 4, 'door');
const checkProfileId = (id: number): number => checkInteger(id, 2, 254, 'time profile id');

function packet(serial: number, code: number): Buffer {
  const buffer = Buffer.alloc(PACKET_SIZE);
  buffer.writeUInt8(START_OF_MESSAGE, 0);
  buffer.writeUInt8(code, 1);
  buffer.writeUInt32LE(checkUint32(serial, 'serial'), 4);
  return buffer;
}

const WEEKDAY_OFFSETS = [
  ['mon', 17],
  ['tue', 18],
  ['wed', 19],
  ['thu', 20],
  ['fri', 21],
  ['sat', 22],
  ['sun', 23],
] as const;

// ---------------------------------------------------------------------------------------------------------
// Requests

function writeCardRecord(buffer: Buffer, record: CardRecord): void {
  buffer.writeUInt32LE(checkUint32(record.card, 'card number'), 8);
  writeBcd(buffer, 12, dateDigits(record.from, 'card valid-from'));
  writeBcd(buffer, 16, dateDigits(record.to, 'card valid-to'));
  record.doors.forEach((permission, i) => buffer.writeUInt8(checkInteger(permission, 0, 254, `permission of door ${i + 1}`), 20 + i));
  const pin = checkInteger(record.pin, 0, 999999, 'PIN');
  buffer.writeUIntLE(pin, 24, 3);
}

function readCardRecord(buffer: Buffer): CardRecord {
  return {
    card: buffer.readUInt32LE(8),
    from: readDate(buffer, 12),
    to: readDate(buffer, 16),
    doors: [buffer.readUInt8(20), buffer.readUInt8(21), buffer.readUInt8(22), buffer.readUInt8(23)],
    pin: buffer.readUIntLE(24, 3),
  };
}

function writeTimeProfile(buffer: Buffer, profile: TimeProfile): void {
  buffer.writeUInt8(checkProfileId(profile.id), 8);
  writeBcd(buffer, 9, dateDigits(profile.from, 'profile valid-from'));
  writeBcd(buffer, 13, dateDigits(profile.to, 'profile valid-to'));
  for (const [day, offset] of WEEKDAY_OFFSETS) buffer.writeUInt8(profile.weekdays[day] ? 1 : 0, offset);
  if (profile.segments.length > 3) throw new UhppoteCodecError('a time profile has at most 3 segments');
  profile.segments.forEach((segment, i) => {
    writeBcd(buffer, 24 + 4 * i, hhmmDigits(segment.start, 'segment start'));
    writeBcd(buffer, 26 + 4 * i, hhmmDigits(segment.end, 'segment end'));
  });
  buffer.writeUInt8(profile.linkedTo === 0 ? 0 : checkProfileId(profile.linkedTo), 36);
}

function readTimeProfile(buffer: Buffer): TimeProfile | null {
  const id = buffer.readUInt8(8);
  if (id === 0) return null;
  const segments: TimeProfile['segments'] = [];
  for (let i = 0; i < 3; i++) {
    const start = readHHmm(buffer, 24 + 4 * i);
    const end = readHHmm(buffer, 26 + 4 * i);
    if (start !== '00:00' || end !== '00:00') segments.push({ start, end });
  }
  return {
    id,
    from: readDate(buffer, 9),
    to: readDate(buffer, 13),
    weekdays: {
      mon: bool(buffer, 17),
      tue: bool(buffer, 18),
      wed: bool(buffer, 19),
      thu: bool(buffer, 20),
      fri: bool(buffer, 21),
      sat: bool(buffer, 22),
      sun: bool(buffer, 23),
    },
    segments,
    linkedTo: buffer.readUInt8(36),
  };
}

/** The 64-byte request packet for a controller. Throws UhppoteCodecError on a field out of range. */
export function encodeRequest(serial: number, request: Request): Buffer {
  const buffer = packet(serial, FUNCTION_CODES[request.fn]);
  switch (request.fn) {
    case 'get-status':
    case 'get-time':
    case 'get-listener':
    case 'get-cards':
    case 'get-event-index':
    case 'get-device':
      break;
    case 'set-time':
      writeBcd(buffer, 8, datetimeDigits(request.datetime, 'datetime'));
      break;
    case 'set-listener':
      writeIPv4(buffer, 8, request.address);
      buffer.writeUInt16LE(checkInteger(request.port, 0, 65535, 'port'), 12);
      break;
    case 'open-door':
      buffer.writeUInt8(checkDoor(request.door), 8);
      break;
    case 'get-card-by-id':
    case 'delete-card':
      buffer.writeUInt32LE(checkUint32(request.card, 'card number'), 8);
      break;
    case 'get-card-by-index':
      buffer.writeUInt32LE(checkUint32(request.index, 'card index'), 8);
      break;
    case 'put-card':
      writeCardRecord(buffer, request.record);
      break;
    case 'delete-all-cards':
    case 'clear-time-profiles':
      buffer.writeUInt32LE(MAGIC_WORD, 8);
      break;
    case 'get-time-profile':
      buffer.writeUInt8(checkProfileId(request.profileId), 8);
      break;
    case 'set-time-profile':
      writeTimeProfile(buffer, request.profile);
      break;
    case 'get-event':
      buffer.writeUInt32LE(checkUint32(request.index, 'event index'), 8);
      break;
    case 'set-event-index':
      buffer.writeUInt32LE(checkUint32(request.index, 'event index'), 8);
      buffer.writeUInt32LE(MAGIC_WORD, 12);
      break;
    case 'record-special-events':
      buffer.writeUInt8(request.enable ? 1 : 0, 8);
      break;
  }
  return buffer;
}

function header(packetBytes: Buffer, acceptV662Event: boolean): { serial: number; fn: RequestFunction } {
  if (!Buffer.isBuffer(packetBytes) || packetBytes.length !== PACKET_SIZE) throw new UhppoteCodecError('not a 64-byte packet');
  const som = packetBytes.readUInt8(0);
  const code = packetBytes.readUInt8(1);
  const v662Event = acceptV662Event && som === START_OF_MESSAGE_V662_EVENT && code === FUNCTION_CODES['get-status'];
  if (som !== START_OF_MESSAGE && !v662Event) throw new UhppoteCodecError('not a UHPPOTE packet (start of message)');
  const fn = FUNCTIONS_BY_CODE.get(code);
  if (!fn) throw new UhppoteCodecError(`unsupported function code 0x${code.toString(16).padStart(2, '0')}`);
  return { serial: packetBytes.readUInt32LE(4), fn };
}

/** A request packet as a controller reads it (the simulator uses it). Throws UhppoteCodecError. */
export function decodeRequest(packetBytes: Buffer): { serial: number; request: Request } {
  const { serial, fn } = header(packetBytes, false);
  const b = packetBytes;
  const magic = (offset: number): void => {
    if (b.readUInt32LE(offset) !== MAGIC_WORD) throw new UhppoteCodecError(`${fn} without its magic word`);
  };
  const request = ((): Request => {
    switch (fn) {
      case 'get-status':
      case 'get-time':
      case 'get-listener':
      case 'get-cards':
      case 'get-event-index':
      case 'get-device':
        return { fn };
      case 'set-time': {
        const datetime = readDatetime(b, 8);
        if (!DATETIME.test(datetime)) throw new UhppoteCodecError('set-time without a time');
        return { fn, datetime };
      }
      case 'set-listener':
        return { fn, address: readIPv4(b, 8), port: b.readUInt16LE(12) };
      case 'open-door':
        return { fn, door: b.readUInt8(8) };
      case 'get-card-by-id':
      case 'delete-card':
        return { fn, card: b.readUInt32LE(8) };
      case 'get-card-by-index':
        return { fn, index: b.readUInt32LE(8) };
      case 'put-card':
        return { fn, record: readCardRecord(b) };
      case 'delete-all-cards':
      case 'clear-time-profiles':
        magic(8);
        return { fn };
      case 'get-time-profile':
        return { fn, profileId: b.readUInt8(8) };
      case 'set-time-profile': {
        const profile = readTimeProfile(b);
        if (!profile) throw new UhppoteCodecError('set-time-profile without a profile id');
        return { fn, profile };
      }
      case 'get-event':
        return { fn, index: b.readUInt32LE(8) };
      case 'set-event-index':
        magic(12);
        return { fn, index: b.readUInt32LE(8) };
      case 'record-special-events':
        return { fn, enable: bool(b, 8) };
    }
  })();
  return { serial, request };
}

// ---------------------------------------------------------------------------------------------------------
// Responses

function writeEvent(buffer: Buffer, event: ControllerEvent | null): void {
  if (!event) return; // index 0 and zeros: no event
  buffer.writeUInt32LE(checkUint32(event.index, 'event index'), 8);
  buffer.writeUInt8(checkInteger(event.type, 0, 255, 'event type'), 12);
  buffer.writeUInt8(event.granted ? 1 : 0, 13);
  buffer.writeUInt8(checkInteger(event.door, 0, 255, 'event door'), 14);
  buffer.writeUInt8(checkInteger(event.direction, 0, 255, 'event direction'), 15);
  buffer.writeUInt32LE(checkUint32(event.card, 'event card'), 16);
  if (event.timestamp !== '') writeBcd(buffer, 20, datetimeDigits(event.timestamp, 'event timestamp'));
  buffer.writeUInt8(checkInteger(event.reason, 0, 255, 'event reason'), 27);
}

function readEvent(buffer: Buffer): ControllerEvent | null {
  const index = buffer.readUInt32LE(8);
  if (index === 0) return null;
  return {
    index,
    type: buffer.readUInt8(12),
    granted: bool(buffer, 13),
    door: buffer.readUInt8(14),
    direction: buffer.readUInt8(15),
    card: buffer.readUInt32LE(16),
    timestamp: readDatetime(buffer, 20),
    reason: buffer.readUInt8(27),
  };
}

function writeStatus(buffer: Buffer, status: ControllerStatus): void {
  writeEvent(buffer, status.event);
  status.doorsOpen.forEach((open, i) => buffer.writeUInt8(open ? 1 : 0, 28 + i));
  status.buttons.forEach((pressed, i) => buffer.writeUInt8(pressed ? 1 : 0, 32 + i));
  buffer.writeUInt8(checkInteger(status.systemError, 0, 255, 'system error'), 36);
  const digits = datetimeDigits(status.systemTime, 'system time');
  writeBcd(buffer, 37, digits.slice(8, 14)); // HHmmss
  buffer.writeUInt32LE(checkUint32(status.sequence, 'sequence'), 40);
  buffer.writeUInt8(checkInteger(status.specialInfo, 0, 255, 'special info'), 48);
  buffer.writeUInt8(checkInteger(status.relays, 0, 255, 'relays'), 49);
  buffer.writeUInt8(checkInteger(status.inputs, 0, 255, 'inputs'), 50);
  writeBcd(buffer, 51, digits.slice(2, 8)); // yyMMdd
}

function readStatus(buffer: Buffer): ControllerStatus {
  const date = readBcd(buffer, 51, 3);
  const time = readBcd(buffer, 37, 3);
  return {
    serial: buffer.readUInt32LE(4),
    systemTime: `20${date.slice(0, 2)}-${date.slice(2, 4)}-${date.slice(4, 6)} ${time.slice(0, 2)}:${time.slice(2, 4)}:${time.slice(4, 6)}`,
    doorsOpen: [bool(buffer, 28), bool(buffer, 29), bool(buffer, 30), bool(buffer, 31)],
    buttons: [bool(buffer, 32), bool(buffer, 33), bool(buffer, 34), bool(buffer, 35)],
    relays: buffer.readUInt8(49),
    inputs: buffer.readUInt8(50),
    systemError: buffer.readUInt8(36),
    specialInfo: buffer.readUInt8(48),
    sequence: buffer.readUInt32LE(40),
    event: readEvent(buffer),
  };
}

/** A controller's 64-byte response packet (the simulator uses it). Throws UhppoteCodecError. */
export function encodeResponse(serial: number, response: Response): Buffer {
  const buffer = packet(serial, FUNCTION_CODES[response.fn]);
  switch (response.fn) {
    case 'get-status':
      writeStatus(buffer, response.status);
      break;
    case 'get-time':
    case 'set-time':
      writeBcd(buffer, 8, datetimeDigits(response.datetime, 'datetime'));
      break;
    case 'get-listener':
      writeIPv4(buffer, 8, response.address);
      buffer.writeUInt16LE(checkInteger(response.port, 0, 65535, 'port'), 12);
      break;
    case 'set-listener':
    case 'open-door':
    case 'put-card':
    case 'delete-card':
    case 'delete-all-cards':
    case 'set-time-profile':
    case 'clear-time-profiles':
    case 'set-event-index':
    case 'record-special-events':
      buffer.writeUInt8(response.ok ? 1 : 0, 8);
      break;
    case 'get-cards':
      buffer.writeUInt32LE(checkUint32(response.count, 'card count'), 8);
      break;
    case 'get-card-by-id':
      if (response.record) writeCardRecord(buffer, response.record);
      break;
    case 'get-card-by-index':
      if (response.record) writeCardRecord(buffer, response.record);
      else if (response.deleted) buffer.writeUInt32LE(0xffffffff, 8);
      break;
    case 'get-time-profile':
      if (response.profile) writeTimeProfile(buffer, response.profile);
      break;
    case 'get-event':
      writeEvent(buffer, response.event);
      break;
    case 'get-event-index':
      buffer.writeUInt32LE(checkUint32(response.index, 'event index'), 8);
      break;
    case 'get-device': {
      const d = response.device;
      writeIPv4(buffer, 8, d.address);
      writeIPv4(buffer, 12, d.netmask);
      writeIPv4(buffer, 16, d.gateway);
      const mac = d.mac.split(':');
      if (mac.length !== 6 || mac.some((h) => !/^[0-9a-f]{2}$/i.test(h))) throw new UhppoteCodecError('mac is not six hex bytes');
      mac.forEach((h, i) => buffer.writeUInt8(parseInt(h, 16), 20 + i));
      if (!/^\d{4}$/.test(d.version)) throw new UhppoteCodecError('version is not 4 digits');
      writeBcd(buffer, 26, d.version);
      writeBcd(buffer, 28, dateDigits(d.date, 'firmware date'));
      break;
    }
  }
  return buffer;
}

/**
 * A controller's response, decoded. Throws UhppoteCodecError on a packet that is not a valid 64-byte
 * response (wrong size, start of message or an unknown function code).
 */
export function decodeResponse(packetBytes: Buffer): Response {
  const { serial, fn } = header(packetBytes, true);
  const b = packetBytes;
  switch (fn) {
    case 'get-status':
      return { fn, serial, status: readStatus(b) };
    case 'get-time':
    case 'set-time':
      return { fn, serial, datetime: readDatetime(b, 8) };
    case 'get-listener':
      return { fn, serial, address: readIPv4(b, 8), port: b.readUInt16LE(12) };
    case 'set-listener':
    case 'open-door':
    case 'put-card':
    case 'delete-card':
    case 'delete-all-cards':
    case 'set-time-profile':
    case 'clear-time-profiles':
    case 'set-event-index':
    case 'record-special-events':
      return { fn, serial, ok: bool(b, 8) };
    case 'get-cards':
      return { fn, serial, count: b.readUInt32LE(8) };
    case 'get-card-by-id': {
      const number = b.readUInt32LE(8);
      return { fn, serial, record: number === 0 || number === 0xffffffff ? null : readCardRecord(b) };
    }
    case 'get-card-by-index': {
      const number = b.readUInt32LE(8);
      const deleted = number === 0xffffffff;
      return { fn, serial, record: number === 0 || deleted ? null : readCardRecord(b), deleted };
    }
    case 'get-time-profile':
      return { fn, serial, profile: readTimeProfile(b) };
    case 'get-event':
      return { fn, serial, event: readEvent(b) };
    case 'get-event-index':
      return { fn, serial, index: b.readUInt32LE(8) };
    case 'get-device':
      return {
        fn,
        serial,
        device: {
          address: readIPv4(b, 8),
          netmask: readIPv4(b, 12),
          gateway: readIPv4(b, 16),
          mac: [20, 21, 22, 23, 24, 25].map((i) => b.readUInt8(i).toString(16).padStart(2, '0')).join(':'),
          version: readBcd(b, 26, 2),
          date: readDate(b, 28),
        },
      };
  }
}

/**
 * An event a controller pushed to its listener: a get-status response (function 0x20; byte 0 is 0x19 on
 * firmware v6.62). Throws UhppoteCodecError on anything else.
 */
export function decodeEventPacket(packetBytes: Buffer): ControllerStatus {
  const response = decodeResponse(packetBytes);
  if (response.fn !== 'get-status') throw new UhppoteCodecError('not an event packet (function 0x20)');
  return response.status;
}
