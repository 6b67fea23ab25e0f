// Locks of an account: the operator API's list (online live, with each lock's gateway), create and change.
import { useEffect, useRef, useState } from 'preact/hooks';
import { RequestError, api, get } from '../api.ts';
import { Checkboxes, Field, FormError, ListState, LoadMore, Online, Table, TextField, Time, useConfirm, usePaged, useRowFromHash, useSort, useSubmit } from '../components.tsx';
import { useLive } from '../live.ts';
import { Link } from '../router.tsx';
import { CONSOLE_KEY_NAME, type Account, type Controller, type Gateway, type LockCommand, type OperatorLock, type SecurityGroup } from '../types.ts';
import { LocationSelect, useLocations } from './account.tsx';

export function LocksSection({ account }: { account: Account }) {
  const locks = usePaged<OperatorLock>('/admin/v1/locks', { query: { account_id: account.id }, liveAccount: account.id, topics: ['presence'] });
  const groups = usePaged<SecurityGroup>('/v1/security_groups', { account: account.id, limit: 200 });
  const gateways = usePaged<Gateway>('/admin/v1/gateways', { query: { account_id: account.id }, limit: 200 });
  // A door of a UHPPOTE controller has the controller as its gateway: named and linked as the controller.
  const controllers = usePaged<Controller>(account.locking_system === 'uhppote' ? '/admin/v1/controllers' : null, { query: { account_id: account.id }, limit: 200 });
  const [editing, setEditing] = useState<number | null>(null);
  const groupOptions = groups.items.map((g) => ({ value: g.code, label: `${g.title} (${g.code})` }));
  const controllerOf = (id: number) => controllers.items.find((c) => c.id === id);
  const gatewayName = (id: number | null) => (id === null ? '' : (gateways.items.find((g) => g.id === id)?.name ?? controllerOf(id)?.name ?? `gateway ${id}`));
  // A link to one lock (`…/locks#lock-12`, from a controller's doors) scrolls to its row once the rows are in.
  useRowFromHash('lock', locks.items);
  const sorted = useSort(locks.items, { name: (l) => l.name, place: (l) => l.place, location: (l) => l.location.name, state: (l) => (l.online === null ? 'not remote' : l.online ? 'online' : 'offline'), gateway: (l) => gatewayName(l.gateway_id), groups: (l) => l.security_groups.join(', '), id: (l) => l.id });
  return (
    <section aria-labelledby="locks-title">
      <h2 id="locks-title">Locks</h2>
      <ListState list={locks} empty="No locks yet." />
      {locks.items.length > 0 && (
        <Table label="Locks">
          <thead>
            <tr>
              {/* Open comes early: at phone width the table scrolls sideways, and the door's action stays in view. */}
              {sorted.header('name', 'Name')}
              {sorted.header('state', 'State')}
              <th scope="col">Open</th>
              {sorted.header('gateway', 'Gateway')}
              {sorted.header('place', 'Place')}
              {sorted.header('location', 'Location')}
              {sorted.header('groups', 'Security groups')}
              {sorted.header('id', 'ID')}
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((lock) => (
              <tr key={lock.id} id={`lock-${lock.id}`} data-testid={`lock-row-${lock.id}`}>
                <td>{lock.name}</td>
                <td>
                  <Online online={lock.online} />
                </td>
                <td>
                  <OpenLock account={account} lock={lock} />
                </td>
                <td data-testid={`lock-gateway-${lock.id}`}>
                  {lock.gateway_id === null ? (
                    <span class="muted">none</span>
                  ) : (
                    <Link
                      href={
                        controllerOf(lock.gateway_id)
                          ? `/console/accounts/${account.id}/controllers/${lock.gateway_id}`
                          : `/console/accounts/${account.id}/gateways#gateway-${lock.gateway_id}`
                      }
                    >
                      {gatewayName(lock.gateway_id)} <span class="muted">({controllerOf(lock.gateway_id) ? 'controller' : 'id'} {lock.gateway_id})</span>
                    </Link>
                  )}
                </td>
                <td>{lock.place}</td>
                <td>{lock.location.name}</td>
                <td>{lock.security_groups.join(', ') || <span class="muted">none</span>}</td>
                <td>{lock.id}</td>
                <td>
                  <button type="button" class="secondary small" aria-expanded={editing === lock.id} onClick={() => setEditing(editing === lock.id ? null : lock.id)} data-testid={`edit-lock-${lock.id}`}>
                    Change<span class="visually-hidden"> {lock.name}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={locks} />
      {editing !== null && (
        <EditLock
          key={editing}
          lock={locks.items.find((l) => l.id === editing)}
          gateways={gateways.items}
          currentName={gatewayName(locks.items.find((l) => l.id === editing)?.gateway_id ?? null)}
          groups={groupOptions}
          onDone={() => {
            const id = editing;
            setEditing(null);
            locks.reload();
            // Back to the row's button, where the keyboard user opened the panel from.
            requestAnimationFrame(() => document.querySelector<HTMLElement>(`[data-testid="edit-lock-${id}"]`)?.focus());
          }}
        />
      )}
      <CreateLock account={account} gateways={gateways.items} groups={groupOptions} onCreated={locks.reload} />
    </section>
  );
}

type Option = { value: string; label: string };

/** How often a command still `published` is read again (a live `events` change reads it at once). */
const COMMAND_POLL_MS = 1000;

type Unlock =
  | { state: 'idle' }
  | { state: 'asking'; askedAt: string }
  | { state: 'command'; askedAt: string; command: LockCommand }
  | { state: 'refused'; askedAt: string; error: RequestError };

/** Words for a command's state; the error's own words when it failed. */
function commandWords(command: LockCommand): string {
  switch (command.status) {
    case 'published':
      return 'Sent to the gateway; waiting for the door to confirm…';
    case 'confirmed':
      return 'Opened: the door confirmed.';
    case 'timed_out':
      return `Timed out: the door did not answer within ${command.timeout_seconds} s.`;
    case 'failed':
      return `Failed: ${command.error?.message ?? 'the device refused.'}`;
  }
}

/**
 * "Open" on a remote lock: POST /v1/locks/{id}/unlock with the session's own API key (the console's server
 * part puts the lock on that key's allowlist first), then the command read until it is confirmed, failed or
 * timed out. The access log names the session's key ("Operator console") as who opened.
 */
function OpenLock({ account, lock }: { account: Account; lock: OperatorLock }) {
  const [unlock, setUnlock] = useState<Unlock>({ state: 'idle' });
  // A door opens for whoever stands at it: a stray click must not do that.
  const confirm = useConfirm();
  const pending = unlock.state === 'command' && unlock.command.status === 'published' ? unlock.command : null;
  const refresh = async (command: LockCommand) => {
    try {
      const now = await get<LockCommand>(`/v1/locks/${lock.id}/commands/${command.id}`, { account: account.id });
      setUnlock((old) => (old.state === 'command' && old.command.id === now.id ? { ...old, command: now } : old));
    } catch {
      // The next read tries again; a signed-out session leaves the page anyway.
    }
  };
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(() => void refresh(pending), COMMAND_POLL_MS);
    return () => clearInterval(timer);
  }, [pending?.id]);
  useLive(['events'], account.id, () => pending && void refresh(pending), 50);
  if (lock.online === null) return <span class="muted">not remote</span>;
  const busy = unlock.state === 'asking' || pending !== null;
  return (
    <div class="open-lock">
      {confirm.dialog}
      <button
        type="button"
        class="small"
        disabled={busy}
        data-testid={`open-lock-${lock.id}`}
        onClick={async () => {
          const sure = await confirm.confirm(
            `Open ${lock.name} now?`,
            <p>
              The door unlocks for whoever is at it{lock.place ? ` (${lock.place})` : ''}. The access log names this console session, as its API key "{CONSOLE_KEY_NAME}", as who opened it.
            </p>,
            'Open the door',
          );
          if (!sure) return;
          const askedAt = new Date().toISOString();
          setUnlock({ state: 'asking', askedAt });
          api<LockCommand>('POST', `/v1/locks/${lock.id}/unlock`, { account: account.id })
            .then((command) => setUnlock({ state: 'command', askedAt, command }))
            .catch((caught: unknown) =>
              setUnlock({ state: 'refused', askedAt, error: caught instanceof RequestError ? caught : new RequestError(0, 'client', String(caught)) }),
            );
        }}
      >
        Open<span class="visually-hidden"> {lock.name}</span>
      </button>
      <div role="status" aria-live="polite" data-testid={`unlock-status-${lock.id}`} data-state={unlock.state === 'command' ? unlock.command.status : unlock.state}>
        {unlock.state === 'asking' && <span class="muted">Asking…</span>}
        {unlock.state === 'refused' && <span class="badge bad">refused</span>}
        {unlock.state === 'refused' && <span> {unlock.error.message}</span>}
        {unlock.state === 'command' && (
          <>
            <span class={unlock.command.status === 'confirmed' ? 'badge ok' : unlock.command.status === 'published' ? 'badge' : 'badge bad'}>{unlock.command.status.replace('_', ' ')}</span>{' '}
            {commandWords(unlock.command)}
          </>
        )}
        {unlock.state !== 'idle' && (
          <div class="muted" data-testid={`unlock-actor-${lock.id}`}>
            You asked from this console session, as its API key "{CONSOLE_KEY_NAME}", at <Time iso={unlock.askedAt} />.
          </div>
        )}
      </div>
    </div>
  );
}

function GatewaySelect(props: { gateways: Gateway[]; value: string; onValue: (v: string) => void; error: ReturnType<typeof useSubmit>['error']; current?: string }) {
  const { gateways, value, onValue, error, current } = props;
  return (
    <Field label="Gateway" name="gateway_id" error={error} hint="A lock on a gateway can be opened remotely">
      {(a) => (
        <select {...a} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} data-testid="lock-gateway">
          <option value="">No gateway</option>
          {/* A controller's door: its controller, kept (doors change on the controller's page). */}
          {current && !gateways.some((g) => String(g.id) === value) && value !== '' && <option value={value}>{current}</option>}
          {gateways.map((g) => (
            <option key={g.id} value={String(g.id)}>
              {g.name} (id {g.id})
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

function EditLock(props: { lock: OperatorLock | undefined; gateways: Gateway[]; currentName: string; groups: Option[]; onDone: () => void }) {
  const { lock, gateways, currentName, groups, onDone } = props;
  const [name, setName] = useState(lock?.name ?? '');
  const [place, setPlace] = useState(lock?.place ?? '');
  // The gateway it is on now (the operator's lock carries it); sent only when changed.
  const onNow = lock?.gateway_id == null ? '' : String(lock.gateway_id);
  const [gateway, setGateway] = useState(onNow);
  const [selected, setSelected] = useState<string[]>(lock?.security_groups ?? []);
  const form = useSubmit();
  // The panel opens below the table: take the focus there, or a keyboard user would not know it opened.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  if (!lock) return null;
  return (
    <section aria-labelledby="edit-lock-title" class="panel">
      <h3 id="edit-lock-title" tabIndex={-1} ref={heading}>
        Change {lock.name}
      </h3>
      <form
        data-testid="edit-lock-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            const body: Record<string, unknown> = { name, place, security_groups: selected };
            if (gateway !== onNow) body.gateway_id = gateway === '' ? null : Number(gateway);
            await api('PATCH', `/admin/v1/locks/${lock.id}`, { body });
            onDone();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} />
        <TextField label="Place" name="place" value={place} onValue={setPlace} error={form.error} />
        <GatewaySelect gateways={gateways} value={gateway} onValue={setGateway} error={form.error} current={`${currentName} (id ${onNow})`} />
        <Checkboxes legend="Security groups" name="security_groups" options={groups} selected={selected} onChange={setSelected} error={form.error} empty="No security groups in this account yet." />
        <FormError error={form.error} fields={['name', 'place', 'gateway_id', 'security_groups']} />
        <div class="actions">
          <button type="submit" disabled={form.busy} data-testid="save-lock">
            Save lock
          </button>
          <button type="button" class="secondary" onClick={onDone}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}

function CreateLock({ account, gateways, groups, onCreated }: { account: Account; gateways: Gateway[]; groups: Option[]; onCreated: () => void }) {
  const locations = useLocations(account);
  const [location, setLocation] = useState(String(account.root_location.id));
  const [name, setName] = useState('');
  const [place, setPlace] = useState('');
  const [serial, setSerial] = useState('');
  const [gateway, setGateway] = useState('');
  const [selected, setSelected] = useState<string[]>([]);
  const form = useSubmit();
  return (
    <>
      <h3>Add a lock</h3>
      <form
        data-testid="create-lock-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await api('POST', '/admin/v1/locks', {
              body: {
                location_id: Number(location),
                name,
                place,
                serial_number: serial.trim() || null,
                gateway_id: gateway === '' ? null : Number(gateway),
                security_groups: selected,
              },
            });
            // Every choice back to its start: a gateway or location kept from the last lock put the next one there unnoticed.
            setLocation(String(account.root_location.id));
            setName('');
            setPlace('');
            setSerial('');
            setGateway('');
            setSelected([]);
            onCreated();
          });
        }}
      >
        <LocationSelect locations={locations.items} value={location} onValue={setLocation} error={form.error} />
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} data-testid="lock-name" />
        <TextField label="Place" name="place" value={place} onValue={setPlace} error={form.error} />
        <TextField label="Serial number" name="serial_number" value={serial} onValue={setSerial} error={form.error} />
        <GatewaySelect gateways={gateways} value={gateway} onValue={setGateway} error={form.error} />
        <Checkboxes legend="Security groups" name="security_groups" options={groups} selected={selected} onChange={setSelected} error={form.error} empty="No security groups in this account yet." />
        <FormError error={form.error} fields={['location_id', 'name', 'place', 'serial_number', 'gateway_id', 'security_groups']} />
        <button type="submit" disabled={form.busy} data-testid="create-lock">
          Add lock
        </button>
      </form>
    </>
  );
}
