// The card number a UHPPOTE controller stores and reports for a Latchkey credential.
//
// Wiegand-26 (8-bit facility code, 16-bit card): the controller numbers the card as the decimal
// facility × 100000 + card, e.g. facility 100, card 58400 → 10058400. Source: uhppote-core
// uhppote/put_card.go, isWiegand26 (since v0.8.5, github.com/uhppoted/uhppote-core/issues/11): a valid
// Wiegand-26 number printed as 8 digits is a facility code 0..255 in the first 3 and a card 0..65535 in
// the last 5.
//
// Wiegand-34, card UIDs and phone credentials: null. uhppoted has no confirmed numbering for them: the
// one report of Wiegand-34 readers on these boards (uhppote-core issue #15) shows numbers that are not
// facility × 100000 + card, and support for Wiegand-34 is still open (uhppoted/uhppoted issue #34). A
// guessed number would grant or deny the wrong card, so we map only what is documented.

const W26 = /^wiegand26:(\d{1,3}):(\d{1,5})$/;
const W26_FACILITY_MAX = 255;
const W26_CARD_MAX = 65535;
const W26_FACTOR = 100000;

/** The controller's card number for a normalised credential, or null when a controller cannot hold it. */
export function cardNumberOf(credential: string): number | null {
  const m = W26.exec(credential);
  if (!m) return null;
  const facility = Number(m[1]);
  const card = Number(m[2]);
  if (facility > W26_FACILITY_MAX || card > W26_CARD_MAX) return null;
  if (String(facility) !== m[1] || String(card) !== m[2]) return null; // normal form: no leading zeros
  return facility * W26_FACTOR + card;
}

/** The credentials a card number reported by a controller stands for: one Wiegand-26 credential, or none. */
export function credentialsForCardNumber(n: number): string[] {
  if (!Number.isInteger(n) || n < 0 || n > W26_FACILITY_MAX * W26_FACTOR + W26_CARD_MAX) return [];
  const facility = Math.floor(n / W26_FACTOR);
  const card = n % W26_FACTOR;
  if (card > W26_CARD_MAX) return [];
  return [`wiegand26:${facility}:${card}`];
}
