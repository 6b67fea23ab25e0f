// The forms that change one location of an account (PATCH /admin/v1/locations/{id}): its name, its time zone. Each
// picks the location, starts its field from what the location holds, and says what was saved.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { FormError, TextField, useSubmit, type Paged } from '../components.tsx';
import type { Account, Location, LocationChoice } from '../types.ts';
import { LocationSelect } from './account.tsx';

interface LocationFieldFormProps {
  account: Account;
  locations: Paged<LocationChoice>;
  title: string;
  intro?: ComponentChildren;
  testids: { form: string; location: string; save: string };
  action: string;
  /** What the field shows for the location picked, until something is typed. */
  held: (location: LocationChoice | undefined) => string;
  /** The field, given its value and where a typed value goes. */
  field: (value: string, onValue: (value: string) => void, location: LocationChoice | undefined, error: ReturnType<typeof useSubmit>['error']) => ComponentChildren;
  /** Saves the value; what to say once saved. */
  save: (locationId: string, value: string, location: LocationChoice | undefined) => Promise<string>;
  fields: string[];
}

function LocationFieldForm(props: LocationFieldFormProps) {
  const { account, locations, testids } = props;
  const [locationId, setLocationId] = useState(String(account.root_location.id));
  // null: nothing typed since the location was picked, so the field shows what the location holds.
  const [typed, setTyped] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const form = useSubmit();
  const location = locations.items.find((l) => String(l.id) === locationId);
  const value = typed ?? props.held(location);
  const titleId = `${testids.form}-title`;
  return (
    <>
      <h3 id={titleId}>{props.title}</h3>
      {props.intro}
      <form
        data-testid={testids.form}
        aria-labelledby={titleId}
        onSubmit={(e) => {
          e.preventDefault();
          setSaved(null);
          void form.run(async () => {
            const said = await props.save(locationId, value, location);
            setTyped(null);
            setSaved(said);
            locations.reload();
          });
        }}
      >
        <LocationSelect
          locations={locations.items}
          value={locationId}
          onValue={(v) => {
            setLocationId(v);
            setTyped(null);
            setSaved(null);
            form.clear();
          }}
          error={form.error}
          name="location"
          testid={testids.location}
        />
        {props.field(value, setTyped, location, form.error)}
        <FormError error={form.error} fields={props.fields} />
        <button type="submit" disabled={form.busy} data-testid={testids.save}>
          {props.action}
        </button>
        {saved && (
          <p role="status" class="ok-text">
            {saved}
          </p>
        )}
      </form>
    </>
  );
}

const patchLocation = (id: string, body: Record<string, unknown>) => api<Location>('PATCH', `/admin/v1/locations/${id}`, { body });

/** A new name for the root location or a department; people, locks and keys stay where they are. */
export function RenameLocationForm({ account, locations }: { account: Account; locations: Paged<LocationChoice> }) {
  return (
    <LocationFieldForm
      account={account}
      locations={locations}
      title="Rename a location"
      testids={{ form: 'rename-location-form', location: 'rename-location', save: 'save-location-name' }}
      action="Rename"
      held={(location) => location?.name ?? ''}
      field={(value, onValue, _location, error) => (
        <TextField label="New name" name="name" required value={value} onValue={onValue} error={error} data-testid="rename-location-name" />
      )}
      save={async (id, value, location) => `Saved: ${location?.name ?? 'the location'} is now ${(await patchLocation(id, { name: value.trim() })).name}.`}
      fields={['name']}
    />
  );
}

let zoneNames: string[] | undefined;
/** The IANA names this browser knows (UTC among them), for the time-zone field's suggestions. */
function timeZoneNames(): string[] {
  if (!zoneNames) {
    let names: string[] = [];
    try {
      names = Intl.supportedValuesOf('timeZone');
    } catch {
      // an older browser: the field still takes any name, the service checks it
    }
    zoneNames = names.includes('UTC') ? names : ['UTC', ...names];
  }
  return zoneNames;
}

/** The time zone a location's doors read windows in: its own, or (empty) the one above it. */
export function TimeZoneForm({ account, locations }: { account: Account; locations: Paged<LocationChoice> }) {
  return (
    <LocationFieldForm
      account={account}
      locations={locations}
      title="Time zone of a location"
      intro={<p class="muted">Security-group windows are read in the time zone of each door's location: its own, else the nearest one above it, else UTC.</p>}
      testids={{ form: 'time-zone-form', location: 'zone-location', save: 'save-time-zone' }}
      action="Set time zone"
      held={(location) => location?.time_zone ?? ''}
      field={(value, onValue, location, error) => (
        <>
          <TextField
            label="Time zone"
            name="time_zone"
            value={value}
            onValue={onValue}
            error={error}
            list="time-zone-names"
            autoComplete="off"
            spellcheck={false}
            placeholder="Europe/Berlin"
            hint={`An IANA name such as Europe/Berlin. Empty: ${location?.parent_id === null ? 'UTC (this is the root)' : 'the one above it'}.${location?.effective_time_zone ? ` Now: ${location.effective_time_zone}.` : ''}`}
            data-testid="zone-input"
          />
          <datalist id="time-zone-names">
            {timeZoneNames().map((name) => (
              <option key={name} value={name} />
            ))}
          </datalist>
        </>
      )}
      save={async (id, value) => {
        const answer = await patchLocation(id, { time_zone: value.trim() === '' ? null : value.trim() });
        return `Saved: ${answer.name} reads windows in ${answer.effective_time_zone ?? 'its zone'}.`;
      }}
      fields={['time_zone']}
    />
  );
}
