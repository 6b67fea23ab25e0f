// The key holder's browser side (README "The key holder's page"): the setup page registers a passkey; /my-key
// asks for a fresh assertion for every action ("Show my doors", each "Open") and follows an Open's command
// until the door confirms, fails or times out. No state is kept in the browser: the passkey is the key.
import { startAuthentication, startRegistration } from '@simplewebauthn/browser';
import { FOLLOW_ATTEMPTS, followDelayMs } from './follow-schedule.ts';

const lang = document.documentElement.lang === 'de' ? 'de' : 'en';

const TEXT = {
  en: {
    registering: 'Confirm with your screen lock to bind the key to this phone…',
    registered: 'Your key is ready on this phone.',
    registerFailed: 'The key could not be bound to this phone. Try again, or ask whoever issued it for a new link.',
    unsupported: 'This browser cannot hold a passkey. Open the link on your phone’s own browser.',
    confirm: 'Confirm with your screen lock…',
    verifyFailed: 'Your phone could not be verified. Try again.',
    tooMany: 'Too many tries. Wait a minute and try again.',
    open: 'Open',
    validFrom: 'Valid from',
    validUntil: 'Valid until',
    noEnd: 'no end date',
    anyTime: 'at any time',
    noDoors: 'This key opens no doors yet.',
    yourKey: 'Your key',
    opensNow: 'opens now',
    notNow: 'not now',
    published: 'Sent to the door…',
    confirmed: 'Open. Go ahead.',
    failed: 'The door did not open.',
    timed_out: 'The door did not answer in time.',
    offline: 'The door cannot be reached right now.',
    days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'],
    reasons: {
      revoked: 'This key has been revoked. It opens nothing any more.',
      returned: 'This key has been returned. It opens nothing any more.',
      not_handed_over: 'This key is not active.',
      no_credential: 'This key has no credential at the moment. Ask whoever gave it to you.',
      expired: 'This key has expired.',
      not_yet_valid: 'This key is not valid yet.',
      outside_time_window: 'This door is not open to you at this time.',
      no_access: 'This key does not open this door.',
    } as Record<string, string>,
  },
  de: {
    registering: 'Bestätigen Sie mit Ihrer Displaysperre, um den Schlüssel an dieses Telefon zu binden…',
    registered: 'Ihr Schlüssel ist auf diesem Telefon bereit.',
    registerFailed: 'Der Schlüssel konnte nicht an dieses Telefon gebunden werden. Versuchen Sie es erneut oder bitten Sie um einen neuen Link.',
    unsupported: 'Dieser Browser kann keinen Passkey speichern. Öffnen Sie den Link im Browser Ihres Telefons.',
    confirm: 'Bestätigen Sie mit Ihrer Displaysperre…',
    verifyFailed: 'Ihr Telefon konnte nicht bestätigt werden. Versuchen Sie es erneut.',
    tooMany: 'Zu viele Versuche. Warten Sie eine Minute.',
    open: 'Öffnen',
    validFrom: 'Gültig ab',
    validUntil: 'Gültig bis',
    noEnd: 'unbefristet',
    anyTime: 'jederzeit',
    noDoors: 'Dieser Schlüssel öffnet noch keine Türen.',
    yourKey: 'Ihr Schlüssel',
    opensNow: 'öffnet jetzt',
    notNow: 'jetzt nicht',
    published: 'An die Tür gesendet…',
    confirmed: 'Offen. Bitte eintreten.',
    failed: 'Die Tür hat nicht geöffnet.',
    timed_out: 'Die Tür hat nicht rechtzeitig geantwortet.',
    offline: 'Die Tür ist gerade nicht erreichbar.',
    days: ['Mo', 'Di', 'Mi', 'Do', 'Fr', 'Sa', 'So'],
    reasons: {
      revoked: 'Dieser Schlüssel wurde gesperrt. Er öffnet nichts mehr.',
      returned: 'Dieser Schlüssel wurde zurückgegeben. Er öffnet nichts mehr.',
      not_handed_over: 'Dieser Schlüssel ist nicht aktiv.',
      no_credential: 'Dieser Schlüssel hat gerade keinen Ausweis. Fragen Sie, wer ihn Ihnen gegeben hat.',
      expired: 'Dieser Schlüssel ist abgelaufen.',
      not_yet_valid: 'Dieser Schlüssel ist noch nicht gültig.',
      outside_time_window: 'Diese Tür ist für Sie zu dieser Zeit nicht offen.',
      no_access: 'Dieser Schlüssel öffnet diese Tür nicht.',
    } as Record<string, string>,
  },
}[lang];

const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

interface TimeWindow {
  days: string[];
  start: string;
  end: string;
}
interface Door {
  lock_id: number;
  name: string;
  place: string;
  time_zone: string;
  windows: TimeWindow[] | null;
  opens_now: boolean;
  reason: string | null;
}
interface KeyView {
  key: { id: number; name: string; person_name: string; starts_at: string; expires_at: string | null };
  refusal: string | null;
  doors: Door[];
}

class Refused extends Error {
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}

async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const response = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Refused(response.status);
  return (await response.json()) as T;
}

const byId = (id: string) => document.getElementById(id) as HTMLElement;

function say(text: string, element: HTMLElement = byId('status'), className = ''): void {
  element.textContent = text;
  element.className = element.className.replace(/\b(refused|confirmed)\b/g, '').trim() + (className ? ` ${className}` : '');
}

function failure(error: unknown): string {
  if (error instanceof Refused && error.status === 429) return TEXT.tooMany;
  return TEXT.verifyFailed;
}

/** One fresh assertion over a new server challenge. */
async function assertion(): Promise<unknown> {
  const optionsJSON = await post<Parameters<typeof startAuthentication>[0]['optionsJSON']>('/my-key/challenge');
  return startAuthentication({ optionsJSON });
}

function day(iso: string): string {
  return new Date(iso).toLocaleDateString(lang === 'de' ? 'de-DE' : 'en-GB', { year: 'numeric', month: 'long', day: 'numeric' });
}

function windowsInWords(door: Door): string {
  if (door.windows === null) return TEXT.anyTime;
  const parts = door.windows.map((w) => {
    const days = w.days.map((d) => TEXT.days[WEEKDAYS.indexOf(d)] ?? d).join(', ');
    return `${days} ${w.start}–${w.end}`;
  });
  return `${parts.join('; ')} (${door.time_zone})`;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, className?: string): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (text !== undefined) made.textContent = text;
  if (className) made.className = className;
  return made;
}

async function follow(commandId: string, outcome: HTMLElement): Promise<void> {
  for (let attempt = 1; attempt <= FOLLOW_ATTEMPTS; attempt++) {
    const response = await fetch(`/my-key/commands/${encodeURIComponent(commandId)}`, { headers: { accept: 'application/json' } });
    if (response.ok) {
      const command = (await response.json()) as { status: string };
      if (command.status !== 'published') {
        const done = command.status === 'confirmed' ? TEXT.confirmed : command.status === 'timed_out' ? TEXT.timed_out : TEXT.failed;
        return say(done, outcome, command.status === 'confirmed' ? 'confirmed' : 'refused');
      }
    }
    await new Promise((resolve) => setTimeout(resolve, followDelayMs(attempt)));
  }
}

async function openDoor(door: Door, button: HTMLButtonElement, outcome: HTMLElement): Promise<void> {
  button.disabled = true;
  say(TEXT.confirm, outcome);
  try {
    const response = await assertion();
    const result = await post<{ refused: string | null; command: { id: string; status: string } | null }>('/my-key/open', { response, lock_id: door.lock_id });
    if (result.refused) return say(TEXT.reasons[result.refused] ?? TEXT.reasons.no_access ?? '', outcome, 'refused');
    if (!result.command) return;
    say(TEXT.published, outcome);
    if (result.command.status === 'published') await follow(result.command.id, outcome);
    else say(result.command.status === 'confirmed' ? TEXT.confirmed : TEXT.failed, outcome, result.command.status === 'confirmed' ? 'confirmed' : 'refused');
  } catch (error) {
    say(error instanceof Refused && error.status === 409 ? TEXT.offline : failure(error), outcome, 'refused');
  } finally {
    button.disabled = false;
  }
}

function render(view: KeyView): void {
  byId('key-name').textContent = `${TEXT.yourKey}: ${view.key.name}`;
  const validity = byId('validity');
  validity.replaceChildren(
    el('dt', TEXT.validFrom),
    el('dd', day(view.key.starts_at)),
    el('dt', TEXT.validUntil),
    el('dd', view.key.expires_at ? day(view.key.expires_at) : TEXT.noEnd),
  );
  const list = byId('doors');
  list.replaceChildren();
  if (view.refusal) {
    say(TEXT.reasons[view.refusal] ?? '', byId('status'), 'refused');
  } else if (view.doors.length === 0) {
    list.append(el('li', TEXT.noDoors));
  }
  for (const door of view.doors) {
    const item = el('li');
    item.dataset.lockId = String(door.lock_id);
    const name = el('p', door.place ? `${door.name} · ${door.place}` : door.name, 'door-name');
    const when = el('p', `${windowsInWords(door)} · ${door.opens_now ? TEXT.opensNow : TEXT.notNow}`, 'door-when');
    const outcome = el('p', '', 'door-outcome');
    outcome.setAttribute('role', 'status');
    outcome.setAttribute('aria-live', 'polite');
    const button = el('button', TEXT.open);
    button.type = 'button';
    button.setAttribute('aria-label', `${TEXT.open}: ${door.name}`);
    button.addEventListener('click', () => void openDoor(door, button, outcome));
    item.append(name, when, button, outcome);
    list.append(item);
  }
  byId('key').hidden = false;
}

async function showDoors(button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  say(TEXT.confirm);
  try {
    const response = await assertion();
    const view = await post<KeyView>('/my-key/doors', { response });
    say('');
    render(view);
  } catch (error) {
    say(failure(error), byId('status'), 'refused');
  } finally {
    button.disabled = false;
  }
}

async function register(form: HTMLFormElement): Promise<void> {
  const status = byId('status');
  const token = location.pathname.split('/').pop() ?? '';
  if (!window.PublicKeyCredential) return say(TEXT.unsupported, status, 'refused');
  const button = form.querySelector('button') as HTMLButtonElement;
  button.disabled = true;
  say(TEXT.registering, status);
  try {
    const optionsJSON = await post<Parameters<typeof startRegistration>[0]['optionsJSON']>(`/activate/${encodeURIComponent(token)}/passkey/options`);
    const response = await startRegistration({ optionsJSON });
    await post(`/activate/${encodeURIComponent(token)}/passkey`, { response });
    say(TEXT.registered, status, 'confirmed');
    location.assign('/my-key');
  } catch (error) {
    say(error instanceof Refused && error.status === 429 ? TEXT.tooMany : TEXT.registerFailed, status, 'refused');
    button.disabled = false;
  }
}

const form = document.getElementById('activate') as HTMLFormElement | null;
form?.addEventListener('submit', (event) => {
  event.preventDefault();
  void register(form);
});
const show = document.getElementById('show-doors') as HTMLButtonElement | null;
show?.addEventListener('click', () => void showDoors(show));
