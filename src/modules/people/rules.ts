// Pure rules of people: phone normalisation, e-mail comparison and reserved names.
import { parsePhoneNumberWithError } from 'libphonenumber-js';
import { SINGLE_LINE_TEXT } from '../../platform/validation.ts';

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

/**
 * A name is put into the service's SMS and e-mails, just above the setup link (README: API notes, "Names on one line"),
 * where a line of its own would read as the service's words: it is one line, by the rule of every name
 * (SINGLE_LINE_TEXT). The schemas check it too; this check covers every caller of the service.
 */
export function hasControlCharacter(name: string): boolean {
  return !SINGLE_LINE_TEXT.test(name);
}

export const RESERVED_NAMES = ['Admin', 'ServiceUser'];

/**
 * Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables.txt, the lower-case forms, since
 * they are looked up after case folding), so that `Аdmin` with a Cyrillic А is no way around the rule. Only
 * a reserved name's letters can be made of them, so a name written in those scripts is never refused.
 */
const LATIN_LOOK_ALIKES: Record<string, string> = {
  а: 'a', в: 'b', с: 'c', ԁ: 'd', е: 'e', һ: 'h', н: 'h', і: 'i', ј: 'j', к: 'k', м: 'm', о: 'o', р: 'p', ԛ: 'q',
  ѕ: 's', т: 't', у: 'y', х: 'x', ү: 'y', ԝ: 'w',
  α: 'a', β: 'b', ε: 'e', η: 'n', ι: 'i', κ: 'k', μ: 'm', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', γ: 'y',
};
const LOOK_ALIKE = new RegExp(`[${Object.keys(LATIN_LOOK_ALIKES).join('')}]`, 'gu');

/**
 * A name as the reserved-name rule compares it: NFKC (fullwidth `Ａ`, mathematical `𝐀`, no-break spaces
 * read as what they show), invisible characters dropped (format characters such as U+200B and U+00AD, and
 * the other default-ignorables such as variation selectors), case folded, look-alike letters read as Latin.
 */
export function reservedNameForm(name: string): string {
  return name
    .normalize('NFKC')
    .replace(/[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu, '')
    .toLowerCase()
    .normalize('NFKC')
    .replace(LOOK_ALIKE, (letter) => LATIN_LOOK_ALIKES[letter] ?? letter)
    .trim();
}

/** True when the name, or its first word, is a reserved service name (compared as `reservedNameForm` reads it). */
export function isReservedName(name: string, brandName: string): boolean {
  const reserved = [...RESERVED_NAMES, brandName].map(reservedNameForm);
  const whole = reservedNameForm(name);
  const firstWord = whole.split(/[\s,.;:!?]+/)[0] ?? '';
  return reserved.includes(whole) || reserved.includes(firstWord);
}
