// A key's state on the person page, and while it reads "sent", what it waits for: the gateways that have not yet
// applied its last change (each named, linked to its row and said offline when it is), or the account's locking
// system. Without this an operator saw "sent" and nothing to act on.
import { Link } from '../router.tsx';
import type { Account, Gateway, Key, OperatorKey } from '../types.ts';

export function KeyState({ account, keyItem, detail, gateways }: { account: Account; keyItem: Key; detail: OperatorKey | undefined; gateways: Gateway[] }) {
  const words = keyItem.state.replace('_', ' ');
  if (keyItem.state !== 'sent' || !detail) return <>{words}</>;
  const waiting = detail.waiting_for_gateways;
  return (
    <>
      {words}
      <div class="muted" data-testid={`key-waiting-${keyItem.id}`}>
        {waiting.length > 0 ? (
          <>
            Waiting for {waiting.length === 1 ? 'the gateway' : 'the gateways'}{' '}
            {waiting.map((id, index) => {
              const gateway = gateways.find((g) => g.id === id);
              return (
                <span key={id}>
                  {index > 0 && ', '}
                  <Link href={`/console/accounts/${account.id}/gateways#gateway-${id}`}>{gateway?.name ?? `gateway ${id}`}</Link>
                  {gateway && !gateway.online && ' (offline: it gets the change when it is back)'}
                </span>
              );
            })}{' '}
            to apply the change.
          </>
        ) : account.locking_system ? (
          <>Waiting for the account's locking system ({account.locking_system}) to confirm the change.</>
        ) : (
          <>Being confirmed.</>
        )}
      </div>
    </>
  );
}
