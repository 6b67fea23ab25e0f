// Locks of an account: the public list (online live), create and change through the operator API.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Checkboxes, Field, FormError, ListState, LoadMore, Online, Table, TextField, usePaged, useSubmit } from '../components.tsx';
import type { Account, Gateway, Lock, SecurityGroup } from '../types.ts';
import { LocationSelect, useLocations } from './account.tsx';

export function LocksSection({ account }: { account: Account }) {
  const locks = usePaged<Lock>('/v1/locks', { account: account.id, topics: ['presence'] });
  const groups = usePaged<SecurityGroup>('/v1/security_groups', { account: account.id, limit: 200 });
  const gateways = usePaged<Gateway>('/admin/v1/gateways', { query: { account_id: account.id }, limit: 200 });
  const [editing, setEditing] = useState<number | null>(null);
  const groupOptions = groups.items.map((g) => ({ value: g.code, label: `${g.title} (${g.code})` }));
  return (
    <section aria-labelledby="locks-title">
      <h2 id="locks-title">Locks</h2>
      <ListState list={locks} empty="No locks yet." />
      {locks.items.length > 0 && (
        <Table label="Locks">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Place</th>
              <th scope="col">Location</th>
              <th scope="col">State</th>
              <th scope="col">Security groups</th>
              <th scope="col">ID</th>
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {locks.items.map((lock) => (
              <tr key={lock.id} data-testid={`lock-row-${lock.id}`}>
                <td>{lock.name}</td>
                <td>{lock.place}</td>
                <td>{lock.location.name}</td>
                <td>
                  <Online online={lock.online} />
                </td>
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

function GatewaySelect({ gateways, value, onValue, error, keep }: { gateways: Gateway[]; value: string; onValue: (v: string) => void; error: ReturnType<typeof useSubmit>['error']; keep?: boolean }) {
  return (
    <Field label="Gateway" name="gateway_id" error={error} hint="A lock on a gateway can be opened remotely">
      {(a) => (
        <select {...a} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} data-testid="lock-gateway">
          {keep && <option value="keep">Keep as it is</option>}
          <option value="">No gateway</option>
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

function EditLock({ lock, gateways, groups, onDone }: { lock: Lock | undefined; gateways: Gateway[]; groups: Option[]; onDone: () => void }) {
  const [name, setName] = useState(lock?.name ?? '');
  const [place, setPlace] = useState(lock?.place ?? '');
  const [gateway, setGateway] = useState('keep');
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
            if (gateway !== 'keep') body.gateway_id = gateway === '' ? null : Number(gateway);
            await api('PATCH', `/admin/v1/locks/${lock.id}`, { body });
            onDone();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} />
        <TextField label="Place" name="place" value={place} onValue={setPlace} error={form.error} />
        <GatewaySelect gateways={gateways} value={gateway} onValue={setGateway} error={form.error} keep />
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
            setName('');
            setPlace('');
            setSerial('');
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
