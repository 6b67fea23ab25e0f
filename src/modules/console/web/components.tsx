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

/** A table that scrolls sideways on a narrow screen; focusable so a keyboard can scroll it. */
export function Table({ label, children }: { label: string; children: ComponentChildren }) {
  // The section around it is a region named by its heading, often the same words: name this one apart.
  return (
    <div class="table-wrap" role="region" aria-label={`${label} (table)`} tabIndex={0}>
      <table>{children}</table>
    </div>
  );
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  const date = new Date(iso);
  return (
    <time dateTime={iso} title={iso}>
      {Number.isNaN(date.getTime()) ? iso : date.toLocaleString()}
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
