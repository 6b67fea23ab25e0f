// UHPPOTE controllers of an account (README "Real controllers"; /admin/v1/controllers): boards that keep their
// own card list. The list with presence, clock and listener; a form to set one up with its doors mapped to
// locks; a controller's view to change it, reconcile it now (the report: cards added, changed, removed and why)
// and delete it. An account on another locking system is told so, and how to move it to UHPPOTE.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { RequestError, api } from '../api.ts';
import {
  Field,
  FormError,
  ListState,
  LoadMore,
  Online,
  Picker,
  Table,
  TextField,
  Time,
  readAll,
  useConfirm,
  usePaged,
  useResource,
  useSort,
  useSubmit,
  type PickOption,
} from '../components.tsx';
import { Link, navigate } from '../router.tsx';
import type { Account, Controller, DoorLock, Lock, Reconciliation } from '../types.ts';
import { LocationSelect, useLocations } from './account.tsx';

export const UHPPOTE = 'uhppote';
const DOOR_COUNTS = [1, 2, 4] as const;

/** The account's locks (every page, read once): names for the door mapping, and what the door pickers find in. */
function useAccountLocks(account: Account) {
  const [locks, setLocks] = useState<Lock[]>([]);
  const all = useRef<Promise<Lock[]> | null>(null);
  const load = useCallback(() => {
    all.current ??= readAll<Lock>('/v1/locks', { account: account.id }).then((read) => read.rows);
    return all.current.then(
      (rows) => {
        setLocks(rows);
        return rows;
      },
      (caught: unknown) => {
        all.current = null;
        throw caught;
      },
    );
  }, [account.id]);
  useEffect(() => {
    void load().catch(() => undefined);
  }, [load]);
  const find = useCallback(
    async (text: string): Promise<PickOption[]> => {
      const rows = await load();
      const words = text.toLowerCase();
      return rows
        .filter((l) => !words || `${l.name} ${l.place} ${l.location.name} ${l.id}`.toLowerCase().includes(words))
        .map((l) => ({ value: String(l.id), label: lockLabel(l) }));
    },
    [load],
  );
  const reload = () => {
    all.current = null;
    void load().catch(() => undefined);
  };
  return { locks, find, reload };
}

const lockLabel = (l: Lock) => `${l.name}${l.place ? `, ${l.place}` : ''} (${l.location.name}, id ${l.id})`;

/** A lock named and linked to its row on the Locks tab. */
function LockLink({ account, lockId, locks }: { account: Account; lockId: number; locks: Lock[] }) {
  const lock = locks.find((l) => l.id === lockId);
  return <Link href={`/console/accounts/${account.id}/locks#lock-${lockId}`}>{lock ? lock.name : `Lock ${lockId}`}</Link>;
}

function DoorsToLocks({ account, controller, locks }: { account: Account; controller: Controller; locks: Lock[] }) {
  if (controller.door_locks.length === 0) return <span class="muted">no doors mapped</span>;
  return (
    <ul class="plain" data-testid={`controller-doors-${controller.id}`}>
      {controller.door_locks
        .slice()
        .sort((a, b) => a.door - b.door)
        .map((d) => (
          <li key={d.door}>
            Door {d.door} → <LockLink account={account} lockId={d.lock_id} locks={locks} />
          </li>
        ))}
    </ul>
  );
}

/** The API names a door's problem by its place in `door_locks`; the form shows it at that door's picker. */
function atDoors(error: RequestError | null, sent: DoorLock[]): RequestError | null {
  if (!error) return null;
  const details = error.details.map((d) => {
    const at = /^door_locks\[(\d+)\](?:\.(?:door|lock_id))?$/.exec(d.field);
    const door = at ? sent[Number(at[1])]?.door : undefined;
    return door === undefined ? d : { ...d, field: `door_${door}` };
  });
  return new RequestError(error.status, error.code, error.message, details);
}

/** The mapping as the API takes it: doors in order, those with a lock. */
function doorLocksOf(doors: number, chosen: Record<number, string>): DoorLock[] {
  const out: DoorLock[] = [];
  for (let door = 1; door <= doors; door++) {
    const lock = chosen[door];
    if (lock) out.push({ door, lock_id: Number(lock) });
  }
  return out;
}

/** A lock picker per door of the board. */
function DoorPickers(props: { doors: number; chosen: Record<number, string>; onChosen: (door: number, lock: string) => void; find: (text: string) => Promise<PickOption[]>; locks: Lock[]; error: RequestError | null; testid: string }) {
  const { doors, chosen, onChosen, find, locks, error, testid } = props;
  return (
    <fieldset class="doors" data-testid={testid}>
      <legend>Which lock each door is</legend>
      {Array.from({ length: doors }, (_, i) => i + 1).map((door) => {
        const value = chosen[door] ?? '';
        const known = locks.find((l) => String(l.id) === value);
        return (
          <Picker
            key={door}
            label={`Door ${door} lock`}
            name={`door_${door}`}
            any="No lock on this door"
            value={value}
            onValue={(v) => onChosen(door, v)}
            find={find}
            chosenLabel={known ? lockLabel(known) : `Lock ${value}`}
            error={error}
            testid={`${testid}-${door}`}
          />
        );
      })}
    </fieldset>
  );
}

/** Words for a request that failed: a board that did not answer, a controller with locks on its doors, else the service's. */
function controllerError(error: RequestError | null, mapped = false): RequestError | null {
  if (!error) return null;
  if (error.status === 503 && error.code === 'not_available') return new RequestError(503, error.code, `The controller did not answer. ${error.message}`);
  if (error.status === 409 && error.code === 'gateway_in_use' && mapped) {
    return new RequestError(409, error.code, `It cannot be deleted while locks are on its doors: take its doors off first (Doors above: “No lock on this door” on each, then save). ${error.message}`);
  }
  return error;
}

export function ControllersSection({ account, controllerId }: { account: Account; controllerId?: string }) {
  const locks = useAccountLocks(account);
  if (controllerId !== undefined) {
    return /^\d+$/.test(controllerId) ? <ControllerView account={account} id={Number(controllerId)} locks={locks} /> : <p>No such controller.</p>;
  }
  return <ControllerList account={account} locks={locks} />;
}

function NotUhppote({ account }: { account: Account }) {
  return (
    <div class="panel" data-testid="not-uhppote">
      <p>
        <strong>This account does not use UHPPOTE controllers.</strong> Its locking system is {account.locking_system ? <code>{account.locking_system}</code> : 'none'}, so
        controllers cannot be set up for it.
      </p>
      <p>
        To use them, choose “UHPPOTE controllers” as the locking system in <Link href={`/console/accounts/${account.id}/settings`}>Settings</Link>, or create an account with{' '}
        <code>locking_system: "uhppote"</code> in the operator API.
      </p>
    </div>
  );
}

function ControllerList({ account, locks }: { account: Account; locks: ReturnType<typeof useAccountLocks> }) {
  const controllers = usePaged<Controller>('/admin/v1/controllers', { query: { account_id: account.id }, topics: ['presence'], liveAccount: account.id });
  const sorted = useSort(controllers.items, {
    name: (c) => c.name,
    serial: (c) => c.serial_number,
    state: (c) => (c.online ? 'online' : 'offline'),
    seen: (c) => (c.last_seen_at ? Date.parse(c.last_seen_at) : null),
  });
  const uhppote = account.locking_system === UHPPOTE;
  return (
    <section aria-labelledby="controllers-title">
      <h2 id="controllers-title" tabIndex={-1}>
        Controllers
      </h2>
      {!uhppote && <NotUhppote account={account} />}
      {uhppote && <p class="muted">UHPPOTE boards keep their own card list: the service writes the cards of this account's keys to them, sets their clocks and reads their events.</p>}
      <ListState list={controllers} empty="No controllers yet." />
      {controllers.items.length > 0 && (
        <Table label="Controllers">
          <thead>
            <tr>
              {sorted.header('name', 'Name')}
              {sorted.header('serial', 'Serial')}
              <th scope="col">Address</th>
              {sorted.header('state', 'State')}
              {sorted.header('seen', 'Last seen')}
              <th scope="col">Clock set</th>
              <th scope="col">Listener set</th>
              <th scope="col">Last error</th>
              <th scope="col">Doors → locks</th>
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((c) => (
              <tr key={c.id} data-testid={`controller-row-${c.id}`}>
                <td>
                  <Link href={`/console/accounts/${account.id}/controllers/${c.id}`} data-testid={`open-controller-${c.id}`}>
                    {c.name}
                  </Link>
                </td>
                <td>{c.serial_number}</td>
                <td>
                  <code>
                    {c.address}:{c.port}
                  </code>{' '}
                  {c.transport.toUpperCase()}
                </td>
                <td>
                  <Online online={c.online} />
                </td>
                <td>
                  <Time iso={c.last_seen_at} zone={c.time_zone} />
                </td>
                <td>
                  <Time iso={c.clock_set_at} zone={c.time_zone} />
                </td>
                <td>
                  <Time iso={c.listener_set_at} zone={c.time_zone} />
                </td>
                <td>{c.last_error ?? <span class="muted">none</span>}</td>
                <td>
                  <DoorsToLocks account={account} controller={c} locks={locks.locks} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={controllers} />
      {uhppote && <CreateController account={account} locks={locks} onCreated={controllers.reload} />}
    </section>
  );
}

function CreateController({ account, locks, onCreated }: { account: Account; locks: ReturnType<typeof useAccountLocks>; onCreated: () => void }) {
  const locations = useLocations(account);
  const [location, setLocation] = useState(String(account.root_location.id));
  const [name, setName] = useState('');
  const [serial, setSerial] = useState('');
  const [address, setAddress] = useState('');
  const [port, setPort] = useState('60000');
  const [transport, setTransport] = useState('udp');
  const [doors, setDoors] = useState('4');
  const [chosen, setChosen] = useState<Record<number, string>>({});
  const [sent, setSent] = useState<DoorLock[]>([]);
  const [made, setMade] = useState<string | null>(null);
  const form = useSubmit();
  const error = atDoors(form.error, sent);
  const doorCount = Number(doors);
  return (
    <>
      <h3 id="create-controller-title">Add a controller</h3>
      <form
        data-testid="create-controller-form"
        aria-labelledby="create-controller-title"
        onSubmit={(e) => {
          e.preventDefault();
          setMade(null);
          const doorLocks = doorLocksOf(doorCount, chosen);
          setSent(doorLocks);
          void form.run(async () => {
            const answer = await api<Controller>('POST', '/admin/v1/controllers', {
              body: {
                location_id: Number(location),
                name,
                serial_number: serial.trim() === '' ? null : Number(serial.trim()),
                address: address.trim(),
                port: Number(port),
                transport,
                doors: doorCount,
                door_locks: doorLocks,
              },
            });
            setName('');
            setSerial('');
            setAddress('');
            setChosen({});
            setMade(`Added ${answer.name}: ${answer.online ? 'it answered, online' : 'it did not answer yet, offline'}.`);
            locks.reload();
            onCreated();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={error} data-testid="controller-name" />
        <LocationSelect locations={locations.items} value={location} onValue={setLocation} error={error} testid="controller-location" />
        <p class="hint">The board's clock is kept on the time zone of its location; the locks on its doors must read their windows in the same zone.</p>
        <TextField
          label="Serial number"
          name="serial_number"
          required
          inputMode="numeric"
          autoComplete="off"
          value={serial}
          onValue={setSerial}
          error={error}
          hint="Printed on the board (uhppote-cli get-devices shows it)."
          data-testid="controller-serial"
        />
        <TextField
          label="IPv4 address"
          name="address"
          required
          inputMode="decimal"
          autoComplete="off"
          placeholder="192.168.1.100"
          value={address}
          onValue={setAddress}
          error={error}
          hint="A fixed address: set one on the board or reserve it in DHCP."
          data-testid="controller-address"
        />
        <TextField label="Port" name="port" type="number" min={1} max={65535} required value={port} onValue={setPort} error={error} data-testid="controller-port" />
        <TransportSelect value={transport} onValue={setTransport} error={error} testid="controller-transport" />
        <Field label="Doors" name="doors" error={error}>
          {(a) => (
            <select {...a} value={doors} onChange={(e) => setDoors((e.currentTarget as HTMLSelectElement).value)} data-testid="controller-doors">
              {DOOR_COUNTS.map((n) => (
                <option key={n} value={String(n)}>
                  {n} door{n === 1 ? '' : 's'}
                </option>
              ))}
            </select>
          )}
        </Field>
        <DoorPickers doors={doorCount} chosen={chosen} onChosen={(door, lock) => setChosen({ ...chosen, [door]: lock })} find={locks.find} locks={locks.locks} error={error} testid="new-door" />
        <FormError error={error} fields={['name', 'location_id', 'serial_number', 'address', 'port', 'transport', 'doors', ...Array.from({ length: doorCount }, (_, i) => `door_${i + 1}`)]} />
        <button type="submit" disabled={form.busy} data-testid="create-controller">
          Add controller
        </button>
        {made && (
          <p role="status" class="ok-text" data-testid="controller-made">
            {made}
          </p>
        )}
      </form>
    </>
  );
}

function TransportSelect({ value, onValue, error, testid }: { value: string; onValue: (v: string) => void; error: RequestError | null; testid: string }) {
  return (
    <Field label="Transport" name="transport" error={error} hint="TCP only on boards whose firmware takes it.">
      {(a) => (
        <select {...a} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} data-testid={testid}>
          <option value="udp">UDP</option>
          <option value="tcp">TCP</option>
        </select>
      )}
    </Field>
  );
}

function ControllerView({ account, id, locks }: { account: Account; id: number; locks: ReturnType<typeof useAccountLocks> }) {
  const controller = useResource<Controller>(`/admin/v1/controllers/${id}`, { topics: ['presence'], liveAccount: account.id });
  const back = (
    <p>
      <Link href={`/console/accounts/${account.id}/controllers`}>All controllers</Link>
    </p>
  );
  if (controller.error) {
    return (
      <section aria-labelledby="controller-title">
        <h2 id="controller-title">Controller {id}</h2>
        <FormError error={controller.error} />
        {back}
      </section>
    );
  }
  const c = controller.data;
  if (!c) return <p class="muted">Loading…</p>;
  return (
    <section aria-labelledby="controller-title">
      {back}
      <h2 id="controller-title" tabIndex={-1}>
        Controller {c.name}
      </h2>
      <dl class="facts" data-testid="controller-facts">
        <dt>Serial number</dt>
        <dd>{c.serial_number}</dd>
        <dt>Address</dt>
        <dd>
          <code>
            {c.address}:{c.port}
          </code>{' '}
          {c.transport.toUpperCase()}
        </dd>
        <dt>State</dt>
        <dd data-testid="controller-state">
          <Online online={c.online} /> last seen <Time iso={c.last_seen_at} zone={c.time_zone} />
        </dd>
        <dt>Clock</dt>
        <dd>
          kept on {c.time_zone}; set <Time iso={c.clock_set_at} zone={c.time_zone} />
        </dd>
        <dt>Event listener</dt>
        <dd>
          set <Time iso={c.listener_set_at} zone={c.time_zone} />
        </dd>
        <dt>Last error</dt>
        <dd data-testid="controller-last-error">{c.last_error ?? <span class="muted">none</span>}</dd>
        <dt>Doors</dt>
        <dd>
          {c.doors} door{c.doors === 1 ? '' : 's'}; <DoorsToLocks account={account} controller={c} locks={locks.locks} />
        </dd>
      </dl>
      <ReconcileNow controller={c} onDone={controller.reload} />
      <EditDoors key={`doors-${c.id}`} controller={c} locks={locks} onSaved={controller.reload} />
      <EditController key={`edit-${c.id}`} controller={c} onSaved={controller.reload} />
      <DeleteController account={account} controller={c} />
    </section>
  );
}

function ReconcileNow({ controller, onDone }: { controller: Controller; onDone: () => void }) {
  const run = useSubmit();
  const [fresh, setFresh] = useState<Reconciliation | null>(null);
  const report = fresh ?? controller.reconciliation;
  return (
    <>
      <h3 id="reconcile-title">Reconciliation</h3>
      <p class="muted">Reads the board's card list and repairs what differs from what the service holds: missing cards added, changed ones rewritten, cards nobody holds removed.</p>
      <button
        type="button"
        class="secondary"
        disabled={run.busy}
        data-testid="reconcile-now"
        onClick={() =>
          void run.run(async () => {
            setFresh(null);
            setFresh(await api<Reconciliation>('POST', `/admin/v1/controllers/${controller.id}/reconcile`));
            onDone();
          })
        }
      >
        {run.busy ? 'Reconciling…' : 'Reconcile now'}
      </button>
      <FormError error={controllerError(run.error)} />
      {report ? <ReconciliationReport report={report} fresh={fresh !== null} zone={controller.time_zone} /> : <p class="muted">Not reconciled yet.</p>}
    </>
  );
}

function ReconciliationReport({ report, fresh, zone }: { report: Reconciliation; fresh: boolean; zone: string }) {
  return (
    <div class="panel" data-testid="reconciliation" role={fresh ? 'status' : undefined}>
      <h4>
        {fresh ? 'Reconciled just now' : 'Last reconciliation'}: <Time iso={report.at} zone={zone} seconds />
      </h4>
      <p data-testid="reconciliation-cards">
        {report.cards_on_controller} card{report.cards_on_controller === 1 ? '' : 's'} on the controller.
      </p>
      <ReportList title="Added" testid="reconciliation-added" rows={report.added.map((r) => `Key ${r.key_id}: ${r.reason}`)} />
      <ReportList title="Changed" testid="reconciliation-changed" rows={report.changed.map((r) => `Key ${r.key_id}: ${r.reason}`)} />
      <ReportList title="Removed" testid="reconciliation-removed" rows={report.removed.map((r) => `Card ${r.card}${r.key_id === null ? '' : ` (key ${r.key_id})`}: ${r.reason}`)} />
      <ReportList title="Time profiles rewritten" testid="reconciliation-profiles" rows={report.profiles_rewritten.map((p) => `Profile ${p}`)} />
      <ReportList title="Problems" testid="reconciliation-problems" rows={report.problems} />
    </div>
  );
}

function ReportList({ title, rows, testid }: { title: string; rows: string[]; testid: string }) {
  return (
    <div data-testid={testid}>
      <h5>
        {title} ({rows.length})
      </h5>
      {rows.length === 0 ? (
        <p class="muted">None.</p>
      ) : (
        <ul>
          {rows.map((row, i) => (
            <li key={i}>{row}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

function EditDoors({ controller, locks, onSaved }: { controller: Controller; locks: ReturnType<typeof useAccountLocks>; onSaved: () => void }) {
  const initial = () => Object.fromEntries(controller.door_locks.map((d) => [d.door, String(d.lock_id)])) as Record<number, string>;
  const [chosen, setChosen] = useState<Record<number, string>>(initial);
  const [sent, setSent] = useState<DoorLock[]>([]);
  const [saved, setSaved] = useState(false);
  const form = useSubmit();
  const error = atDoors(form.error, sent);
  return (
    <>
      <h3 id="doors-title">Doors</h3>
      <form
        data-testid="controller-doors-form"
        aria-labelledby="doors-title"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          const doorLocks = doorLocksOf(controller.doors, chosen);
          setSent(doorLocks);
          void form.run(async () => {
            await api<Controller>('PATCH', `/admin/v1/controllers/${controller.id}`, { body: { door_locks: doorLocks } });
            setSaved(true);
            locks.reload();
            onSaved();
          });
        }}
      >
        <p class="hint">A new mapping replaces the old one and rewrites the cards of the account's keys on the board; a lock taken off is no longer remote.</p>
        <DoorPickers
          doors={controller.doors}
          chosen={chosen}
          onChosen={(door, lock) => {
            setSaved(false);
            setChosen({ ...chosen, [door]: lock });
          }}
          find={locks.find}
          locks={locks.locks}
          error={error}
          testid="door"
        />
        <FormError error={error} fields={Array.from({ length: controller.doors }, (_, i) => `door_${i + 1}`)} />
        <button type="submit" disabled={form.busy} data-testid="save-controller-doors">
          Save doors
        </button>
        {saved && (
          <p role="status" class="ok-text">
            Doors saved.
          </p>
        )}
      </form>
    </>
  );
}

function EditController({ controller, onSaved }: { controller: Controller; onSaved: () => void }) {
  const [name, setName] = useState(controller.name);
  const [address, setAddress] = useState(controller.address);
  const [port, setPort] = useState(String(controller.port));
  const [transport, setTransport] = useState<string>(controller.transport);
  const [saved, setSaved] = useState(false);
  const form = useSubmit();
  return (
    <>
      <h3 id="edit-controller-title">Name and address</h3>
      <form
        data-testid="edit-controller-form"
        aria-labelledby="edit-controller-title"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void form.run(async () => {
            await api<Controller>('PATCH', `/admin/v1/controllers/${controller.id}`, { body: { name, address: address.trim(), port: Number(port), transport } });
            setSaved(true);
            onSaved();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} data-testid="edit-controller-name" />
        <TextField label="IPv4 address" name="address" required inputMode="decimal" autoComplete="off" value={address} onValue={setAddress} error={form.error} data-testid="edit-controller-address" />
        <TextField label="Port" name="port" type="number" min={1} max={65535} required value={port} onValue={setPort} error={form.error} data-testid="edit-controller-port" />
        <TransportSelect value={transport} onValue={setTransport} error={form.error} testid="edit-controller-transport" />
        <FormError error={form.error} fields={['name', 'address', 'port', 'transport']} />
        <button type="submit" disabled={form.busy} data-testid="save-controller">
          Save name and address
        </button>
        {saved && (
          <p role="status" class="ok-text">
            Saved.
          </p>
        )}
      </form>
    </>
  );
}

function DeleteController({ account, controller }: { account: Account; controller: Controller }) {
  const confirm = useConfirm();
  const run = useSubmit();
  return (
    <>
      <h3>Delete</h3>
      {confirm.dialog}
      <p class="muted">Only a controller without locks on its doors can be deleted. Its card list on the board is left as it is.</p>
      <button
        type="button"
        class="danger"
        disabled={run.busy}
        data-testid="delete-controller"
        onClick={() =>
          void confirm
            .confirm(
              `Delete the controller ${controller.name}?`,
              <p>
                The controller {controller.name} (serial {controller.serial_number}, id {controller.id}) goes: the service no longer polls it or writes its cards. The service refuses
                while locks are on its doors or the access log refers to it.
              </p>,
              `Delete ${controller.name}`,
            )
            .then((ok) => {
              if (!ok) return;
              void run.run(async () => {
                await api('DELETE', `/admin/v1/controllers/${controller.id}`);
                navigate(`/console/accounts/${account.id}/controllers`);
              });
            })
        }
      >
        Delete {controller.name}
      </button>
      <FormError error={controllerError(run.error, controller.door_locks.length > 0)} />
    </>
  );
}
