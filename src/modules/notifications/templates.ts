// The texts of setup-link messages. English, and the person's language where a template exists.

/** What a sent message's setup link is replaced with once the message is purged (the link is a credential). */
export const LINK_REMOVED = '[setup link removed]';

export interface InvitationText {
  brand: string;
  personName: string;
  /** What the key opens: lock names, or the access profile when no lock carries it yet. */
  opens: string[];
  link: string;
  expiresAt: Date;
}

interface Template {
  subject: (t: InvitationText) => string;
  sms: (t: InvitationText) => string;
  email: (t: InvitationText) => string;
}

/** The longest a name stands in a message, in characters; a longer one is cut and ends in `…`. */
export const NAME_IN_MESSAGE_MAX = 64;

const GRAPHEMES = new Intl.Segmenter('en', { granularity: 'grapheme' });

/**
 * A name as a message shows it: on one line (every run of whitespace, control characters and line or
 * paragraph separators read as one space), trimmed, and at most NAME_IN_MESSAGE_MAX characters. Names are
 * refused with control characters (README: API notes, "Names on one line"), but ones stored before that rule,
 * and lock names, still reach the texts: no name can put a line of its own above the setup link.
 */
export function nameInMessage(name: string, max = NAME_IN_MESSAGE_MAX): string {
  const line = name.replace(/[\s\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]+/gu, ' ').trim();
  // Counted in what reads as one character (a grapheme: an accented letter, an emoji with its modifiers), so
  // that the cut never splits one.
  const characters = Array.from(GRAPHEMES.segment(line), (part) => part.segment);
  return characters.length <= max ? line : `${characters.slice(0, max - 1).join('').trimEnd()}…`;
}

/** The text with its names as messages show them (nameInMessage); the brand comes from the configuration. */
function shown(t: InvitationText): InvitationText {
  return { ...t, personName: nameInMessage(t.personName), opens: t.opens.map((name) => nameInMessage(name)) };
}

const list = (items: string[], and: string) =>
  items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${and} ${items[items.length - 1]}`;
const day = (date: Date) => date.toISOString().slice(0, 10);

const templates: Record<string, Template> = {
  en: {
    subject: (t) => `${t.brand}: your phone key`,
    sms: (t) =>
      t.opens.length > 0
        ? `${t.brand}: Hello ${t.personName}, your phone key for ${list(t.opens, 'and')} is ready. Activate it before ${day(t.expiresAt)}: ${t.link}`
        : `${t.brand}: Hello ${t.personName}, your phone key is ready; the doors it opens will be added later. Activate it before ${day(t.expiresAt)}: ${t.link}`,
    email: (t) =>
      [
        `Hello ${t.personName},`,
        '',
        t.opens.length > 0
          ? `a phone key has been issued to you. It opens ${list(t.opens, 'and')}.`
          : 'a phone key has been issued to you. The doors it opens will be added later.',
        '',
        `Open this link on your phone to activate it (valid until ${day(t.expiresAt)}, usable once):`,
        t.link,
        '',
        `— ${t.brand}`,
      ].join('\n'),
  },
  de: {
    subject: (t) => `${t.brand}: Ihr Handyschlüssel`,
    sms: (t) =>
      t.opens.length > 0
        ? `${t.brand}: Hallo ${t.personName}, Ihr Handyschlüssel für ${list(t.opens, 'und')} ist bereit. Aktivieren Sie ihn bis ${day(t.expiresAt)}: ${t.link}`
        : `${t.brand}: Hallo ${t.personName}, Ihr Handyschlüssel ist bereit; die Türen, die er öffnet, werden später hinzugefügt. Aktivieren Sie ihn bis ${day(t.expiresAt)}: ${t.link}`,
    email: (t) =>
      [
        `Hallo ${t.personName},`,
        '',
        t.opens.length > 0
          ? `für Sie wurde ein Handyschlüssel ausgestellt. Er öffnet ${list(t.opens, 'und')}.`
          : 'für Sie wurde ein Handyschlüssel ausgestellt. Die Türen, die er öffnet, werden später hinzugefügt.',
        '',
        `Öffnen Sie diesen Link auf Ihrem Telefon, um ihn zu aktivieren (gültig bis ${day(t.expiresAt)}, einmal verwendbar):`,
        t.link,
        '',
        `— ${t.brand}`,
      ].join('\n'),
  },
};

/** The template for a language code such as `de` or `de-AT`, English when there is none. */
export function invitationTemplate(language: string | null): Template {
  const primary = (language ?? 'en').split('-')[0]?.toLowerCase() ?? 'en';
  const template = templates[primary] ?? (templates.en as Template);
  return { subject: (t) => template.subject(shown(t)), sms: (t) => template.sms(shown(t)), email: (t) => template.email(shown(t)) };
}
