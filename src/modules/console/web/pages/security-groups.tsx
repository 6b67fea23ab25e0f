// Security groups of an account through the operator API (it lists them with their location and weekly
// windows): the windows in words, create a group with windows, change a group's title, description, default
// and windows.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Checkboxes, FormError, ListState, LoadMore, Table, TextField, usePaged, useSort, useSubmit } from '../components.tsx';
import type { Account, LocationChoice, OperatorSecurityGroup, TimeWindow } from '../types.ts';
import { windowsInWords } from '../window-words.ts';
import { WindowsEditor } from '../windows.tsx';
import { LocationSelect, useLocations } from './account.tsx';

export function SecurityGroupsSection({ account }: { account: Account }) {
  const groups = usePaged<OperatorSecurityGroup>('/admin/v1/security_groups', { query: { account_id: account.id } });
  const locations = useLocations(account);
  const [editing, setEditing] = useState<number | null>(null);
  const locationOf = (id: number) => locations.items.find((l) => l.id === id);
  const sorted = useSort(groups.items, { code: (g) => g.code, title: (g) => g.title, location: (g) => locationOf(g.location_id)?.name ?? g.location_id, default: (g) => (g.is_default ? 'yes' : 'no') });
  return (
    <section aria-labelledby="groups-title">
      <h2 id="groups-title">Security groups</h2>
      <ListState list={groups} empty="No security groups yet." />
      {groups.items.length > 0 && (
        <Table label="Security groups">
          <thead>
            <tr>
              {sorted.header('code', 'Code')}
              {sorted.header('title', 'Title')}
              <th scope="col">When</th>
              {sorted.header('location', 'Location')}
              {sorted.header('default', 'Default')}
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((g) => (
              <tr key={g.id} data-testid={`group-row-${g.id}`}>
                <td>
                  <code>{g.code}</code>
                </td>
                <td>
                  {g.title}
                  {g.description && <div class="muted">{g.description}</div>}
                </td>
                <td class="when" data-testid={`group-windows-${g.id}`}>{windowsInWords(g.windows)}</td>
                <td>
                  <LocationName location={locationOf(g.location_id)} id={g.location_id} />
                </td>
                <td>{g.is_default ? 'yes' : 'no'}</td>
                <td>
                  <button type="button" class="secondary small" aria-expanded={editing === g.id} onClick={() => setEditing(editing === g.id ? null : g.id)} data-testid={`edit-group-${g.id}`}>
                    Change<span class="visually-hidden"> {g.title}</span>
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={groups} />
      {editing !== null && (
        <EditGroup
          key={editing}
          group={groups.items.find((g) => g.id === editing)}
          onDone={(saved) => {
            const id = editing;
            setEditing(null);
            if (saved) groups.reload();
            requestAnimationFrame(() => document.querySelector<HTMLElement>(`[data-testid="edit-group-${id}"]`)?.focus());
          }}
        />
      )}
      <CreateGroup account={account} locations={locations.items} onCreated={groups.reload} />
    </section>
  );
}

/** A location's name and the time zone its doors read windows in. */
function LocationName({ location, id }: { location: LocationChoice | undefined; id: number }) {
  if (!location) return <span>location {id}</span>;
  return (
    <span>
      {location.name}
      {location.effective_time_zone && <span class="muted"> ({location.effective_time_zone})</span>}
    </span>
  );
}

function EditGroup({ group, onDone }: { group: OperatorSecurityGroup | undefined; onDone: (saved: boolean) => void }) {
  const [title, setTitle] = useState(group?.title ?? '');
  const [description, setDescription] = useState(group?.description ?? '');
  const [isDefault, setIsDefault] = useState<string[]>(group?.is_default ? ['yes'] : []);
  const [windows, setWindows] = useState<TimeWindow[] | null>(group?.windows ?? null);
  const form = useSubmit();
  // The panel opens below the table: take the focus there, or a keyboard user would not know it opened.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  if (!group) return null;
  return (
    <section aria-labelledby="edit-group-title" class="panel">
      <h3 id="edit-group-title" tabIndex={-1} ref={heading}>
        Change {group.title} <code>{group.code}</code>
      </h3>
      <form
        data-testid="edit-group-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await api('PATCH', `/admin/v1/security_groups/${group.id}`, { body: { title, description, is_default: isDefault.length > 0, windows } });
            onDone(true);
          });
        }}
      >
        <TextField label="Title" name="title" required value={title} onValue={setTitle} error={form.error} data-testid="edit-group-title" />
        <TextField label="Description" name="description" value={description} onValue={setDescription} error={form.error} />
        <Checkboxes legend="Default" name="is_default" options={[{ value: 'yes', label: 'Ticked at first in the console’s key forms (the API gives a key only the groups sent)' }]} selected={isDefault} onChange={setIsDefault} error={form.error} />
        <WindowsEditor value={windows} onChange={setWindows} error={form.error} />
        <FormError error={form.error} fields={['title', 'description', 'is_default', 'windows']} />
        <div class="actions">
          <button type="submit" disabled={form.busy} data-testid="save-group">
            Save security group
          </button>
          <button type="button" class="secondary" onClick={() => onDone(false)}>
            Cancel
          </button>
        </div>
      </form>
    </section>
  );
}

function CreateGroup({ account, locations, onCreated }: { account: Account; locations: LocationChoice[]; onCreated: () => void }) {
  const [location, setLocation] = useState(String(account.root_location.id));
  const [code, setCode] = useState('');
  const [title, setTitle] = useState('');
  const [description, setDescription] = useState('');
  const [isDefault, setIsDefault] = useState<string[]>([]);
  const [windows, setWindows] = useState<TimeWindow[] | null>(null);
  // A new editor after each create: one kept brought the last group's windows back when "only in these" was chosen.
  const [created, setCreated] = useState(0);
  const form = useSubmit();
  return (
    <>
      <h3>Create a security group</h3>
      <form
        data-testid="create-security-group-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await api('POST', '/admin/v1/security_groups', {
              body: { location_id: Number(location), code, title, description, is_default: isDefault.length > 0, windows },
            });
            setCode('');
            setTitle('');
            setDescription('');
            // Every choice back to its start, the location too: a next group made where the last one was went unnoticed.
            setLocation(String(account.root_location.id));
            setIsDefault([]);
            setWindows(null);
            setCreated((n) => n + 1);
            onCreated();
          });
        }}
      >
        <LocationSelect locations={locations} value={location} onValue={setLocation} error={form.error} />
        <TextField label="Code" name="code" required value={code} onValue={setCode} error={form.error} hint="What key requests pass in security_groups" data-testid="group-code" />
        <TextField label="Title" name="title" required value={title} onValue={setTitle} error={form.error} data-testid="group-title" />
        <TextField label="Description" name="description" value={description} onValue={setDescription} error={form.error} />
        <Checkboxes legend="Default" name="is_default" options={[{ value: 'yes', label: 'Ticked at first in the console’s key forms (the API gives a key only the groups sent)' }]} selected={isDefault} onChange={setIsDefault} error={form.error} />
        <WindowsEditor key={created} value={windows} onChange={setWindows} error={form.error} />
        <FormError error={form.error} fields={['location_id', 'code', 'title', 'description', 'is_default', 'windows']} />
        <button type="submit" disabled={form.busy} data-testid="create-security-group">
          Create security group
        </button>
      </form>
    </>
  );
}
