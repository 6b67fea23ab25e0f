// Gateways offline across every account (the overview's "Gateways offline" and "Locks offline" lead here): which
// they are, whose, since when, and whether a login as one was refused (an old password after a rotation).
import { useEffect, useState } from 'preact/hooks';
import { get } from '../api.ts';
import { ListState, LoadMore, Table, Time, usePaged, useTitle } from '../components.tsx';
import { Link } from '../router.tsx';
import type { Account, Gateway } from '../types.ts';
import { RefusedLogin } from './gateways.tsx';

export function OfflineGatewaysPage() {
  const gateways = usePaged<Gateway>('/admin/v1/gateways', { query: { online: false }, topics: ['presence'], limit: 100 });
  const accountNames = useAccountNames(gateways.items.map((g) => g.account_id));
  useTitle('Gateways offline');
  return (
    <>
      <p class="crumbs">
        <Link href="/console">Overview</Link> / Gateways offline
      </p>
      <h1>Gateways offline</h1>
      <p class="muted">
        Every account's MQTT gateways that read offline now; their remote locks cannot be opened and they decide from their copy of the access list. The list follows presence live.
        The overview's counts also take in UHPPOTE controllers offline, which each account's Controllers page lists.
      </p>
      <ListState list={gateways} empty="No gateway is offline." />
      {gateways.items.length > 0 && (
        <Table label="Gateways offline">
          <thead>
            <tr>
              <th scope="col">Gateway</th>
              <th scope="col">Account</th>
              <th scope="col">Last seen</th>
              <th scope="col">Why it may be</th>
            </tr>
          </thead>
          <tbody>
            {gateways.items.map((g) => (
              <tr key={g.id} data-testid={`offline-gateway-${g.id}`}>
                <td>
                  <Link href={`/console/accounts/${g.account_id}/gateways#gateway-${g.id}`}>{g.name}</Link> <span class="muted">(id {g.id})</span>
                </td>
                <td>
                  <Link href={`/console/accounts/${g.account_id}`}>{accountNames.get(g.account_id) ?? `account ${g.account_id}`}</Link>
                </td>
                <td>{g.last_seen_at ? <Time iso={g.last_seen_at} /> : <span class="muted">never connected</span>}</td>
                <td>
                  <RefusedLogin gateway={g} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={gateways} />
    </>
  );
}

/** The names of the accounts shown, each read once. */
function useAccountNames(ids: number[]): Map<number, string> {
  const [names, setNames] = useState(new Map<number, string>());
  const wanted = [...new Set(ids)].filter((id) => !names.has(id)).sort((a, b) => a - b);
  const key = wanted.join(',');
  useEffect(() => {
    if (wanted.length === 0) return;
    let current = true;
    void Promise.all(wanted.map((id) => get<Account>(`/admin/v1/accounts/${id}`).then((a) => [id, a.name] as const, () => [id, `account ${id}`] as const))).then((read) => {
      if (current) setNames((old) => new Map([...old, ...read]));
    });
    return () => {
      current = false;
    };
  }, [key]);
  return names;
}
