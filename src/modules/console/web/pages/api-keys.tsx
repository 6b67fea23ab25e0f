// API keys of an account: create (the token is shown once), list, revoke.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Checkboxes, FormError, ListState, LoadMore, OnceSecret, Secret, Table, TextField, Time, isoFromLocal, useConfirm, usePaged, useSort, useSubmit } from '../components.tsx';
import { CONSOLE_KEY_NAME, SCOPES, type Account, type ApiKey, type ApiKeyCreated, type Lock } from '../types.ts';
import { LocationSelect, useLocations } from './account.tsx';

export function ApiKeysSection({ account }: { account: Account }) {
  const keys = usePaged<ApiKey>('/admin/v1/api_keys', { query: { account_id: account.id } });
  const locks = usePaged<Lock>('/v1/locks', { account: account.id, limit: 200 });
  const locations = useLocations(account);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const [location, setLocation] = useState(String(account.root_location.id));
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [allowlist, setAllowlist] = useState<string[]>([]);
  const [expires, setExpires] = useState('');
  const form = useSubmit();
  const revoke = useSubmit();
  const confirm = useConfirm();
  // Revoked keys stay in the list for the record (the console's own, one per session, pile up there): hidden
  // unless asked for.
  const [showRevoked, setShowRevoked] = useState(false);
  const shown = showRevoked ? keys.items : keys.items.filter((k) => !k.revoked_at);
  const hidden = keys.items.length - shown.length;
  const sorted = useSort(shown, { name: (k) => k.name, prefix: (k) => k.prefix, location: (k) => k.location_id, expires: (k) => Date.parse(k.expires_at) });
  return (
    <section aria-labelledby="api-keys-title">
      <h2 id="api-keys-title" tabIndex={-1}>
        API keys
      </h2>
      {confirm.dialog}
      {created && (
        <OnceSecret title={`Token of ${created.name}`} onDismiss={() => setCreated(null)} returnFocus='[data-testid="create-api-key"]'>
          <Secret label="Token" value={created.token} />
        </OnceSecret>
      )}
      <FormError error={revoke.error} />
      <ListState list={keys} empty="No API keys yet." />
      <label class="check" for="show-revoked-api-keys">
        <input type="checkbox" id="show-revoked-api-keys" checked={showRevoked} onChange={(e) => setShowRevoked((e.currentTarget as HTMLInputElement).checked)} data-testid="show-revoked-api-keys" />
        Show revoked keys
      </label>
      {hidden > 0 && (
        <p class="muted" data-testid="revoked-hidden">
          {hidden === 1 ? '1 revoked key hidden.' : `${hidden} revoked keys hidden.`}
        </p>
      )}
      {shown.length > 0 && (
        <Table label="API keys">
          <thead>
            <tr>
              {sorted.header('name', 'Name')}
              {sorted.header('prefix', 'Prefix')}
              {sorted.header('location', 'Location')}
              <th scope="col">Scopes</th>
              <th scope="col">Lock allowlist</th>
              {sorted.header('expires', 'Expires')}
              <th scope="col">Revoke</th>
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((k) => (
              <tr key={k.id} data-testid={`api-key-row-${k.id}`}>
                <td>
                  {k.name}
                  {k.name === CONSOLE_KEY_NAME && <div class="muted">made for a console session; revoked at its sign-out</div>}
                </td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{locations.items.find((l) => l.id === k.location_id)?.name ?? k.location_id}</td>
                <td>{k.scopes.join(', ')}</td>
                <td>{k.lock_allowlist.join(', ') || <span class="muted">none</span>}</td>
                <td>
                  <Time iso={k.expires_at} />
                </td>
                <td>
                  {k.revoked_at ? (
                    <span class="muted">revoked</span>
                  ) : (
                    <button
                      type="button"
                      class="danger small"
                      disabled={revoke.busy}
                      data-testid={`revoke-api-key-${k.id}`}
                      onClick={() =>
                        void confirm
                          .confirm(
                            `Revoke the API key ${k.name}?`,
                            <p>
                              The token starting <code>{k.prefix}</code> stops working at once for everything that uses it; the key stays listed as revoked.
                            </p>,
                            `Revoke ${k.name}`,
                          )
                          .then((ok) => {
                            if (!ok) return;
                            void revoke.run(async () => {
                              await api('DELETE', `/admin/v1/api_keys/${k.id}`);
                              // The button goes with the answer: keep the focus in the section.
                              document.getElementById('api-keys-title')?.focus();
                              keys.reload();
                            });
                          })
                      }
                    >
                      Revoke<span class="visually-hidden"> {k.name}</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={keys} />
      <h3>Create an API key</h3>
      <form
        data-testid="create-api-key-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            const body: Record<string, unknown> = { location_id: Number(location), name, scopes, lock_allowlist: allowlist.map(Number) };
            const expiresAt = isoFromLocal(expires);
            if (expiresAt) body.expires_at = expiresAt;
            setCreated(await api<ApiKeyCreated>('POST', '/admin/v1/api_keys', { body }));
            setName('');
            setScopes([]);
            setAllowlist([]);
            setExpires('');
            keys.reload();
          });
        }}
      >
        <LocationSelect locations={locations.items} value={location} onValue={setLocation} error={form.error} />
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} data-testid="api-key-name" />
        <Checkboxes legend="Scopes" name="scopes" options={SCOPES.map((s) => ({ value: s, label: s }))} selected={scopes} onChange={setScopes} error={form.error} />
        <Checkboxes
          legend="Locks it may open (locks:control)"
          name="lock_allowlist"
          options={locks.items.map((l) => ({ value: String(l.id), label: `${l.name} (id ${l.id})` }))}
          selected={allowlist}
          onChange={setAllowlist}
          error={form.error}
          empty="No locks in this account yet."
        />
        <TextField label="Expires" name="expires_at" type="datetime-local" value={expires} onValue={setExpires} error={form.error} hint="Empty: one year from now; at most two years" />
        <FormError error={form.error} fields={['location_id', 'name', 'scopes', 'lock_allowlist', 'expires_at']} />
        <button type="submit" disabled={form.busy} data-testid="create-api-key">
          Create API key
        </button>
      </form>
    </section>
  );
}
