// One account: its sections as tabs (links, so each has an address), and the small sections themselves.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Checkboxes, Field, FormError, ListState, LoadMore, Table, TextField, usePaged, useResource, useSubmit, useTitle, type Paged } from '../components.tsx';
import { Link } from '../router.tsx';
import type { Account, Location, LocationChoice, User } from '../types.ts';
import { ApiKeysSection } from './api-keys.tsx';
import { ControllersSection } from './controllers.tsx';
import { EventsSection } from './events.tsx';
import { GatewaysSection } from './gateways.tsx';
import { RenameLocationForm, TimeZoneForm } from './location-forms.tsx';
import { LocksSection } from './locks.tsx';
import { PeopleSection } from './people.tsx';
import { SecurityGroupsSection } from './security-groups.tsx';
import { WebhooksSection } from './webhooks.tsx';

const TABS: { id: string; label: string }[] = [
  { id: 'locations', label: 'Locations' },
  { id: 'locks', label: 'Locks' },
  { id: 'security-groups', label: 'Security groups' },
  { id: 'gateways', label: 'Gateways' },
  { id: 'controllers', label: 'Controllers' },
  { id: 'api-keys', label: 'API keys' },
  { id: 'users', label: 'Users' },
  { id: 'people', label: 'People' },
  { id: 'events', label: 'Access log' },
  { id: 'webhooks', label: 'Webhooks' },
  { id: 'settings', label: 'Settings' },
];

export function AccountPage({ id, tab, item }: { id: number; tab: string; item?: string }) {
  const account = useResource<Account>(`/admin/v1/accounts/${id}`);
  const known = TABS.find((t) => t.id === tab);
  useTitle(account.data ? `${known?.label ?? 'Account'} – ${account.data.name}` : account.error ? `Account ${id}` : null);
  if (account.error) {
    return (
      <>
        <h1>Account {id}</h1>
        <FormError error={account.error} />
        <Link href="/console">Back to the overview</Link>
      </>
    );
  }
  if (!account.data) return <p class="muted">Loading…</p>;
  const a = account.data;
  return (
    <>
      <p class="crumbs">
        <Link href="/console">Overview</Link> / {a.name} <span class="muted">(account {a.id})</span>
        {known && !item ? ` / ${known.label}` : ''}
      </p>
      <h1>{a.name}</h1>
      <nav aria-label="Account sections" class="tabs">
        <ul>
          {TABS.map((t) => (
            <li key={t.id}>
              <Link href={`/console/accounts/${a.id}/${t.id}`} current={t.id === tab && !item} data-testid={`tab-${t.id}`}>
                {t.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      {!known && <p>No such section.</p>}
      {tab === 'locations' && <LocationsSection account={a} />}
      {tab === 'locks' && <LocksSection account={a} />}
      {tab === 'security-groups' && <SecurityGroupsSection account={a} />}
      {tab === 'gateways' && <GatewaysSection account={a} />}
      {tab === 'controllers' && <ControllersSection account={a} controllerId={item} />}
      {tab === 'api-keys' && <ApiKeysSection account={a} />}
      {tab === 'users' && <UsersSection account={a} />}
      {tab === 'people' && <PeopleSection account={a} personId={item} />}
      {tab === 'events' && <EventsSection account={a} />}
      {tab === 'webhooks' && <WebhooksSection account={a} webhookId={item} />}
      {tab === 'settings' && <SettingsSection account={a} onSaved={account.reload} />}
    </>
  );
}

/**
 * The account's locations, first page of 200 (enough for a select; the tree section pages further). Until the
 * first page is in, the root location (known from the account) stands in: the forms default to it, and an
 * empty required select would block their submit without a word.
 */
export function useLocations(account: Account): Paged<LocationChoice> {
  const list = usePaged<Location>('/admin/v1/locations', { query: { account_id: account.id }, limit: 200 });
  if (list.items.length > 0) return list;
  const root: LocationChoice = { id: account.root_location.id, name: account.root_location.name, parent_id: null, account_id: account.id };
  return { ...list, items: [root] };
}

export function LocationSelect(props: { locations: LocationChoice[]; value: string; onValue: (v: string) => void; error?: ReturnType<typeof useSubmit>['error']; name?: string; label?: string; testid?: string }) {
  const { locations, value, onValue, error = null, name = 'location_id', label = 'Location', testid } = props;
  return (
    <Field label={label} name={name} error={error}>
      {(a) => (
        <select {...a} value={value} onChange={(e) => onValue((e.currentTarget as HTMLSelectElement).value)} required data-testid={testid}>
          {locations.map((l) => (
            <option key={l.id} value={String(l.id)}>
              {l.name} ({l.parent_id === null ? 'root' : `department, id ${l.id}`})
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

function LocationsSection({ account }: { account: Account }) {
  const locations = useLocations(account);
  const byParent = new Map<number | null, LocationChoice[]>();
  for (const l of locations.items) {
    const siblings = byParent.get(l.parent_id) ?? [];
    siblings.push(l);
    byParent.set(l.parent_id, siblings);
  }
  const ids = new Set(locations.items.map((l) => l.id));
  // Roots of the tree as loaded: the root location, and any department whose parent is on a later page.
  const roots = locations.items.filter((l) => l.parent_id === null || !ids.has(l.parent_id));
  const branch = (l: LocationChoice) => (
    <li key={l.id} data-testid={`location-${l.id}`}>
      <span>
        {l.name} <span class="muted">(id {l.id})</span>
      </span>{' '}
      <ZoneOf location={l} />
      {(byParent.get(l.id) ?? []).length > 0 && <ul>{(byParent.get(l.id) ?? []).map(branch)}</ul>}
    </li>
  );
  const [parent, setParent] = useState(String(account.root_location.id));
  const [name, setName] = useState('');
  const form = useSubmit();
  return (
    <section aria-labelledby="locations-title">
      <h2 id="locations-title">Locations</h2>
      <ListState list={locations} empty="No locations." />
      <ul class="tree" data-testid="location-tree">
        {roots.map(branch)}
      </ul>
      <LoadMore list={locations} />
      <h3>Add a department</h3>
      <form
        data-testid="add-department-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await api('POST', '/admin/v1/locations', { body: { parent_id: Number(parent), name } });
            setName('');
            locations.reload();
          });
        }}
      >
        <LocationSelect locations={locations.items} value={parent} onValue={setParent} error={form.error} name="parent_id" label="Inside" testid="department-parent" />
        <TextField label="Department name" name="name" required value={name} onValue={setName} error={form.error} data-testid="department-name" />
        <FormError error={form.error} fields={['parent_id', 'name']} />
        <button type="submit" disabled={form.busy} data-testid="add-department">
          Add department
        </button>
      </form>
      <RenameLocationForm account={account} locations={locations} />
      <TimeZoneForm account={account} locations={locations} />
    </section>
  );
}

/** The time zone a location's doors read windows in, and whether it is its own. */
function ZoneOf({ location }: { location: LocationChoice }) {
  if (!location.effective_time_zone) return null;
  const how = location.time_zone ? 'set here' : location.parent_id === null ? 'default' : 'from above';
  return (
    <span class="zone" data-testid={`location-zone-${location.id}`}>
      · time zone <strong>{location.effective_time_zone}</strong> <span class="muted">({how})</span>
    </span>
  );
}

function UsersSection({ account }: { account: Account }) {
  const users = usePaged<User>('/admin/v1/users', { query: { account_id: account.id } });
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const form = useSubmit();
  return (
    <section aria-labelledby="users-title">
      <h2 id="users-title">Dashboard users</h2>
      <ListState list={users} empty="No dashboard users yet." />
      {users.items.length > 0 && (
        <Table label="Dashboard users">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">E-mail</th>
              <th scope="col">ID</th>
            </tr>
          </thead>
          <tbody>
            {users.items.map((u) => (
              <tr key={u.id}>
                <td>{u.name}</td>
                <td>{u.email}</td>
                <td>{u.id}</td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={users} />
      <h3>Add a dashboard user</h3>
      <form
        data-testid="create-user-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await api('POST', '/admin/v1/users', { body: { account_id: account.id, name, email } });
            setName('');
            setEmail('');
            users.reload();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} data-testid="user-name" />
        <TextField label="E-mail" name="email" type="email" required value={email} onValue={setEmail} error={form.error} data-testid="user-email" />
        <FormError error={form.error} fields={['name', 'email']} />
        <button type="submit" disabled={form.busy} data-testid="create-user">
          Add user
        </button>
      </form>
    </section>
  );
}

function SettingsSection({ account, onSaved }: { account: Account; onSaved: () => void }) {
  const [name, setName] = useState(account.name);
  const [sms, setSms] = useState(account.sms_enabled ? ['on'] : []);
  const [allowance, setAllowance] = useState(account.phone_key_allowance === null ? '' : String(account.phone_key_allowance));
  const [lockingSystem, setLockingSystem] = useState(account.locking_system ?? '');
  // Days in the form, seconds in the API; sent only when changed, so a limit set in seconds elsewhere is kept.
  const offlineShown = daysOf(account.offline_access_seconds);
  const [offlineDays, setOfflineDays] = useState(offlineShown);
  const [saved, setSaved] = useState(false);
  const form = useSubmit();
  return (
    <section aria-labelledby="settings-title">
      <h2 id="settings-title">Settings</h2>
      <form
        data-testid="account-settings-form"
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(false);
          void form.run(async () => {
            await api('PATCH', `/admin/v1/accounts/${account.id}`, {
              body: {
                name,
                sms_enabled: sms.length > 0,
                phone_key_allowance: allowance.trim() === '' ? null : Number(allowance),
                locking_system: lockingSystem === '' ? null : lockingSystem,
                ...(offlineDays.trim() === offlineShown ? {} : { offline_access_seconds: secondsOf(offlineDays) }),
              },
            });
            setSaved(true);
            onSaved();
          });
        }}
      >
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} />
        <Checkboxes legend="SMS" name="sms_enabled" options={[{ value: 'on', label: 'Send setup links by SMS' }]} selected={sms} onChange={setSms} error={form.error} />
        <TextField
          label="Phone-key allowance"
          name="phone_key_allowance"
          type="number"
          min={0}
          value={allowance}
          onValue={setAllowance}
          error={form.error}
          hint="Empty means unlimited"
          data-testid="phone-key-allowance"
        />
        <Field label="Locking system" name="locking_system" error={form.error}>
          {(a) => (
            <select {...a} value={lockingSystem} onChange={(e) => setLockingSystem((e.currentTarget as HTMLSelectElement).value)} data-testid="locking-system">
              <option value="">None (no sync)</option>
              <option value="sandbox">Sandbox simulator</option>
              <option value="uhppote">UHPPOTE controllers</option>
            </select>
          )}
        </Field>
        <TextField
          label="Offline access limit (days)"
          name="offline_access_seconds"
          type="number"
          min={0}
          max={90}
          step="any"
          inputMode="decimal"
          required
          value={offlineDays}
          onValue={setOfflineDays}
          error={form.error}
          hint="How long a gateway may keep opening doors from its copy of the access list without hearing from the service; past it, it grants nothing. Up to 90 days (default 7); 0.5 is 12 hours, at least one minute."
          data-testid="offline-access-days"
        />
        <FormError error={form.error} fields={['name', 'sms_enabled', 'phone_key_allowance', 'locking_system', 'offline_access_seconds']} />
        <button type="submit" disabled={form.busy} data-testid="save-settings">
          Save settings
        </button>
        {saved && (
          <p role="status" class="ok-text">
            Saved.
          </p>
        )}
      </form>
    </section>
  );
}

const DAY_SECONDS = 86_400;

/** Seconds as days for the form: whole days as such, else up to four decimals. */
export function daysOf(seconds: number): string {
  return String(Math.round((seconds / DAY_SECONDS) * 10_000) / 10_000);
}

/** Days typed in the form as whole seconds (the service checks the range); NaN when not a number. */
export function secondsOf(days: string): number {
  const value = Number(days.trim().replace(',', '.'));
  return days.trim() === '' ? Number.NaN : Math.round(value * DAY_SECONDS);
}
