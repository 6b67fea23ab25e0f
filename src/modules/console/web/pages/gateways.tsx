// Gateways of an account: presence live; the MQTT password is shown once, at creation and rotation.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { FormError, ListState, LoadMore, OnceSecret, Online, Secret, Table, TextField, Time, useConfirm, usePaged, useRowFromHash, useSort, useSubmit } from '../components.tsx';
import type { Account, Gateway, GatewayWithPassword } from '../types.ts';
import { LocationSelect, useLocations } from './account.tsx';

export function GatewaysSection({ account }: { account: Account }) {
  const gateways = usePaged<Gateway>('/admin/v1/gateways', { query: { account_id: account.id }, topics: ['presence'] });
  const locations = useLocations(account);
  const [shown, setShown] = useState<GatewayWithPassword | null>(null);
  // Where the focus goes once the credentials are dismissed: the button that asked for them.
  const [madeBy, setMadeBy] = useState('[data-testid="create-gateway"]');
  const [location, setLocation] = useState(String(account.root_location.id));
  const [name, setName] = useState('');
  const form = useSubmit();
  const rotate = useSubmit();
  const confirm = useConfirm();
  // A link to one gateway (`…/gateways#gateway-3`, from a lock's row) scrolls to its row once the rows are in.
  useRowFromHash('gateway', gateways.items);
  const sorted = useSort(gateways.items, { name: (g) => g.name, id: (g) => g.id, state: (g) => (g.online ? 'online' : 'offline'), seen: (g) => (g.last_seen_at ? Date.parse(g.last_seen_at) : null) });
  return (
    <section aria-labelledby="gateways-title">
      <h2 id="gateways-title" tabIndex={-1}>
        Gateways
      </h2>
      {confirm.dialog}
      {shown && (
        <OnceSecret title={`MQTT credentials of ${shown.name}`} onDismiss={() => setShown(null)} returnFocus={madeBy}>
          <Secret label="URL" value={shown.mqtt.url} />
          <Secret label="Client id" value={shown.mqtt.client_id} />
          <Secret label="Username" value={shown.mqtt.username} />
          <Secret label="Password" value={shown.mqtt.password} />
          <Secret label="Topic prefix" value={shown.mqtt.topic_prefix} />
        </OnceSecret>
      )}
      <FormError error={rotate.error} />
      <ListState list={gateways} empty="No gateways yet." />
      {gateways.items.length > 0 && (
        <Table label="Gateways">
          <thead>
            <tr>
              {sorted.header('name', 'Name')}
              {sorted.header('id', 'ID')}
              {sorted.header('state', 'State')}
              {sorted.header('seen', 'Last seen')}
              <th scope="col">Username</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((g) => (
              <tr key={g.id} id={`gateway-${g.id}`} data-testid={`gateway-row-${g.id}`}>
                <td>{g.name}</td>
                <td>{g.id}</td>
                <td>
                  <Online online={g.online ?? false} />
                  <RefusedLogin gateway={g} />
                </td>
                <td>
                  <Time iso={g.last_seen_at} />
                </td>
                <td>
                  <code>{g.mqtt.username}</code>
                </td>
                <td>
                  <div class="actions">
                    <button
                      type="button"
                      class="secondary small"
                      disabled={rotate.busy}
                      data-testid={`rotate-gateway-${g.id}`}
                      onClick={() => {
                        if (!window.confirm(`Rotate the MQTT password of ${g.name}? The gateway is cut off until it has the new one.`)) return;
                        void rotate.run(async () => {
                          setMadeBy(`[data-testid="rotate-gateway-${g.id}"]`);
                          setShown(await api<GatewayWithPassword>('POST', `/admin/v1/gateways/${g.id}/rotate_password`));
                          gateways.reload();
                        });
                      }}
                    >
                      Rotate password<span class="visually-hidden"> of {g.name}</span>
                    </button>
                    <button
                      type="button"
                      class="danger small"
                      disabled={rotate.busy}
                      data-testid={`delete-gateway-${g.id}`}
                      onClick={() =>
                        void confirm
                          .confirm(
                            `Delete the gateway ${g.name}?`,
                            <p>
                              The gateway {g.name} (id {g.id}) and its MQTT account <code>{g.mqtt.username}</code> go; it cannot connect any more. The service refuses while
                              locks, the access log or lock commands refer to it.
                            </p>,
                            `Delete ${g.name}`,
                          )
                          .then((ok) => {
                            if (!ok) return;
                            void rotate.run(async () => {
                              await api('DELETE', `/admin/v1/gateways/${g.id}`);
                              document.getElementById('gateways-title')?.focus();
                              gateways.reload();
                            });
                          })
                      }
                    >
                      Delete<span class="visually-hidden"> {g.name}</span>
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={gateways} />
      <h3>Add a gateway</h3>
      <form
        data-testid="create-gateway-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            setMadeBy('[data-testid="create-gateway"]');
            setShown(await api<GatewayWithPassword>('POST', '/admin/v1/gateways', { body: { location_id: Number(location), name } }));
            setName('');
            gateways.reload();
          });
        }}
      >
        <LocationSelect locations={locations.items} value={location} onValue={setLocation} error={form.error} />
        <TextField label="Name" name="name" required value={name} onValue={setName} error={form.error} data-testid="gateway-name" />
        <FormError error={form.error} fields={['location_id', 'name']} />
        <button type="submit" disabled={form.busy} data-testid="create-gateway">
          Add gateway
        </button>
      </form>
    </section>
  );
}

/**
 * The broker's last refusal of a login as the gateway. Since it was last heard from (or never heard): the likely
 * reason it reads offline, a device still dialling with an old password after a rotation.
 */
export function RefusedLogin({ gateway }: { gateway: Gateway }) {
  const refused = gateway.last_refused_at;
  if (!refused) return null;
  const sinceSeen = !gateway.online && (!gateway.last_seen_at || Date.parse(refused) > Date.parse(gateway.last_seen_at));
  return sinceSeen ? (
    <div class="warn-text" data-testid={`gateway-refused-${gateway.id}`}>
      A login as this gateway was refused at <Time iso={refused} />: a wrong password (an old one, after a rotation?) or a client id that is not its user name. Anyone who knows its user name can cause this too.
    </div>
  ) : (
    <div class="muted" data-testid={`gateway-refused-${gateway.id}`}>
      Last refused login: <Time iso={refused} />
    </div>
  );
}
