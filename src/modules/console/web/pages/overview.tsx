import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { FormError, ListState, LoadMore, Table, TextField, useResource, usePaged, useSubmit, useTitle } from '../components.tsx';
import { Link, navigate } from '../router.tsx';
import type { Account, Overview } from '../types.ts';

export function OverviewPage() {
  const overview = useResource<Overview>('/admin/v1/overview', { topics: ['presence', 'webhooks'] });
  const [q, setQ] = useState('');
  const [search, setSearch] = useState('');
  const accounts = usePaged<Account>('/admin/v1/accounts', { query: { q: search } });
  useTitle('Overview');
  return (
    <>
      <h1>Overview</h1>
      <section aria-labelledby="counts-title">
        <h2 id="counts-title">Service</h2>
        {overview.error && <FormError error={overview.error} />}
        {overview.data && (
          <dl class="counts" data-testid="overview-counts">
            <div>
              <dt>Accounts</dt>
              <dd>
                <a href="#accounts">
                  {overview.data.accounts}
                  <span class="visually-hidden"> accounts: go to the list</span>
                </a>
              </dd>
            </div>
            <div>
              <dt>Gateways online</dt>
              <dd>{overview.data.gateways.online}</dd>
            </div>
            <div>
              <dt>Gateways offline</dt>
              <dd class={overview.data.gateways.offline ? 'warn' : ''}>
                <OfflineLink count={overview.data.gateways.offline} what="gateways offline" testid="overview-gateways-offline" />
              </dd>
            </div>
            <div>
              <dt>Locks offline</dt>
              <dd class={overview.data.locks_offline ? 'warn' : ''}>
                <OfflineLink count={overview.data.locks_offline} what="locks offline: the gateways they are on" testid="overview-locks-offline" />
              </dd>
            </div>
            <div>
              <dt>Webhooks failing</dt>
              <dd class={overview.data.webhooks.failing ? 'warn' : ''}>{overview.data.webhooks.failing}</dd>
            </div>
            <div>
              <dt>Webhooks paused</dt>
              <dd>{overview.data.webhooks.paused}</dd>
            </div>
            <div>
              <dt>Deliveries pending</dt>
              <dd>{overview.data.deliveries_pending}</dd>
            </div>
          </dl>
        )}
        <p class="muted">The counts cover every account; open an account for its gateways, locks and webhooks.</p>
      </section>

      <section aria-labelledby="accounts-title" id="accounts">
        <h2 id="accounts-title">Accounts</h2>
        <form
          role="search"
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(q.trim());
          }}
        >
          <TextField label="Search accounts by name" name="q" type="search" value={q} onValue={setQ} data-testid="account-search" />
          <button type="submit" class="secondary">
            Search
          </button>
        </form>
        <ListState list={accounts} empty={search ? 'No account has this in its name.' : 'No accounts yet.'} />
        {accounts.items.length > 0 && (
          <Table label="Accounts">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">ID</th>
                <th scope="col">SMS</th>
                <th scope="col">Phone-key allowance</th>
                <th scope="col">Locking system</th>
              </tr>
            </thead>
            <tbody>
              {accounts.items.map((a) => (
                <tr key={a.id}>
                  <td>
                    <Link href={`/console/accounts/${a.id}`} data-testid={`account-link-${a.id}`}>
                      {a.name}
                    </Link>
                  </td>
                  <td>{a.id}</td>
                  <td>{a.sms_enabled ? 'on' : 'off'}</td>
                  <td>{a.phone_key_allowance ?? 'unlimited'}</td>
                  <td>{a.locking_system ?? 'none'}</td>
                </tr>
              ))}
            </tbody>
          </Table>
        )}
        <LoadMore list={accounts} />
      </section>
      <CreateAccount />
    </>
  );
}

function CreateAccount() {
  const [name, setName] = useState('');
  const form = useSubmit();
  return (
    <section aria-labelledby="create-account-title">
      <h2 id="create-account-title">Create an account</h2>
      <form
        data-testid="create-account-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            const account = await api<Account>('POST', '/admin/v1/accounts', { body: { name } });
            navigate(`/console/accounts/${account.id}`);
          });
        }}
      >
        <TextField label="Account name" name="name" required value={name} onValue={setName} error={form.error} data-testid="account-name" />
        <FormError error={form.error} fields={['name']} />
        <button type="submit" disabled={form.busy} data-testid="create-account">
          Create account
        </button>
      </form>
    </section>
  );
}

/** A count of what is offline; when there is any, a link to the offline gateways (a lock is offline with its gateway). */
function OfflineLink({ count, what, testid }: { count: number; what: string; testid: string }) {
  if (count === 0) return <>0</>;
  return (
    <Link href="/console/gateways/offline" data-testid={testid}>
      {count}
      <span class="visually-hidden"> {what}: see which</span>
    </Link>
  );
}
