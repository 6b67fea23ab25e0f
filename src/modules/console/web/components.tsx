// Shared pieces: data hooks (one page at a time, refetched on live changes), form fields that show the
// API's field errors in words next to the field, and small display helpers.
import type { ComponentChildren, InputHTMLAttributes, JSX } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { RequestError, get, problemWords, type Page } from './api.ts';
import { useLive, type Topic } from './live.ts';

type Query = Record<string, string | number | boolean | null | undefined>;

export interface PagedOptions {
  account?: number;
  query?: Query;
  /** Live topics that make the list refetch. */
  topics?: Topic[];
  /** The account whose changes count, for an operator API list (no `account`): defaults to `account`. */
  liveAccount?: number;
  limit?: number;
}

export interface Paged<T> {
  items: T[];
  nextCursor: string | null;
  loading: boolean;
  error: RequestError | null;
  loadMore: () => void;
  reload: () => void;
}

const asApiError = (error: unknown): RequestError =>
  error instanceof RequestError ? error : new RequestError(0, 'client', error instanceof Error ? error.message : String(error));

/**
 * A list read page by page with the API's cursors. A reload (live change, after a create) reads again as many
 * pages as were shown, so the rows the operator opened stay in view.
 */
export function usePaged<T>(path: string | null, options: PagedOptions = {}): Paged<T> {
  const [items, setItems] = useState<T[]>([]);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<RequestError | null>(null);
  const pages = useRef(1);
  const generation = useRef(0);
  const queryKey = JSON.stringify(options.query ?? {});
  const limit = options.limit ?? 50;

  const read = useCallback(
    async (count: number) => {
      if (!path) return;
      const mine = ++generation.current;
      setLoading(true);
      try {
        let rows: T[] = [];
        let cursor: string | null = null;
        let read = 0;
        do {
          const page: Page<T> = await get<Page<T>>(path, {
            account: options.account,
            query: { ...(JSON.parse(queryKey) as Query), limit, cursor },
          });
          rows = rows.concat(page.data);
          cursor = page.next_cursor;
          read++;
        } while (cursor && read < count);
        if (mine !== generation.current) return;
        pages.current = read;
        setItems(rows);
        setNextCursor(cursor);
        setError(null);
      } catch (caught) {
        if (mine === generation.current) setError(asApiError(caught));
      } finally {
        if (mine === generation.current) setLoading(false);
      }
    },
    [path, options.account, queryKey, limit],
  );

  useEffect(() => {
    pages.current = 1;
    setItems([]);
    setNextCursor(null);
    void read(1);
  }, [read]);

  const loadMore = useCallback(async () => {
    if (!path || !nextCursor) return;
    const mine = ++generation.current;
    setLoading(true);
    try {
      const page = await get<Page<T>>(path, { account: options.account, query: { ...(JSON.parse(queryKey) as Query), limit, cursor: nextCursor } });
      if (mine !== generation.current) return;
      pages.current++;
      setItems((old) => old.concat(page.data));
      setNextCursor(page.next_cursor);
      setError(null);
    } catch (caught) {
      if (mine === generation.current) setError(asApiError(caught));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [path, nextCursor, options.account, queryKey, limit]);

  const reload = useCallback(() => void read(pages.current), [read]);
  // A list the API refused (a filter it does not take) stays refused: a live change would only repeat the request.
  const refused = error !== null && error.status >= 400 && error.status < 500 && error.status !== 429;
  useLive(options.topics ?? [], options.liveAccount ?? options.account, options.topics?.length && !refused ? reload : () => undefined);
  return { items, nextCursor, loading, error, loadMore: () => void loadMore(), reload };
}

/** Scrolls once to the row `#<prefix>-<id>` of the address (a link to one row), as soon as the rows are in. */
export function useRowFromHash(prefix: string, rows: readonly unknown[]): void {
  const wanted = useRef(window.location.hash);
  useEffect(() => {
    const hash = wanted.current;
    if (!new RegExp(`^#${prefix}-\\d+$`).test(hash)) return;
    const row = document.getElementById(hash.slice(1));
    if (!row) return;
    wanted.current = '';
    row.scrollIntoView({ block: 'center' });
  }, [rows]);
}

/** One object read (not a list); refetched on `topics`. */
export function useResource<T>(path: string | null, options: { account?: number; topics?: Topic[]; liveAccount?: number } = {}) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<RequestError | null>(null);
  const generation = useRef(0);
  const reload = useCallback(async () => {
    if (!path) return;
    const mine = ++generation.current;
    try {
      const value = await get<T>(path, { account: options.account });
      if (mine === generation.current) {
        setData(value);
        setError(null);
      }
    } catch (caught) {
      if (mine === generation.current) setError(asApiError(caught));
    }
  }, [path, options.account]);
  useEffect(() => {
    setData(null);
    void reload();
  }, [reload]);
  useLive(options.topics ?? [], options.liveAccount ?? options.account, () => void reload());
  return { data, error, reload: () => void reload() };
}

/** The document title of a page (WCAG 2.4.2: a one-page app changes it, as page loads would). */
export function useTitle(title: string | null): void {
  useEffect(() => {
    const brand = document.body.dataset.brand || 'Latchkey';
    document.title = title ? `${title} – ${brand} console` : `${brand} console`;
  }, [title]);
}

/** A form's submission state: busy while the call runs, the API error after a failure. */
export function useSubmit() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<RequestError | null>(null);
  const run = useCallback(async (action: () => Promise<void>) => {
    // The button is disabled while busy, and a disabled button loses the focus: give it back after.
    const from = document.activeElement;
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (caught) {
      setError(asApiError(caught));
    } finally {
      setBusy(false);
      requestAnimationFrame(() => {
        const now = document.activeElement;
        if ((now === null || now === document.body) && from instanceof HTMLElement && from !== document.body && from.isConnected) from.focus();
      });
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

/** The problems of one field: `security_groups` also takes `security_groups[2]`. */
export function fieldProblems(error: RequestError | null, field: string): string[] {
  if (!error) return [];
  return error.details
    .filter((d) => d.field === field || d.field.startsWith(`${field}[`) || d.field.startsWith(`${field}.`))
    .map((d) => (d.field === field ? problemWords(d) : `${d.field}: ${problemWords(d)}`));
}

let fieldCounter = 0;
function useId(prefix: string): string {
  const id = useRef('');
  if (!id.current) id.current = `${prefix}-${++fieldCounter}`;
  return id.current;
}

/** The error of a whole form, in words: the message, and the field problems no field of the form shows. */
export function FormError({ error, fields = [] }: { error: RequestError | null; fields?: string[] }) {
  if (!error) return null;
  const others = error.details.filter((d) => !fields.some((f) => d.field === f || d.field.startsWith(`${f}[`) || d.field.startsWith(`${f}.`)));
  return (
    <div class="error" role="alert" data-testid="form-error">
      <p>{error.message}</p>
      {others.length > 0 && (
        <ul>
          {others.map((d) => (
            <li key={d.field + d.code}>
              {d.field ? `${d.field}: ` : ''}
              {problemWords(d)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

interface FieldProps {
  label: string;
  name: string;
  error?: RequestError | null;
  hint?: string;
  children: (props: { id: string; name: string; 'aria-invalid'?: 'true'; 'aria-describedby'?: string }) => JSX.Element;
}

/** A labelled control with its hint and its problems (aria-describedby), from the API's details. */
export function Field({ label, name, error = null, hint, children }: FieldProps) {
  const id = useId(name.replace(/[^a-z0-9]/gi, '-'));
  const problems = fieldProblems(error, name);
  const described = [hint ? `${id}-hint` : '', problems.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
      {children({ id, name, ...(problems.length ? { 'aria-invalid': 'true' as const } : {}), ...(described ? { 'aria-describedby': described } : {}) })}
      {problems.length > 0 && (
        <small id={`${id}-error`} class="field-error">
          {problems.join(' ')}
        </small>
      )}
    </div>
  );
}

/** The input attributes the console's fields use. */
interface InputProps {
  type?: 'text' | 'search' | 'email' | 'tel' | 'url' | 'number' | 'password' | 'datetime-local';
  required?: boolean;
  min?: number;
  autoComplete?: string;
  inputMode?: 'numeric' | 'text' | 'decimal';
  step?: number | 'any';
  max?: number;
  /** The id of a datalist of suggestions. */
  list?: string;
  placeholder?: string;
  spellcheck?: boolean;
  'data-testid'?: string;
}

export function TextField(
  props: { label: string; name: string; value: string; onValue: (value: string) => void; error?: RequestError | null; hint?: string } & InputProps,
) {
  const { label, name, value, onValue, error, hint, ...rest } = props;
  return (
    <Field label={label} name={name} error={error} hint={hint}>
      {(a) => {
        // Preact types an input per `type` (a union); ours is one of the text-like types, all alike here.
        const attributes = { type: 'text', ...rest, ...a, value, onInput: (e: Event) => onValue((e.currentTarget as HTMLInputElement).value) };
        return <input {...(attributes as unknown as InputHTMLAttributes<HTMLInputElement>)} />;
      }}
    </Field>
  );
}

/** A group of checkboxes for a list of codes (security groups, scopes, locks). */
export function Checkboxes(props: {
  legend: string;
  name: string;
  options: { value: string; label: string }[];
  selected: string[];
  onChange: (selected: string[]) => void;
  error?: RequestError | null;
  empty?: string;
  /** Words under the legend (read with the group: aria-describedby). */
  hint?: string;
  testid?: string;
}) {
  const { legend, name, options, selected, onChange, error = null, empty, hint, testid } = props;
  const problems = fieldProblems(error, name);
  const base = useId(name);
  const described = [hint ? `${base}-hint` : '', problems.length ? `${base}-error` : ''].filter(Boolean).join(' ');
  return (
    <fieldset class="checkboxes" aria-describedby={described || undefined} data-testid={testid}>
      <legend>{legend}</legend>
      {hint && (
        <small id={`${base}-hint`} class="hint checkboxes-hint">
          {hint}
        </small>
      )}
      {options.length === 0 && <p class="muted">{empty ?? 'None yet.'}</p>}
      {options.map((option, i) => (
        <label key={option.value} class="check" for={`${base}-${i}`}>
          <input
            type="checkbox"
            id={`${base}-${i}`}
            name={name}
            value={option.value}
            checked={selected.includes(option.value)}
            onChange={(e) => {
              const on = (e.currentTarget as HTMLInputElement).checked;
              onChange(on ? [...selected, option.value] : selected.filter((v) => v !== option.value));
            }}
          />
          {option.label}
        </label>
      ))}
      {problems.length > 0 && (
        <small id={`${base}-error`} class="field-error">
          {problems.join(' ')}
        </small>
      )}
    </fieldset>
  );
}

export function LoadMore({ list, label = 'Load more' }: { list: Paged<unknown>; label?: string }) {
  if (!list.nextCursor) return null;
  return (
    <button type="button" class="secondary" onClick={list.loadMore} disabled={list.loading} data-testid="load-more">
      {label}
    </button>
  );
}

export function ListState({ list, empty }: { list: Paged<unknown>; empty: string }) {
  if (list.error) return <FormError error={list.error} />;
  if (list.loading && list.items.length === 0) return <p class="muted" aria-live="polite">Loading…</p>;
  if (list.items.length === 0) return <p class="muted">{empty}</p>;
  return null;
}

export type SortDirection = 'ascending' | 'descending';
type SortValue = string | number | null | undefined;

/**
 * Rows sorted by a column the operator picks (a button in its header; again: the other way). The header
 * carries aria-sort; the rows are those loaded, sorted in the browser.
 */
export function useSort<T>(rows: T[], columns: Record<string, (row: T) => SortValue>, initial: { key: string; direction: SortDirection } | null = null) {
  const [sort, setSort] = useState(initial);
  const value = sort ? columns[sort.key] : undefined;
  const sorted =
    sort && value
      ? rows.slice().sort((a, b) => {
          const x = value(a);
          const y = value(b);
          // Empty cells last, whichever way.
          if (x === null || x === undefined || x === '') return y === null || y === undefined || y === '' ? 0 : 1;
          if (y === null || y === undefined || y === '') return -1;
          const order = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true, sensitivity: 'base' });
          return sort.direction === 'ascending' ? order : -order;
        })
      : rows;
  const header = (key: string, label: string) => {
    const active = sort?.key === key ? sort.direction : undefined;
    return (
      <th scope="col" aria-sort={active} key={key}>
        <button
          type="button"
          class="sort"
          data-testid={`sort-${key}`}
          onClick={() => setSort({ key, direction: active === 'ascending' ? 'descending' : 'ascending' })}
        >
          {label}
          <span aria-hidden="true" class="sort-mark">
            {active === 'ascending' ? ' ▲' : active === 'descending' ? ' ▼' : ' ↕'}
          </span>
        </button>
      </th>
    );
  };
  return { rows: sorted, header, sort };
}

/** One CSV cell: a text that a spreadsheet would read as a formula (= + - @, tab, CR) gets a leading '; quoted when needed. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180 CSV: a header row, then the rows; CRLF line ends. */
export function toCsv(header: string[], rows: unknown[][]): string {
  return [header, ...rows].map((row) => row.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/** Saves `text` as a file (a download from a blob: URL; nothing leaves the browser). */
export function downloadText(filename: string, text: string, type = 'text/csv;charset=utf-8'): void {
  // A byte order mark: spreadsheets then read the file as UTF-8.
  const url = URL.createObjectURL(new Blob(['\ufeff', text], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Every page of a list (up to `most` rows), for an export of what the filters show. */
export async function readAll<T>(path: string, options: { account?: number; query?: Query; most?: number } = {}): Promise<{ rows: T[]; cut: boolean }> {
  const most = options.most ?? 10_000;
  let rows: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await get<Page<T>>(path, { account: options.account, query: { ...options.query, limit: 200, cursor } });
    rows = rows.concat(page.data);
    cursor = page.next_cursor;
  } while (cursor && rows.length < most);
  return { rows: rows.slice(0, most), cut: cursor !== null || rows.length > most };
}

/** A file name part for today (the browser's date). */
export function today(): string {
  return localFromIso(new Date().toISOString()).slice(0, 10);
}

/**
 * A modal confirmation (a <dialog>) naming what goes: `confirm(…)` resolves true on the confirming button,
 * false on Cancel or Escape; render `dialog` somewhere on the page.
 */
export function useConfirm() {
  const [asking, setAsking] = useState<{ title: string; body: ComponentChildren; action: string; keep: string; resolve: (ok: boolean) => void } | null>(null);
  const confirm = (title: string, body: ComponentChildren, action: string, keep = 'Cancel') =>
    new Promise<boolean>((resolve) => {
      setAsking({ title, body, action, keep, resolve });
    });
  const dialog = asking ? (
    <ConfirmDialog
      title={asking.title}
      action={asking.action}
      keep={asking.keep}
      onAnswer={(ok) => {
        asking.resolve(ok);
        setAsking(null);
      }}
    >
      {asking.body}
    </ConfirmDialog>
  ) : null;
  return { confirm, dialog };
}

function ConfirmDialog(props: { title: string; action: string; keep: string; children: ComponentChildren; onAnswer: (ok: boolean) => void }) {
  const { title, action, keep, children, onAnswer } = props;
  const ref = useRef<HTMLDialogElement>(null);
  const answered = useRef(false);
  useEffect(() => {
    const from = document.activeElement;
    const dialog = ref.current;
    dialog?.showModal();
    // Cancel is focused first: a stray Enter keeps what is there.
    dialog?.querySelector<HTMLElement>('[data-testid="confirm-cancel"]')?.focus();
    return () => {
      if (dialog?.open) dialog.close();
      if (from instanceof HTMLElement && from.isConnected) from.focus();
    };
  }, []);
  const answer = (ok: boolean) => {
    if (answered.current) return;
    answered.current = true;
    onAnswer(ok);
  };
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-body" data-testid="confirm-dialog" onClose={() => answer(false)}>
      <h2 id="confirm-title">{title}</h2>
      <div id="confirm-body">{children}</div>
      <div class="actions">
        <button type="button" class="danger" onClick={() => answer(true)} data-testid="confirm-yes">
          {action}
        </button>
        <button type="button" class="secondary" onClick={() => answer(false)} data-testid="confirm-cancel">
          {keep}
        </button>
      </div>
    </dialog>
  );
}

export interface PickOption {
  value: string;
  label: string;
}

/**
 * A picker backed by a list API: a search field (what `find` is asked with, as typed, after a pause) and a select
 * of what it found, "any" first. The chosen value stays offered when a new search does not find it.
 */
export function Picker(props: {
  label: string;
  name: string;
  any: string;
  value: string;
  onValue: (value: string) => void;
  find: (text: string) => Promise<PickOption[]>;
  /** The label of `value` when the search has not found it (yet). */
  chosenLabel?: string;
  error?: RequestError | null;
  testid: string;
}) {
  const { label, name, any, value, onValue, find, chosenLabel, error = null, testid } = props;
  const [text, setText] = useState('');
  const [found, setFound] = useState<PickOption[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const generation = useRef(0);
  useEffect(() => {
    const mine = ++generation.current;
    const timer = setTimeout(() => {
      find(text.trim())
        .then((options) => {
          if (mine !== generation.current) return;
          setFound(options);
          setProblem(null);
        })
        .catch((caught: unknown) => {
          if (mine === generation.current) setProblem(caught instanceof Error ? caught.message : String(caught));
        });
    }, 200);
    return () => clearTimeout(timer);
  }, [text]);
  const chosen = found.find((o) => o.value === value);
  const options = value && !chosen ? [{ value, label: chosenLabel ?? value }, ...found] : found;
  return (
    <div class="picker" data-testid={testid}>
      <TextField label={`Find ${label.toLowerCase()}`} name={`${name}-search`} type="search" value={text} onValue={setText} autoComplete="off" data-testid={`${testid}-search`} />
      <Field label={label} name={name} error={error} hint={problem ?? `${found.length === 0 ? 'Nothing found' : `${found.length} found`}${text.trim() ? ` for “${text.trim()}”` : ''}`}>
        {(a) => (
          <select {...a} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} data-testid={`${testid}-select`}>
            <option value="">{any}</option>
            {options.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        )}
      </Field>
    </div>
  );
}

/** A table that scrolls sideways on a narrow screen; focusable so a keyboard can scroll it. */
export function Table({ label, children }: { label: string; children: ComponentChildren }) {
  // The section around it is a region named by its heading, often the same words: name this one apart.
  return (
    <div class="table-wrap" role="region" aria-label={`${label} (table)`} tabIndex={0}>
      <table>{children}</table>
    </div>
  );
}

/** The browser's IANA time zone (what times are shown in when no location gives one). */
export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

/**
 * A moment in words with its time zone's short name ("27 Nov 2026, 14:03 CET"): in `zone` (a lock's location)
 * when given and known to the browser, else in the browser's own zone.
 */
export function formatTime(date: Date, zone?: string | null, seconds = false): string {
  const options: Intl.DateTimeFormatOptions = {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    ...(seconds ? { second: '2-digit' } : {}),
    timeZoneName: 'short',
  };
  try {
    return new Intl.DateTimeFormat(undefined, zone ? { ...options, timeZone: zone } : options).format(date);
  } catch {
    // a zone this browser does not know: its own
    return new Intl.DateTimeFormat(undefined, options).format(date);
  }
}

export function Time({ iso, zone, seconds }: { iso: string | null | undefined; zone?: string | null; seconds?: boolean }) {
  if (!iso) return <span class="muted">never</span>;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <time dateTime={iso}>{iso}</time>;
  return (
    <time dateTime={iso} title={`${iso} (shown in ${zone || browserTimeZone()})`}>
      {formatTime(date, zone, seconds)}
    </time>
  );
}

export function Online({ online }: { online: boolean | null | undefined }) {
  if (online === null || online === undefined) return <span class="badge">not remote</span>;
  return online ? <span class="badge ok">online</span> : <span class="badge bad">offline</span>;
}

/** A secret the API shows only once (API key token, MQTT password, signing secret), until dismissed. */
export function OnceSecret(props: { title: string; children: ComponentChildren; onDismiss: () => void; returnFocus?: string }) {
  const { title, children, onDismiss, returnFocus } = props;
  const ref = useRef<HTMLElement>(null);
  // Focus comes here when the secret appears and, once dismissed, goes back where the operator was: the
  // control named by `returnFocus` (the button that made it was disabled while busy, so the browser dropped
  // its focus), else whatever had it.
  const from = useRef<Element | null>(null);
  useEffect(() => {
    from.current = document.activeElement;
    ref.current?.focus();
  }, []);
  const dismiss = () => {
    const previous = from.current;
    onDismiss();
    requestAnimationFrame(() => {
      const target = (returnFocus ? document.querySelector(returnFocus) : null) ?? previous;
      if (target instanceof HTMLElement && target.isConnected && target !== document.body) target.focus();
    });
  };
  return (
    <section class="secret" aria-labelledby="secret-title" tabIndex={-1} ref={ref} data-testid="once-secret">
      <h3 id="secret-title">{title}</h3>
      <p>Shown only now: copy it before you dismiss this panel.</p>
      {children}
      <button type="button" onClick={dismiss} data-testid="dismiss-secret">
        I have copied it, dismiss
      </button>
    </section>
  );
}

export function Secret({ label, value }: { label: string; value: string }) {
  return (
    <div class="secret-row">
      <span class="secret-label">{label}</span>
      <code data-testid={`secret-${label.toLowerCase().replace(/[^a-z]+/g, '-')}`}>{value}</code>
    </div>
  );
}

/** ISO 8601 from a datetime-local value (the browser's time zone), or undefined when empty. */
export function isoFromLocal(value: string): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

/** A datetime-local value (the browser's time zone) from ISO 8601; empty for null. */
export function localFromIso(iso: string | null): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
