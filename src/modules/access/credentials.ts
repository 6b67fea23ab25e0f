// Credentials: what a card, fob or phone presents at a reader, in the one normal form keys store (so a
// duplicate is a string comparison), and the keyed digests that stand for it wherever it must not be read
// (the service's lookup index, the access lists gateways keep).
import { createHmac, randomBytes } from 'node:crypto';

export const MAX_CREDENTIAL_INPUT = 100;

const ACCEPTED_FORMS =
  'wiegand26:<facility 0–255>:<card 0–65535>, wiegand34:<facility 0–65535>:<card 0–65535>, ' +
  'uid:<4 to 10 bytes in hex> or phone:<32 hex digits>';

const PREFIXES: Record<string, 'wiegand26' | 'wiegand34' | 'uid' | 'phone'> = {
  wiegand26: 'wiegand26',
  w26: 'wiegand26',
  wiegand34: 'wiegand34',
  w34: 'wiegand34',
  uid: 'uid',
  phone: 'phone',
};

/** Facility limit per format: Wiegand 26 carries an 8-bit facility code, our Wiegand 34 a 16-bit one. */
const FACILITY_MAX = { wiegand26: 255, wiegand34: 65535 } as const;
const CARD_MAX = 65535;

// Contiguous hex (optionally 0x…), or bytes of two digits split by `:`, `-` or spaces, as readers print them.
// A split into other groups (`04a:1b`) is refused rather than guessed at.
const HEX_CONTIGUOUS = /^(?:0x)?([0-9a-f]+)$/i;
const HEX_BYTES = /^[0-9a-f]{2}(?:(?:[:-]|\s+)[0-9a-f]{2})+$/i;

type Parsed = { credential: string } | { error: string };

/** A decimal of ASCII digits (leading zeros allowed) within 0..max, or null. */
function decimal(text: string, max: number): number | null {
  if (!/^[0-9]{1,10}$/.test(text)) return null;
  const value = Number(text);
  return value <= max ? value : null;
}

/**
 * The normal form of a credential an operator typed or a reader presented, or a message saying why not.
 * Forms: `wiegand26:<facility>:<card>`, `wiegand34:<facility>:<card>` (decimals without leading zeros),
 * `uid:<lowercase hex>`, `phone:<lowercase hex>`. Prefixes are case-insensitive and `w26`/`w34` short.
 * A bare number is refused: without its format, 12345 could be several different cards.
 */
export function parseCredential(input: string): Parsed {
  if (typeof input !== 'string') return { error: `A credential is text: ${ACCEPTED_FORMS}.` };
  if (input.length > MAX_CREDENTIAL_INPUT) return { error: `A credential is at most ${MAX_CREDENTIAL_INPUT} characters.` };
  const text = input.trim();
  const colon = text.indexOf(':');
  const kind = colon < 0 ? undefined : PREFIXES[text.slice(0, colon).trim().toLowerCase()];
  if (!kind) return { error: `Unknown credential format; use ${ACCEPTED_FORMS}.` };
  const rest = text.slice(colon + 1).trim();

  if (kind === 'wiegand26' || kind === 'wiegand34') {
    const parts = rest.split(':').map((part) => part.trim());
    if (parts.length !== 2) return { error: `A ${kind} credential is ${kind}:<facility>:<card>, both decimal.` };
    const facility = decimal(parts[0] as string, FACILITY_MAX[kind]);
    if (facility === null) return { error: `The facility code of ${kind} is a decimal from 0 to ${FACILITY_MAX[kind]}.` };
    const card = decimal(parts[1] as string, CARD_MAX);
    if (card === null) return { error: `The card number of ${kind} is a decimal from 0 to ${CARD_MAX}.` };
    return { credential: `${kind}:${facility}:${card}` };
  }

  const hex = HEX_BYTES.test(rest) ? rest.replace(/[:\s-]+/g, '') : HEX_CONTIGUOUS.exec(rest)?.[1];
  if (kind === 'uid') {
    // 4, 7 and 10 bytes are the ISO 14443 UID sizes; 4–10 also admits other readers' serials.
    if (!hex || hex.length % 2 !== 0 || hex.length < 8 || hex.length > 20) {
      return { error: 'A uid credential is 4 to 10 bytes in hex (8 to 20 digits, an even number), e.g. uid:04a1b2c3.' };
    }
    return { credential: `uid:${hex.toLowerCase()}` };
  }
  if (!hex || hex.length !== 32) return { error: 'A phone credential is phone: and 32 hex digits.' };
  return { credential: `phone:${hex.toLowerCase()}` };
}

/** The credential of an activated phone key: 128 random bits, so it cannot be guessed or enumerated. */
export function newPhoneCredential(): string {
  return `phone:${randomBytes(16).toString('hex')}`;
}

/**
 * HMAC-SHA256 of a normalised credential under `secret` (its UTF-8 bytes), base64url without padding.
 * Under the server's secret it indexes keys by credential; under a gateway's list secret it stands for the
 * credential in that gateway's access list, so a copied list reveals no card numbers and is useless at
 * another gateway. A credential not in normal form would digest to a value nothing matches, a silent
 * denial at the door, so it throws instead (a programming error, never user input).
 */
export function credentialDigest(secret: string, credential: string): string {
  if (!secret) throw new Error('credentialDigest needs a secret.');
  const parsed = parseCredential(credential);
  if (!('credential' in parsed) || parsed.credential !== credential) throw new Error('credentialDigest takes a normalised credential.');
  return createHmac('sha256', secret).update(credential).digest('base64url');
}

/** The label of the list secret's derivation: a new version of the list format gets a new label. */
export const ACCESS_LIST_SECRET_LABEL = 'latchkey access list v1';

/**
 * A gateway's access-list secret, derived from its MQTT password so both sides hold it without sending it
 * again: HMAC-SHA256(key = password, data = ACCESS_LIST_SECRET_LABEL), base64url. Rotating the password
 * rotates the list secret, which is what cutting a gateway off must do.
 */
export function gatewayAccessSecret(mqttPassword: string): string {
  if (!mqttPassword) throw new Error('gatewayAccessSecret needs the gateway password.');
  return createHmac('sha256', mqttPassword).update(ACCESS_LIST_SECRET_LABEL).digest('base64url');
}
