// The access log of an account. The API lists it oldest first with cursors; the console shows it newest on
// top and, once it has read to the end, follows it: on a live `events` change it reads again from the cursor
// of its last page (a cursor the API gave, passed back as is) and puts the new rows on top.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { RequestError, get, type Page } from '../api.ts';
import {
  Checkboxes,
  FormError,
  Picker,
  Table,
  TextField,
  Time,
  browserTimeZone,
  downloadText,
  formatTime,
  isoFromLocal,
  readAll,
  today,
  toCsv,
  useSort,
  useSubmit,
  type PickOption,
} from '../components.tsx';
import { useLive } from '../live.ts';
import { Link, useLocation } from '../router.tsx';
import { CONSOLE_KEY_NAME, EVENT_TYPES, type AccessEvent, type Account, type Lock, type Person } from '../types.ts';
import { useLocations } from './account.tsx';

const PAGE = 100;
/** Pages read in one go when opening or catching up; beyond, the operator asks for more. */
const PAGES_AT_ONCE = 3;

export function EventsSection({ account }: { account: Account }) {
  const { query } = useLocation();
  // Empty, as its hint says: the log from the start (the API's default), newest rows on top once read to the end.
  const [since, setSince] = useState('');
  const [lockId, setLockId] = useState(query.get('lock_id') ?? '');
  const [personId, setPersonId] = useState(query.get('person_id') ?? '');
  const [types, setTypes] = useState<string[]>([]);
  const [filter, setFilter] = useState(() => ({ since: isoFromLocal(since), lock_id: lockId || undefined, person_id: personId || undefined, type: undefined as string | undefined }));

  const [rows, setRows] = useState<AccessEvent[]>([]);
  const [fresh, setFresh] = useState<Set<number>>(new Set());
  const [error, setError] = useState<RequestError | null>(null);
  const [loading, setLoading] = useState(false);
  // The cursor that read the last page (undefined: the first page), and the API's next_cursor after it.
  const tail = useRef<{ cursor: string | undefined; next: string | null }>({ cursor: undefined, next: null });
  const generation = useRef(0);

  const read = useCallback(
    async (from: 'start' | 'tail' | 'more') => {
      const mine = from === 'start' ? ++generation.current : generation.current;
      if (from === 'start') tail.current = { cursor: undefined, next: null };
      let cursor = from === 'more' ? (tail.current.next ?? undefined) : tail.current.cursor;
      if (from === 'more' && !tail.current.next) return;
      setLoading(true);
      try {
        const found: AccessEvent[] = [];
        for (let i = 0; i < PAGES_AT_ONCE; i++) {
          const page = await get<Page<AccessEvent>>('/v1/events', { account: account.id, query: { ...filter, limit: PAGE, cursor } });
          if (mine !== generation.current) return;
          found.push(...page.data);
          tail.current = { cursor, next: page.next_cursor };
          if (!page.next_cursor) break;
          cursor = page.next_cursor;
        }
        setError(null);
        if (from === 'start') {
          setRows(found);
          setFresh(new Set());
        } else {
          setRows((old) => {
            const known = new Set(old.map((r) => r.id));
            const added = found.filter((r) => !known.has(r.id));
            if (from === 'tail' && added.length) setFresh(new Set(added.map((r) => r.id)));
            return added.length ? old.concat(added) : old;
          });
        }
      } catch (caught) {
        if (mine !== generation.current) return;
        setError(caught instanceof RequestError ? caught : new RequestError(0, 'client', String(caught)));
        // Rows of the previous filter under the error of this one would read as its answer.
        if (from === 'start') setRows([]);
      } finally {
        if (mine === generation.current) setLoading(false);
      }
    },
    [account.id, filter],
  );

  useEffect(() => {
    void read('start');
  }, [read]);
  // Follow only at the end of the log; before it, "Load newer" reads on.
  useLive(['events'], account.id, () => {
    if (!tail.current.next) void read('tail');
  });

  // Times in the zone of the lock's location where it has one (its own or from above), else the browser's.
  const locations = useLocations(account);
  const zoneOf = (ev: AccessEvent) => locations.items.find((l) => l.id === ev.location.id)?.effective_time_zone ?? null;
  const newestFirst = rows.slice().reverse();
  const sorted = useSort(newestFirst, {
    when: (ev) => Date.parse(ev.occurred_at),
    type: (ev) => ev.type,
    result: (ev) => ev.result,
    lock: (ev) => ev.lock.name,
    who: (ev) => actorWords(ev),
    reason: (ev) => ev.reason,
  });
  const exporting = useSubmit();
  const exportCsv = () =>
    void exporting.run(async () => {
      const all = await readAll<AccessEvent>('/v1/events', { account: account.id, query: filter });
      const header = ['id', 'occurred_at', 'local_time', 'type', 'result', 'reason', 'source', 'lock_id', 'lock', 'place', 'location', 'person_id', 'person', 'person_email', 'key_id', 'key', 'api_key', 'api_key_prefix'];
      const lines = all.rows.map((ev) => [
        ev.id,
        ev.occurred_at,
        formatTime(new Date(ev.occurred_at), zoneOf(ev), true),
        ev.type,
        ev.result,
        ev.reason,
        ev.source,
        ev.lock.id,
        ev.lock.name,
        ev.lock.place,
        ev.location.name,
        ev.person?.id,
        ev.person?.name,
        ev.person?.email,
        ev.key?.id,
        ev.key?.name,
        ev.api_key?.name,
        ev.api_key?.prefix,
      ]);
      downloadText(`access-log-${account.id}-${today()}.csv`, toCsv(header, lines));
    });
  const findPerson = useCallback(
    async (text: string): Promise<PickOption[]> => {
      const page = await get<Page<Person>>('/admin/v1/people', { query: { account_id: account.id, q: text, limit: 50 } });
      return page.data.map((p) => ({ value: p.id, label: p.email ? `${p.name} (${p.email})` : p.name }));
    },
    [account.id],
  );
  const allLocks = useRef<Promise<Lock[]> | null>(null);
  const findLock = useCallback(
    async (text: string): Promise<PickOption[]> => {
      // The lock list takes no search: read it once (every page) and find in it.
      allLocks.current ??= readAll<Lock>('/v1/locks', { account: account.id }).then((all) => all.rows);
      let locks: Lock[];
      try {
        locks = await allLocks.current;
      } catch (caught) {
        allLocks.current = null;
        throw caught;
      }
      const words = text.toLowerCase();
      return locks
        .filter((l) => !words || `${l.name} ${l.place} ${l.location.name} ${l.id}`.toLowerCase().includes(words))
        .map((l) => ({ value: String(l.id), label: `${l.name}${l.place ? `, ${l.place}` : ''} (${l.location.name})` }));
    },
    [account.id],
  );
  const knownPerson = rows.find((r) => r.person?.id === personId)?.person?.name;
  const knownLock = rows.find((r) => String(r.lock.id) === lockId)?.lock.name;
  return (
    <section aria-labelledby="events-title">
      <h2 id="events-title">Access log</h2>
      <form
        class="filters"
        data-testid="events-filter-form"
        onSubmit={(e) => {
          e.preventDefault();
          setFilter({ since: isoFromLocal(since), lock_id: lockId.trim() || undefined, person_id: personId.trim() || undefined, type: types.length ? types.join(',') : undefined });
        }}
      >
        <TextField label="Since" name="since" type="datetime-local" value={since} onValue={setSince} error={error} hint="Empty: from the start" data-testid="events-since" />
        <Picker label="Lock" name="lock_id" any="Any lock" value={lockId} onValue={setLockId} find={findLock} chosenLabel={knownLock ?? `Lock ${lockId}`} error={error} testid="events-lock" />
        <Picker label="Person" name="person_id" any="Anyone" value={personId} onValue={setPersonId} find={findPerson} chosenLabel={knownPerson ?? `Person ${personId}`} error={error} testid="events-person" />
        <Checkboxes legend="Types" name="type" options={EVENT_TYPES.map((t) => ({ value: t, label: t }))} selected={types} onChange={setTypes} />
        <button type="submit" class="secondary" data-testid="events-apply">
          Apply filters
        </button>
      </form>
      {error && <FormError error={error} fields={['since', 'lock_id', 'person_id']} />}
      {tail.current.next && (
        <button type="button" class="secondary" onClick={() => void read('more')} disabled={loading} data-testid="events-load-newer">
          Load newer rows
        </button>
      )}
      <p class="muted" aria-live="polite" data-testid="events-count">
        {loading ? 'Loading…' : `${rows.length} rows, newest first${tail.current.next ? '' : '; new rows appear on top as they arrive'}.`}
      </p>
      <p class="muted" data-testid="events-zone">
        Times are in the time zone of the lock's location where it has one, else in this browser's ({browserTimeZone()}).
      </p>
      <div class="toolbar">
        <button type="button" class="secondary" onClick={exportCsv} disabled={exporting.busy} data-testid="events-export">
          Export CSV<span class="visually-hidden"> of the access log as filtered</span>
        </button>
        <span class="muted">Every row the filters match, oldest first.</span>
      </div>
      <FormError error={exporting.error} />
      {rows.length > 0 && (
        <Table label="Access log">
          <thead>
            <tr>
              {sorted.header('when', 'When')}
              {sorted.header('type', 'Type')}
              {sorted.header('result', 'Result')}
              {sorted.header('lock', 'Lock')}
              {sorted.header('who', 'Who')}
              {sorted.header('reason', 'Reason')}
            </tr>
          </thead>
          <tbody data-testid="events-rows">
            {sorted.rows.map((ev) => (
              <tr key={ev.id} class={fresh.has(ev.id) ? 'fresh' : ''} data-testid={`event-row-${ev.id}`}>
                <td data-testid={`event-time-${ev.id}`}>
                  <Time iso={ev.occurred_at} zone={zoneOf(ev)} seconds />
                </td>
                <td>{ev.type}</td>
                <td>
                  <span class={ev.result === 'success' ? 'badge ok' : 'badge bad'}>{ev.result}</span>
                </td>
                <td>
                  <Link href={`/console/accounts/${account.id}/events?lock_id=${ev.lock.id}`}>
                    {ev.lock.name}
                  </Link>{' '}
                  <Link href={`/console/accounts/${account.id}/locks`} class="muted">
                    (locks)
                  </Link>
                </td>
                <td data-testid={`event-actor-${ev.id}`}>
                  <Actor account={account} event={ev} />
                </td>
                <td>{ev.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      {!loading && rows.length === 0 && !error && <p class="muted">No access in this period.</p>}
      {/* Filter changes through links land here too; the fields show what the list is filtered by. */}
      <FilterFromQuery
        lockId={query.get('lock_id') ?? ''}
        personId={query.get('person_id') ?? ''}
        onChange={(l, p) => {
          setLockId(l);
          setPersonId(p);
          setFilter((f) => ({ ...f, lock_id: l || undefined, person_id: p || undefined }));
        }}
      />
    </section>
  );
}

/**
 * Who acted: an API key (the console operator when it is a console session's key), or the key holder, person
 * and key, at the door or from the phone; "unknown" only when the entry names nobody.
 */
function Actor({ account, event }: { account: Account; event: AccessEvent }) {
  if (event.api_key) {
    const { name, prefix } = event.api_key;
    return (
      <>
        {name === CONSOLE_KEY_NAME ? 'Console operator' : `API key ${name}`}{' '}
        <span class="muted">
          ({name === CONSOLE_KEY_NAME ? 'API key ' : ''}
          <code>{prefix}</code>)
        </span>
      </>
    );
  }
  if (!event.person && !event.key) return <span class="muted">unknown</span>;
  return (
    <>
      {event.person && <Link href={`/console/accounts/${account.id}/people/${event.person.id}`}>{event.person.name}</Link>}
      {event.person && event.key && ', '}
      {event.key && `key ${event.key.name}`}
      {event.source === 'key_holder' && <span class="muted"> (from the phone)</span>}
    </>
  );
}

/** Who acted, in words (for sorting). */
function actorWords(event: AccessEvent): string {
  if (event.api_key) return event.api_key.name === CONSOLE_KEY_NAME ? 'Console operator' : `API key ${event.api_key.name}`;
  return [event.person?.name, event.key?.name].filter(Boolean).join(' ') || '';
}

/** Follows ?lock_id= and ?person_id= of the address (links from rows, back and forward). */
function FilterFromQuery({ lockId, personId, onChange }: { lockId: string; personId: string; onChange: (lock: string, person: string) => void }) {
  const first = useRef(true);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    onChange(lockId, personId);
  }, [lockId, personId]);
  return null;
}
