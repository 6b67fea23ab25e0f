// Pure rules of people: phone normalisation, e-mail comparison and reserved names.
import { parsePhoneNumberWithError } from 'libphonenumber-js';

/**
 * An international number (leading `+` and country code) in E.164, or null when it is not a valid one.
 * Spaces, dashes, dots and brackets are allowed in the input.
 */
/** A phone as sent: + first, then digits with spaces, dashes, dots and brackets only (README: People: phone). */
const PHONE_SPELLING = /^\+[0-9 ().-]+$/;

export function normalisePhone(raw: string): string | null {
  const trimmed = raw.trim();
  // libphonenumber reads a number out of longer text ("… ext 2", "… call me"); the API stores what was sent.
  if (!PHONE_SPELLING.test(trimmed)) return null;
  try {
    const parsed = parsePhoneNumberWithError(trimmed);
    return parsed.isValid() ? parsed.number : null;
  } catch {
    return null;
  }
}

/**
 * An e-mail as compared, on create (de-duplication) and on search alike: ASCII letters lower-cased, nothing
 * else. Stored addresses are ASCII (the schema's `email` format), while lower() in the database and
 * toLowerCase() fold Unicode too (`İ` to `i`, the Kelvin sign to `k`), which matched addresses nobody has.
 */
export function emailKey(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

export const RESERVED_NAMES = ['Admin', 'ServiceUser'];

/** True when the name, or its first word, is a reserved service name (compared case-insensitively). */
export function isReservedName(name: string, brandName: string): boolean {
  const reserved = [...RESERVED_NAMES, brandName].map((n) => n.toLowerCase());
  const whole = name.trim().toLowerCase();
  const firstWord = whole.split(/[\s,.;:!?]+/)[0] ?? '';
  return reserved.includes(whole) || reserved.includes(firstWord);
}
